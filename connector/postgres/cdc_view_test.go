package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/cdcview"
	"github.com/weirstream/weir/internal/crashtest"
	"github.com/weirstream/weir/internal/weirtest"
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
	t.Logf("writers: %s; %d owners; %d checkpoints", &st, groups, job.Metrics().Checkpoints.Completed)
	cancel()
	<-done
}
