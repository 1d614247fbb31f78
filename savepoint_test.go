package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// genEvents is record i of the test stream: keys spread over 30 values,
// event times 10ms apart with up to 300ms of disorder against a 200ms
// bound, so some events are late.
func genEvents(i int64, rng *rand.Rand) ev {
	return ev{Key: fmt.Sprintf("k%d", rng.IntN(30)), TS: i*10 - rng.Int64N(300)}
}

func windowJob(count int64, rate float64, p int, dir string, sink *memSink, opts ...weir.JobOption) *weir.Job {
	return windowJobOf(weir.Tumbling(time.Second), count, rate, p, dir, sink, opts...)
}

func windowJobOf(w weir.Windows, count int64, rate float64, p int, dir string, sink *memSink, opts ...weir.JobOption) *weir.Job {
	return windowJobHeld(w, count, rate, 0, p, dir, sink, opts...)
}

// windowJobHeld is windowJobOf whose source readers each stop after hold
// records (0: never), see weirtest.HoldAfter.
func windowJobHeld(w weir.Windows, count int64, rate float64, hold, p int, dir string, sink *memSink, opts ...weir.JobOption) *weir.Job {
	gen := weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 3, Rate: rate}, genEvents)
	if hold > 0 {
		gen = weirtest.HoldAfter(gen.(weir.RestorableSource[ev]), hold)
	}
	return windowJobFrom(w, gen, p, dir, sink, opts...)
}

// windowJobFrom is windowJobOf reading src: the generator's events, or a
// source wrapping them.
func windowJobFrom(w weir.Windows, gen weir.Source[ev], p int, dir string, sink *memSink, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("sp", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(20*time.Millisecond, dir)}, opts...)...)
	src := weir.FromSource(job, "gen", gen,
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }), weir.UID("gen"))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w), weir.Count[ev](), weir.UID("counts"))
	weir.To(weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
	}), weir.Sink[string](sink), weir.UID("sink"))
	return job
}

// Stop-with-savepoint at parallelism 2, restore at 1 and at 4: the output
// before the stop plus the output after the restore equals one
// uninterrupted run — for the aligned (tumbling), general (session) and
// sliding window operators, and for tumbling and session windows on
// PebbleState (process functions with their state in Pebble).
func TestStopWithSavepointAndRescale(t *testing.T) {
	const n = 30000
	type windowCase struct {
		w      weir.Windows
		pebble bool
	}
	for _, c := range []windowCase{{weir.Tumbling(time.Second), false}, {weir.Session(150 * time.Millisecond), false}, {weir.Sliding(500 * time.Millisecond), false},
		{weir.Tumbling(time.Second), true}, {weir.Session(150 * time.Millisecond), true}} {
		w := c.w
		var opts []weir.JobOption
		if c.pebble {
			opts = append(opts, weir.PebbleState(t.TempDir(), 4<<20))
		}
		ref := newMemSink()
		if err := windowJobOf(w, n, 0, 2, t.TempDir(), ref).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := ref.output()
		for _, p := range []int{1, 4} {
			first := newMemSink()
			// Each of the two readers stops after n/4 events, so the stop
			// comes before the input's end however slow the machine.
			job := windowJobHeld(w, -1, 100_000, n/4, 2, t.TempDir(), first, opts...)
			if c.pebble && len(job.HeapStateOperators()) != 0 {
				t.Fatalf("%v on Pebble: operators with heap state %q", w, job.HeapStateOperators())
			}
			done := make(chan error, 1)
			go func() { done <- job.Run(context.Background()) }()
			waitFor(t, "first results", func() bool { return len(first.output()) > 50 })
			sp := filepath.Join(t.TempDir(), "sp")
			path, err := job.Savepoint(context.Background(), sp, true)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
			}
			if got := job.StoppedWithSavepoint(); got != path {
				t.Fatalf("StoppedWithSavepoint() = %q, want %q", got, path)
			}
			before := len(first.output())
			if before >= len(want) {
				t.Fatalf("%v: the first job ran to the end (%d results): the savepoint came too late", w, before)
			}
			// The same sink: committing the savepoint's output again on
			// restore must be a no-op (idempotent commit).
			if err := windowJobOf(w, n, 0, p, t.TempDir(), first, append(opts, weir.RestoreFrom(path))...).Run(context.Background()); err != nil {
				t.Fatalf("%v: restore at p=%d: %v", w, p, err)
			}
			got := first.output()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%v (Pebble: %v) p=%d: %d results before the savepoint, %d in all; want %d as one run", w, c.pebble, p, before, len(got), len(want))
			}
		}
	}
}

func TestSavepointFromRemovedOperatorFails(t *testing.T) {
	dir := t.TempDir()
	sink := newMemSink()
	full := windowJob(2000, 0, 1, dir, sink)
	if err := full.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if sp := full.StoppedWithSavepoint(); sp != "" {
		t.Fatalf("a job that read all its input reports a stop into %q", sp)
	}
	// A job without the "counts" operator cannot take that state...
	job := weir.NewJob("other", weir.Checkpointing(time.Second, t.TempDir()), weir.RestoreFrom(latestDir(t, dir)))
	src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: 10, Seed: 3}, genEvents), weir.NoWatermarks[ev](), weir.UID("gen"))
	weir.To(weir.Map(src, func(e ev) string { return e.Key }), weir.Sink[string](sink), weir.UID("sink"))
	if err := job.Run(context.Background()); err == nil {
		t.Fatal("restoring state of a removed operator must fail without AllowNonRestoredState")
	}
	// ...unless told to drop it.
	job2 := weir.NewJob("other", weir.Checkpointing(time.Second, t.TempDir()), weir.RestoreFrom(latestDir(t, dir)), weir.AllowNonRestoredState())
	src2 := weir.FromSource(job2, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: 10, Seed: 3}, genEvents), weir.NoWatermarks[ev](), weir.UID("gen"))
	weir.To(weir.Map(src2, func(e ev) string { return e.Key }), weir.Sink[string](sink), weir.UID("sink"))
	if err := job2.Run(context.Background()); err != nil {
		t.Fatalf("with AllowNonRestoredState: %v", err)
	}
}

func latestDir(t *testing.T, dir string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "chk-*"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no checkpoint in %s", dir)
	}
	sort.Strings(m)
	return m[len(m)-1]
}
