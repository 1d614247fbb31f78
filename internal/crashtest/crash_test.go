package crashtest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func build(t *testing.T) string {
	t.Helper()
	return buildOnce(t, "./crashjob")
}

// built holds the programs the package's tests start: each is built once
// and shared by every test that starts it (a link of cmd/weir with -race
// takes about 13 CPU seconds, and three tests start crashjob, two weir).
// dir is set by TestMain, which removes it when the tests end.
var built struct {
	sync.Mutex
	dir  string
	bins map[string]string // package -> its program
}

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "crashtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "crashtest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	built.dir, built.bins = dir, map[string]string{}
	return m.Run()
}

// buildOnce builds the main package pkg (GoBuild) the first time a test
// asks for it; later calls return the same program. A failed build fails
// the test and is tried again by the next one.
func buildOnce(t *testing.T, pkg string) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if bin, ok := built.bins[pkg]; ok {
		return bin
	}
	bin := filepath.Join(built.dir, strconv.Itoa(len(built.bins)), filepath.Base(pkg))
	if err := os.Mkdir(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := GoBuild(bin, pkg); err != nil {
		os.RemoveAll(filepath.Dir(bin))
		t.Fatalf("build %s: %v", pkg, err)
	}
	built.bins[pkg] = bin
	return bin
}

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
		pace := pacer{out: filepath.Join(root, "out")}
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
			sigkilled, ourKill, stderr, err := attempt(t, bin, args(root, extra...), pace.window(time.Duration(40+rng.IntN(300))*time.Millisecond))
			if sigkilled {
				pace.killed()
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

// pacer paces the kills of a round's restarts by the job's progress: the
// kill window doubles after each kill after which no more part files were
// committed than before it (up to 16 times), and halves again after each
// that saw new ones. A restarted process that needs longer than the window
// to commit anything (a loaded machine, or the race detector in the
// process: a race-built crashjob takes about twice as long to start, and
// the test command builds it with -race, GoBuild) would otherwise be
// killed over and over without progress (with a race-built crashjob and
// without the pacer: 2,017 kills in one round, 6 min 49 s, load 6-8); so
// the window settles where about every other
// restart commits something, and the kills still fall at random moments
// of the restarts, the same number of them.
type pacer struct {
	out   string // the round's output directory
	parts int    // part files committed after the last kill that saw new ones
	shift int    // the window is the drawn one << shift
}

func (p *pacer) window(d time.Duration) time.Duration { return d << p.shift }

// killed records a kill of the round's job.
func (p *pacer) killed() {
	n := 0
	entries, _ := os.ReadDir(p.out) // not there yet: nothing committed
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "part-") {
			n++
		}
	}
	if n > p.parts {
		p.parts, p.shift = n, max(p.shift-1, 0)
	} else {
		p.shift = min(p.shift+1, 4)
	}
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
