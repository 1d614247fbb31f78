package postgres_test

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir/connector/postgres/internal/pgjob"
	"github.com/weirstream/weir/internal/testing/crashtest"
)

// checkPartial checks what a killed job left visible: every window row
// (final sums, written once) is one of the reference run's, and so is every
// count row of the transactional sink (no duplicate is ever visible, not
// only at the end); the upsert sink's counts never go back (a replay of
// older updates is skipped, the table does not return to an older state).
//
// It returns a measure of the progress the job has committed (rows and
// counts), so the caller can tell an attempt that got nowhere.
func checkPartial(t *testing.T, conn *pgx.Conn, mode, prefix string, want []string, counts map[string]int64) int64 {
	t.Helper()
	got, _, err := pgjob.Dump(context.Background(), conn, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range got {
		if mode == "upsert" && strings.HasPrefix(r, "count ") {
			f := strings.Fields(r)
			n, _ := strconv.ParseInt(f[2], 10, 64)
			if n < counts[f[1]] {
				t.Fatalf("%s: the count of %s went back from %d to %d", prefix, f[1], counts[f[1]], n)
			}
			counts[f[1]] = n
			continue
		}
		rows = append(rows, r)
	}
	if extra := crashtest.Minus(rows, want); len(extra) > 0 {
		t.Fatalf("%s: after a kill, %d rows that the reference run does not have (first %q)", prefix, len(extra), extra[:min(5, len(extra))])
	}
	progress := int64(len(rows))
	for _, n := range counts {
		progress += n
	}
	return progress
}

func crashKills() int { return crashtest.Kills(20) }

// TestKillAndRestart kills a job writing to PostgreSQL with SIGKILL at
// random moments, and at the failpoints of the checkpoint protocol (after
// a state file, after all of them, and between the checkpoint's metadata
// and the sinks' commit), restarting it each time, until it completes; at
// least WEIR_CRASH_KILLS (default 20) kills per sink mode. The tables must
// then equal those of a run without failures, row for row, and the staging
// tables must be empty.
func TestKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	d := dsn(t)
	bin := filepath.Join(t.TempDir(), "crashjob")
	if err := crashtest.GoBuild(bin, "./internal/crashjob"); err != nil {
		t.Fatalf("build crashjob: %v", err)
	}
	for _, mode := range []string{"upsert", "tx"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			killAndRestart(t, bin, d, mode)
		})
	}
}

func killAndRestart(t *testing.T, bin, dsn, mode string) {
	ctx := context.Background()
	conn := connect(t)
	// The input: the embedded log's topic "events" (log -> keyed windows
	// and a keyed counter -> PostgreSQL).
	logDir := t.TempDir()
	if err := pgjob.Fill(logDir, 6000); err != nil {
		t.Fatal(err)
	}
	args := func(prefix, ck string, extra ...string) []string {
		return append([]string{"--dsn", dsn, "--mode", mode, "--prefix", prefix, "--checkpoint-dir", ck,
			"--events", "6000", "--rate", "3000", "--interval", "50ms", "--log-dir", logDir}, extra...)
	}
	dump := func(prefix string) []string {
		t.Helper()
		rows, staged, err := pgjob.Dump(ctx, conn, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if staged != 0 {
			t.Errorf("%s: %d rows left in the staging tables", prefix, staged)
		}
		return rows
	}
	ref := "crashref_" + mode
	if err := pgjob.Setup(ctx, conn, ref, mode); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, args(ref, t.TempDir(), "--rate", "0")...).CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := dump(ref)
	if len(want) < 500 {
		t.Fatalf("the reference run wrote only %d rows", len(want))
	}

	rng := rand.New(rand.NewPCG(crashtest.Seed(t), 2))
	n := crashKills()
	total, failpoints, rounds := 0, 0, 0
	deadline := time.Now().Add(10 * time.Minute)
	start := time.Now()
	// Rounds of kill-and-restart until the job completes; more rounds on
	// fresh tables and checkpoints until n kills have happened in all.
	for total < n {
		rounds++
		prefix := "crash" + strconv.Itoa(rounds) + "_" + mode
		if err := pgjob.Setup(ctx, conn, prefix, mode); err != nil {
			t.Fatal(err)
		}
		ck := t.TempDir()
		counts := map[string]int64{} // upsert: the counts seen after the last kill
		// On a loaded machine a restarted process may need longer than the
		// kill window to commit anything: each attempt that committed
		// nothing doubles the window (up to 16x), so the job always gets
		// through however slow the machine, and kills stay frequent on a
		// fast one.
		var progress int64 = -1
		stalls := 0
		for attempt := 0; ; attempt++ {
			if time.Now().After(deadline) {
				t.Fatalf("out of time after %d kills", total)
			}
			var extra []string
			if attempt%5 == 2 {
				// A failpoint: the process kills itself inside the protocol.
				stage := []string{"state-file", "files-written", "complete"}[rng.IntN(3)]
				extra = append(extra, "--failpoint", stage, "--failpoint-checkpoint", strconv.Itoa(1+rng.IntN(3)))
			}
			// The moment of the kill (not a wait for a result).
			window := time.Duration(50+rng.IntN(300)) * time.Millisecond << min(stalls, 4)
			killed, ourKill, stderr, err := crashtest.Attempt(exec.Command(bin, args(prefix, ck, extra...)...), window)
			if killed {
				total++
				if !ourKill {
					failpoints++
				}
				if p := checkPartial(t, conn, mode, prefix, want, counts); p == progress {
					stalls++
				} else {
					progress, stalls = p, 0
				}
				continue
			}
			if err != nil {
				t.Fatalf("round %d attempt %d failed: %v\n%s", rounds, attempt, err, stderr)
			}
			break // completed
		}
		if d := pgjob.Diff(want, dump(prefix)); d != "" {
			t.Fatalf("round %d, after %d kills: %s", rounds, total, d)
		}
	}
	t.Logf("%s: %d kills (%d at failpoints) over %d rounds in %v; each round's tables equal the failure-free run's %d rows",
		mode, total, failpoints, rounds, time.Since(start).Round(time.Millisecond), len(want))
}
