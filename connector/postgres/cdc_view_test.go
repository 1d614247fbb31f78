package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/app/cdcview"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// viewConfig is a cdcview configuration on fresh tables and a fresh slot.
func viewConfig(t *testing.T, name string) cdcview.Config {
	c := cdcview.Config{DSN: dsn(t), Source: name + "_accounts", View: name + "_totals", Group: "owner", Value: "balance"}
	c.Slot = cdcConfig(t, c.Source).SlotName
	if err := cdcview.Setup(context.Background(), connect(t), c); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitView waits until the view equals the SELECT of the source.
func waitView(t *testing.T, c cdcview.Config, done <-chan error) int {
	t.Helper()
	conn := connect(t)
	var diff string
	var groups int
	ok := weirtest.Poll(2*time.Minute, func() bool {
		select {
		case err := <-done:
			t.Fatalf("the job ended: %v", err)
		default:
		}
		var err error
		diff, groups, err = cdcview.Diff(context.Background(), conn, c)
		if err != nil {
			t.Fatal(err)
		}
		return diff == ""
	})
	if !ok {
		t.Fatalf("the view never equalled the SELECT of the source: %s", diff)
	}
	return groups
}

// The view a CDC job keeps (CDC -> NormalizeChanges -> totals per owner
// -> UpsertChanges) equals SELECT owner, sum(balance), count(*) of the
// source after concurrent writers (inserts, updates, owners changing,
// deletes, transfers, aborted transactions) stop, the first of them
// writing while the job takes its snapshot; an owner whose rows are all
// deleted disappears from the view.
func TestCDCViewEqualsSelect(t *testing.T) {
	c := viewConfig(t, "view")
	ctx := context.Background()
	var st cdcview.Stats
	// Rows before the job: its snapshot.
	if err := cdcview.Writers(ctx, c.DSN, c, 2, 50, 1, &st); err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	werr := make(chan error, 1)
	go func() { werr <- cdcview.Writers(wctx, c.DSN, c, 4, 400, crashtest.Seed(t), &st) }()
	job := cdcview.Build(c, weir.Parallelism(2), weir.Checkpointing(50*time.Millisecond, t.TempDir()))
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- job.Run(jctx) }()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	groups := waitView(t, c, done)
	if groups < 4 {
		t.Fatalf("only %d owners", groups)
	}
	// Every row of one owner goes.
	conn := connect(t)
	gone := rows(t, conn, "SELECT owner FROM "+c.Source+" GROUP BY owner ORDER BY count(*) LIMIT 1")[0]
	sqlExec(t, conn, "DELETE FROM "+c.Source+" WHERE owner = $1", gone)
	waitView(t, c, done)
	wantRows(t, conn, fmt.Sprintf("SELECT count(*) FROM %s WHERE owner = '%s'", c.View, gone), "0")
	waitAcked(t, c)
	t.Logf("writers: %s; %d owners; %d checkpoints", &st, groups, job.Metrics().Checkpoints.Completed)
	cancel()
	<-done
}

// waitAcked waits until the slot is acknowledged beyond the server's
// current WAL position: a checkpoint taken while streaming has completed,
// and the slot follows the keepalives (nothing of the captured tables is
// written meanwhile, so WAL written elsewhere is released too).
func waitAcked(t *testing.T, c cdcview.Config) {
	t.Helper()
	conn := connect(t)
	other := table(t, conn, "(id int)")
	sqlExec(t, conn, "INSERT INTO "+other+" VALUES (1)")
	lsn := rows(t, conn, "SELECT pg_current_wal_lsn()")[0]
	var acked []string
	if !weirtest.Poll(time.Minute, func() bool {
		acked = rows(t, conn, "SELECT confirmed_flush_lsn, confirmed_flush_lsn >= $1::pg_lsn FROM pg_replication_slots WHERE slot_name = $2", lsn, c.Slot)
		return len(acked) == 1 && strings.HasSuffix(acked[0], "true")
	}) {
		t.Fatalf("slot %s not acknowledged beyond %s: %q", c.Slot, lsn, acked)
	}
}

// The same view, kept by a job that is killed with SIGKILL at random
// moments while the writers write, and restarted on its checkpoint
// directory each time (WEIR_CRASH_KILLS kills, default 10): once the
// writers stop, the restarted job brings the view to the SELECT of the
// source, the slot's position having been resumed exactly (a lost
// transaction or a doubled one would show in the sums).
func TestCDCViewKillAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	c := viewConfig(t, "crash")
	ctx := context.Background()
	bin := filepath.Join(t.TempDir(), "cdcjob")
	if err := crashtest.GoBuild(bin, "./internal/cdcjob"); err != nil {
		t.Fatalf("build cdcjob: %v", err)
	}
	ck := t.TempDir()
	args := []string{"--dsn", c.DSN, "--slot", c.Slot, "--source", c.Source, "--view", c.View, "--checkpoint-dir", ck}
	var st cdcview.Stats
	if err := cdcview.Writers(ctx, c.DSN, c, 2, 50, 1, &st); err != nil {
		t.Fatal(err)
	}
	// The first run takes the snapshot and catches up before the kills
	// begin (a checkpoint taken inside the initial snapshot cannot be
	// resumed; see docs/tables.md).
	start := func() (*exec.Cmd, chan error) {
		cmd := exec.Command(bin, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, stderr.String())
			}
			done <- err
		}()
		return cmd, done
	}
	cmd, done := start()
	waitView(t, c, done)
	waitAcked(t, c)
	cmd.Process.Kill()
	<-done

	rng := rand.New(rand.NewPCG(crashtest.Seed(t), 3))
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	werr := make(chan error, 1)
	wseed := rng.Uint64()
	go func() { werr <- cdcview.Writers(wctx, c.DSN, c, 3, 0, wseed, &st) }()
	n := crashtest.Kills(10)
	kills := 0
	for kills < n {
		window := time.Duration(100+rng.IntN(400)) * time.Millisecond
		killed, _, stderr, err := crashtest.Attempt(exec.Command(bin, args...), window)
		if !killed {
			t.Fatalf("the job ended by itself after %d kills: %v\n%s", kills, err, stderr)
		}
		kills++
	}
	stop()
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	cmd, done = start()
	groups := waitView(t, c, done)
	cmd.Process.Kill()
	<-done
	t.Logf("%d kills; writers: %s; the view of %d owners equals the SELECT", kills, &st, groups)
}
