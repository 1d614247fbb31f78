package weir_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
)

// flakyCommitter fails its first commit, as when the external system is
// down at that moment, and notes whether the job had completed a
// checkpoint by then.
type flakyCommitter struct {
	*memSink
	job        *weir.Job
	once       atomic.Bool
	duringInit bool
}

func (s *flakyCommitter) Committer() weir.Committer { return s }
func (s *flakyCommitter) Commit(ctx context.Context, c []byte) error {
	if s.once.CompareAndSwap(false, true) {
		s.duringInit = s.job.Metrics().Checkpoints.Completed == 0
		return errors.New("the database is down")
	}
	return s.memSink.Commit(ctx, c)
}

// TestRestoreCommitFailureIsRetried: a process started on a checkpoint
// directory commits the restored checkpoint's output first; if that fails
// (the external system is down), the restart policy retries the attempt,
// unlike a state mismatch, which is permanent.
func TestRestoreCommitFailureIsRetried(t *testing.T) {
	evs := randomEvents(newRand(9), 20000, 200, 3000)
	want := newMemSink()
	var f atomic.Bool
	if err := buildCounting(evs, 2, t.TempDir(), want, 0, &f).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	out := newMemSink()
	var failed atomic.Bool
	// The first process fails for good after some checkpoints.
	first := buildCounting(evs, 2, dir, out, evs[15000].TS, &failed, weir.Restarts(weir.RestartPolicy{MaxFailures: 0}))
	if err := first.Run(context.Background()); err == nil {
		t.Fatal("the first process was meant to fail")
	}
	if first.Metrics().Checkpoints.Completed == 0 {
		t.Fatal("the first process completed no checkpoint")
	}
	s := &flakyCommitter{memSink: out}
	second := buildCounting(evs, 2, dir, s, 0, &f)
	s.job = second
	if err := second.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !s.duringInit {
		t.Fatal("the failed commit was not the restore's")
	}
	if n := second.Metrics().Checkpoints.Restarts; n != 1 {
		t.Fatalf("%d restarts, want 1 (after the failed restore commit)", n)
	}
	if got, w := out.output(), want.output(); fmt.Sprint(got) != fmt.Sprint(w) {
		t.Fatalf("output differs from a failure-free run: %d vs %d records", len(got), len(w))
	}
}
