package weir_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// windowJobTo is windowJob into any sink of strings.
func windowJobTo(count int64, rate float64, p int, dir string, sink weir.Sink[string], opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("sp", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(20*time.Millisecond, dir)}, opts...)...)
	src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 3, Rate: rate}, genEvents),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }), weir.UID("gen"))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev](), weir.UID("counts"))
	weir.To(weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
	}), sink, weir.UID("sink"))
	return job
}

// replaySafeSink is a memSink whose committer declares replays exact.
type replaySafeSink struct{ *memSink }

func (s replaySafeSink) Committer() weir.Committer { return replaySafeCommitter{s.memSink} }

type replaySafeCommitter struct{ *memSink }

func (replaySafeCommitter) ReplaySafe() bool { return true }

// A sink whose committer is a ReplaySafeCommitter lets the job fall back
// past committed output (the corrupt newest checkpoint is skipped) without
// AllowDuplicateOutput.
func TestReplaySafeCommitterAllowsFallback(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	cks := checkpointsOf(t, dir, sink)
	newest, previous := cks[len(cks)-1], cks[len(cks)-2]
	flipStateFile(t, newest)
	job := windowJobTo(20000, 0, 2, dir, replaySafeSink{sink})
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("replay-safe sink: %v", err)
	}
	if got := job.RestoredFrom(); got != previous {
		t.Fatalf("restored %q, want %q", got, previous)
	}
}

// A job restored with RestoreFrom whose commit of the savepoint's output
// fails (the external system is down) restarts from the savepoint again:
// the record of that commit does not make it refuse to "start empty".
func TestRestoreFromRetriesTheSavepointCommit(t *testing.T) {
	first := newMemSink()
	job := windowJob(-1, 100_000, 2, t.TempDir(), first)
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	waitFor(t, "first results", func() bool { return len(first.output()) > 50 })
	sp, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	s := &flakyCommitter{memSink: first}
	second := windowJobTo(30000, 0, 2, t.TempDir(), s, weir.RestoreFrom(sp))
	s.job = second
	if err := second.Run(context.Background()); err != nil {
		t.Fatalf("restore after a failed savepoint commit: %v", err)
	}
	if n := second.Metrics().Checkpoints.Restarts; n != 1 {
		t.Fatalf("%d restarts, want 1", n)
	}
}
