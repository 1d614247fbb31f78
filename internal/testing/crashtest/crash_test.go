package crashtest

import (
	"bufio"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func build(t *testing.T) string {
	t.Helper()
	return Build(t, "./crashjob")
}

// TestMain builds each program the tests start once for all of them
// (Build), removed at the end.
func TestMain(m *testing.M) { os.Exit(Main(m)) }

// output reads the committed output: every line of every part-* file,
// sorted (subtasks interleave differently from run to run). Hidden files
// left behind are an error: the final attempt must have cleaned up.
func output(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("hidden file left behind: %s", e.Name())
			continue
		}
		if !strings.HasPrefix(e.Name(), "part-") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
	}
	slices.Sort(lines)
	return lines
}

func args(root string, extra ...string) []string {
	return append([]string{
		"--checkpoint-dir", filepath.Join(root, "ck"), "--output", filepath.Join(root, "out"),
		"--events", "30000", "--rate", "4000", "--interval", "100ms",
	}, extra...)
}

func kills() int { return Kills(50) }

// TestKillAndRestart kills the job with SIGKILL at random moments, and at
// the failpoints inside the checkpoint protocol (after the first state
// file, after all state files, and between the metadata and the sinks'
// commit), restarting it each time;
// then lets it finish. The committed output must equal that of a run
// without failures, record for record.
func TestKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	bin := build(t)
	refDir := t.TempDir()
	ref := exec.Command(bin, args(refDir, "--rate", "0")...)
	if out, err := ref.CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := output(t, filepath.Join(refDir, "out"))
	if len(want) < 100 {
		t.Fatalf("reference output has only %d lines", len(want))
	}

	rng := rand.New(rand.NewPCG(Seed(t), 1))
	n := kills()
	total, failpoints, rounds := 0, 0, 0
	start := time.Now()
	deadline := start.Add(30 * time.Minute)
	// Rounds of kill-and-restart until the job completes; more rounds on
	// fresh directories until n kills have happened in all.
	for total < n {
		rounds++
		root := t.TempDir()
		pace := Pacer{Progress: func() int64 { return PartFiles(filepath.Join(root, "out")) }}
		for a := 0; ; a++ {
			if time.Now().After(deadline) {
				t.Fatalf("out of time after %d kills", total)
			}
			extra := []string{}
			if a%7 == 3 {
				// A failpoint: the process kills itself inside the protocol.
				stage := []string{"state-file", "files-written", "complete"}[rng.IntN(3)]
				extra = append(extra, "--failpoint", stage, "--failpoint-checkpoint", strconv.Itoa(1+rng.IntN(3)))
			}
			// The moment of the kill (not a wait for a result).
			sigkilled, ourKill, stderr, err := attempt(t, bin, args(root, extra...), pace.Window(time.Duration(40+rng.IntN(300))*time.Millisecond))
			if sigkilled {
				pace.Killed()
				total++
				if !ourKill {
					failpoints++ // it killed itself inside the checkpoint protocol
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d attempt %d failed: %v\n%s", rounds, a, err, stderr)
			}
			break // completed
		}
		checkOutput(t, rounds, total, want, output(t, filepath.Join(root, "out")))
	}
	t.Logf("%d kills (%d at failpoints) over %d rounds in %v; each round's output equals the failure-free run's %d records",
		total, failpoints, rounds, time.Since(start).Round(time.Millisecond), len(want))
}

// attempt is Attempt of bin with args, failing the test if it cannot start.
func attempt(t *testing.T, bin string, args []string, killAfter time.Duration) (sigkilled, ourKill bool, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	sigkilled, ourKill, stderr, err = Attempt(cmd, killAfter)
	if cmd.Process == nil {
		t.Fatal(err)
	}
	return sigkilled, ourKill, stderr, err
}

// checkOutput fails the test unless got (the committed output of a round,
// sorted) equals want, record for record.
func checkOutput(t *testing.T, round, kills int, want, got []string) {
	t.Helper()
	if len(got) != len(want) {
		missing, extra := Minus(want, got), Minus(got, want)
		t.Fatalf("round %d, after %d kills: %d output records, want %d; missing %d (first %q), unexpected %d (first %q)",
			round, kills, len(got), len(want), len(missing), first(missing, 5), len(extra), first(extra, 5))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("round %d, after %d kills: record %d is %q, want %q", round, kills, i, got[i], want[i])
		}
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }
