package weir_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// mbRun is one run of the window-count job of the microbatch tests.
type mbRun struct {
	p     int
	every int // > 0: an epoch (a checkpoint) after every `every` records
	// failAt >= 0: fail once, at the record of that index.
	failAt int64
	opts   []weir.JobOption
}

// mbResult is what a run produced: the committed output, the events
// dropped as late, and how many records the map saw (replays included).
type mbResult struct {
	out         []string
	dropped     int64
	mapped      int64
	failedAfter int64 // records the map saw before the failure
	job         *weir.Job
}

// runWindowCounts counts evs per key in tumbling windows of 1s under a
// 200ms bounded-out-of-orderness watermark into a two-phase-commit sink.
func runWindowCounts(t *testing.T, evs []ev, r mbRun) mbResult {
	t.Helper()
	var res mbResult
	sink := newMemSink()
	job := weir.NewJob("mb", append([]weir.JobOption{weir.Parallelism(r.p),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 3, Interval: time.Hour})}, r.opts...)...)
	var in weir.Source[ev] = weir.SliceSource(evs)
	if r.every > 0 {
		in = weirtest.CheckpointEvery(func() *weir.Job { return job }, in.(weir.RestorableSource[ev]), r.every)
	}
	src := weir.FromSource(job, "events", in,
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	var mapped atomic.Int64
	var failed atomic.Bool
	src = weir.Map(src, func(e ev) ev {
		if n := mapped.Add(1) - 1; n == r.failAt && failed.CompareAndSwap(false, true) {
			res.failedAfter = n
			panic("injected failure")
		}
		return e
	})
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev](), weir.UID("counts"))
	weir.To(weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
	}), weir.Sink[string](sink), weir.UID("sink"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if r.failAt >= 0 && !failed.Load() {
		t.Fatal("the failure was not injected")
	}
	res.out, res.job, res.mapped = sink.output(), job, mapped.Load()
	res.dropped = job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 { return o.LateDropped })
	return res
}

// TestMicrobatchEqualsContinuous: on a seeded input whose disorder stays
// within the watermark's bound, microbatch execution commits exactly the
// window counts of continuous execution, for epochs cut at exact places
// of the input (97, 1000 and 4000 records, with checkpoints) and for epochs
// of 1ms of processing time without Checkpointing (wherever they fall, the
// result must not change). A watermark raised inside an epoch past events
// still to come, or an epoch lost or committed twice, changes the counts.
func TestMicrobatchEqualsContinuous(t *testing.T) {
	evs := randomEvents(newRand(16), 6000, 150, 150)
	want := runWindowCounts(t, evs, mbRun{p: 2, failAt: -1})
	if len(want.out) == 0 || want.dropped != 0 {
		t.Fatalf("continuous: %d results, %d dropped", len(want.out), want.dropped)
	}
	for _, every := range []int{97, 1000, 4000} {
		got := runWindowCounts(t, evs, mbRun{p: 2, every: every, failAt: -1,
			opts: []weir.JobOption{weir.Microbatch(time.Hour), weir.Checkpointing(time.Hour, t.TempDir())}})
		if fmt.Sprint(got.out) != fmt.Sprint(want.out) || got.dropped != 0 {
			t.Fatalf("epochs of %d records: %d results (%d dropped), continuous %d", every, len(got.out), got.dropped, len(want.out))
		}
		if n, min := got.job.Metrics().Checkpoints.Completed, int64(len(evs)/every); n < min {
			t.Fatalf("epochs of %d records: %d epochs committed, want at least %d", every, n, min)
		}
	}
	got := runWindowCounts(t, evs, mbRun{p: 2, failAt: -1, opts: []weir.JobOption{weir.Microbatch(time.Millisecond)}})
	if fmt.Sprint(got.out) != fmt.Sprint(want.out) || got.dropped != 0 {
		t.Fatalf("epochs of 1ms in memory: %d results (%d dropped), continuous %d", len(got.out), got.dropped, len(want.out))
	}
	if got.job.Metrics().Checkpoints.Completed < 1 {
		t.Fatal("epochs of 1ms in memory: no epoch ended")
	}
}

// TestMicrobatchLateBeyondTheBound: with disorder beyond the bound,
// microbatch drops no more events than continuous execution (the
// watermark an event is judged by is the previous epoch's, never ahead of
// the continuous one), and fewer the longer the epochs.
func TestMicrobatchLateBeyondTheBound(t *testing.T) {
	evs := randomEvents(newRand(17), 6000, 150, 3000)
	cont := runWindowCounts(t, evs, mbRun{p: 1, failAt: -1})
	if cont.dropped == 0 {
		t.Fatal("continuous: nothing late; the test needs late events")
	}
	prev := cont.dropped
	for _, every := range []int{100, 1000, 3000} {
		got := runWindowCounts(t, evs, mbRun{p: 1, every: every, failAt: -1,
			opts: []weir.JobOption{weir.Microbatch(time.Hour), weir.Checkpointing(time.Hour, t.TempDir())}})
		if got.dropped > prev {
			t.Fatalf("epochs of %d records dropped %d, more than %d (continuous %d)", every, got.dropped, prev, cont.dropped)
		}
		prev = got.dropped
	}
	if prev >= cont.dropped {
		t.Fatalf("epochs of 3000 records dropped %d, continuous %d: want fewer", prev, cont.dropped)
	}
}

// TestMicrobatchRecoversAtAnEpochBoundary fails a microbatch job once in
// the middle of an epoch: it restarts from the last committed epoch (the
// map sees the input again from a multiple of the epoch's length), and the
// committed output is that of a run without failure, exactly once.
func TestMicrobatchRecoversAtAnEpochBoundary(t *testing.T) {
	evs := randomEvents(newRand(18), 20000, 150, 150)
	want := runWindowCounts(t, evs, mbRun{p: 2, failAt: -1})
	const every = 500
	got := runWindowCounts(t, evs, mbRun{p: 2, every: every, failAt: 7250,
		opts: []weir.JobOption{weir.Microbatch(time.Hour), weir.Checkpointing(time.Hour, t.TempDir())}})
	if n := got.job.Metrics().Checkpoints.Restarts; n != 1 {
		t.Fatalf("%d restarts, want 1", n)
	}
	// The map saw failedAfter records, the failing one, then the input
	// from the restored epoch's start.
	restart := got.failedAfter + 1 + int64(len(evs)) - got.mapped
	if restart <= 0 || restart%every != 0 || restart > got.failedAfter {
		t.Fatalf("restarted at record %d (failed at %d): not an epoch boundary of %d records", restart, got.failedAfter, every)
	}
	if fmt.Sprint(got.out) != fmt.Sprint(want.out) {
		t.Fatalf("output after a failure differs from a run without: %d vs %d results", len(got.out), len(want.out))
	}
}
