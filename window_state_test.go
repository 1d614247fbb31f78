package weir_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// stateWindowCase is a window aggregation that runs, on PebbleState, on
// process functions with its state in Pebble.
type stateWindowCase struct {
	name     string
	w        weir.Windows
	lateness time.Duration
	retract  bool
	trig     *weir.WindowTrigger // nil: the default
}

var stateWindowCases = []stateWindowCase{
	{"tumbling", weir.Tumbling(time.Second), 0, false, nil},
	{"tumbling-offset-lateness", weir.Tumbling(time.Second).WithOffset(300 * time.Millisecond), 500 * time.Millisecond, false, nil},
	{"tumbling-lateness-retract", weir.Tumbling(time.Second), 2 * time.Second, true, nil},
	{"hopping", weir.Hopping(3*time.Second, time.Second), 0, false, nil},
	{"hopping-lateness", weir.Hopping(3*time.Second, time.Second), 300 * time.Millisecond, false, nil},
	{"session", weir.Session(300 * time.Millisecond), 0, false, nil},
	{"session-lateness", weir.Session(300 * time.Millisecond), time.Second, false, nil},
	{"session-lateness-retract", weir.Session(300 * time.Millisecond), 2 * time.Second, true, nil},
}

// stateWindowRun is what a job of runStateWindows output.
type stateWindowRun struct {
	results []string // sorted
	late    []string // sorted
	dropped int64
	heapOps []string
}

// runStateWindows runs c's window over evs with several aggregations at
// once (Count with LateEvents, Count alone, Reduce, Avg, CountDistinct,
// Max: integer, struct, map and Opt accumulators).
func runStateWindows(t *testing.T, evs []ev, c stateWindowCase, p, batch int, opts ...weir.JobOption) stateWindowRun {
	t.Helper()
	job := weir.NewJob("state-windows", append([]weir.JobOption{weir.Parallelism(p), weir.BatchSize(batch)}, opts...)...)
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	var wopts []weir.WindowOption
	if c.lateness > 0 {
		wopts = append(wopts, weir.AllowedLateness(c.lateness))
	}
	if c.retract {
		wopts = append(wopts, weir.Retracting())
	}
	if c.trig != nil {
		wopts = append(wopts, weir.Trigger(*c.trig))
	}
	ws := weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), c.w, wopts...)
	var outs []*weir.Stream[string]
	show := func(name string) func(weir.WindowResult[string, string]) string {
		return func(r weir.WindowResult[string, string]) string {
			return fmt.Sprintf("%s %v %s %s %s", name, r.Kind, r.Key, span(r.Start, r.End), r.Value)
		}
	}
	str := func(v any) string { return fmt.Sprint(v) }
	counts := weir.Aggregate(ws, weir.Count[ev](), weir.Name("count"))
	outs = append(outs,
		weir.Map(weir.Map(counts, asString[int64](str)), show("count")),
		weir.Map(weir.Map(weir.Aggregate(ws, weir.Count[ev](), weir.Name("count-keys")), asString[int64](str)), show("count-keys")),
		weir.Map(weir.Map(weir.Reduce(ws, func(a, b ev) ev { return ev{Key: a.Key, TS: a.TS + b.TS} }, weir.Name("reduce")), asString[ev](str)), show("reduce")),
		weir.Map(weir.Map(weir.Aggregate(ws, weir.Avg(func(e ev) int64 { return e.TS }), weir.Name("avg")), asString[float64](str)), show("avg")),
		weir.Map(weir.Map(weir.Aggregate(ws, weir.CountDistinct(func(e ev) int64 { return e.TS % 5 }), weir.Name("distinct")), asString[int64](str)), show("distinct")),
		weir.Map(weir.Map(weir.Aggregate(ws, weir.Max(func(e ev) int64 { return e.TS }), weir.Name("max")), asString[int64](str)), show("max")))
	results := weir.Collect(weir.Union(outs[0], outs[1:]...))
	late := weir.Collect(weir.Map(weir.LateEvents[ev](counts), func(l weir.LateEvent[string, ev]) string {
		return fmt.Sprintf("late %s@%d missed %s wm=%d", l.Key, l.Timestamp.UnixMilli(), span(l.Window.Start, l.Window.End), l.Watermark.UnixMilli())
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("%s p=%d: %v", c.name, p, err)
	}
	r := stateWindowRun{results: results.Items(), late: late.Items(), dropped: job.Metrics().Sum(lateDropped), heapOps: job.HeapStateOperators()}
	slices.Sort(r.results)
	slices.Sort(r.late)
	return r
}

// asString renders a window result's value as a string.
func asString[V any](f func(any) string) func(weir.WindowResult[string, V]) weir.WindowResult[string, string] {
	return func(r weir.WindowResult[string, V]) weir.WindowResult[string, string] {
		return weir.WindowResult[string, string]{Key: r.Key, Start: r.Start, End: r.End, Value: f(r.Value), Kind: r.Kind}
	}
}

// Aggregate and Reduce over tumbling, hopping and session windows, with
// and without allowed lateness, accumulating and retracting, give on
// PebbleState (process functions, state in Pebble) what they give on the
// heap (weir's window operators): the same results, late events and
// drops, at parallelism 1 and 3; and on Pebble no operator is left with
// heap state.
func TestStateWindowsSameAsHeap(t *testing.T) {
	r := newRand(37)
	evs := randomEvents(r, 3000, 200, 3000)
	for i, c := range stateWindowCases {
		p := 1 + 2*(i%2)
		batch := []int{7, 64}[i/2%2]
		heap := runStateWindows(t, evs, c, p, batch)
		pebble := runStateWindows(t, evs, c, p, batch, weir.PebbleState(t.TempDir(), 8<<20))
		if len(heap.results) < 100 || heap.dropped == 0 || len(heap.late) == 0 {
			t.Fatalf("%s: a weak case: %d results, %d dropped, %d late events", c.name, len(heap.results), heap.dropped, len(heap.late))
		}
		if c.lateness > 0 && !slices.ContainsFunc(heap.results, func(s string) bool { return strings.Contains(s, " +U ") }) {
			t.Fatalf("%s: no late firing", c.name)
		}
		checkSameAsHeap(t, c.name, p, heap, pebble)
		if len(heap.heapOps) == 0 {
			t.Errorf("%s: on the heap backend, HeapStateOperators names no window operator", c.name)
		}
	}
}

// checkSameAsHeap checks that a window job's run on Pebble gave the heap
// run's results, late events and drop count, and that on Pebble no
// operator kept its state on the heap.
func checkSameAsHeap(t *testing.T, name string, p int, heap, pebble stateWindowRun) {
	t.Helper()
	if !slices.Equal(heap.results, pebble.results) {
		t.Errorf("%s p=%d: results on Pebble differ from the heap's (%d vs %d):\n%s", name, p, len(pebble.results), len(heap.results), firstDiff(heap.results, pebble.results))
	}
	if !slices.Equal(heap.late, pebble.late) {
		t.Errorf("%s p=%d: late events on Pebble differ from the heap's:\n%s", name, p, firstDiff(heap.late, pebble.late))
	}
	if heap.dropped != pebble.dropped {
		t.Errorf("%s p=%d: %d dropped on Pebble, %d on the heap", name, p, pebble.dropped, heap.dropped)
	}
	if len(pebble.heapOps) != 0 {
		t.Errorf("%s: on Pebble, operators with heap state: %q", name, pebble.heapOps)
	}
}

// A window whose accumulator cannot be stored fails a job on PebbleState
// before it starts, naming the operator; on the heap it runs.
func TestStateWindowUnencodableAccumulator(t *testing.T) {
	type acc struct {
		N    int64
		Done chan struct{} // no encoding
	}
	agg := weir.AggregateFuncs[ev, acc, int64]{
		AddFn:    func(a acc, _ ev) acc { a.N++; return a },
		MergeFn:  func(a, b acc) acc { return acc{N: a.N + b.N} },
		ResultFn: func(a acc) int64 { return a.N },
	}
	run := func(opts ...weir.JobOption) error {
		job := weir.NewJob("chan-acc", opts...)
		src := weir.FromSource(job, "events", weir.SliceSource([]ev{{"a", 1}, {"a", 2}}),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), agg, weir.Name("chan-counts")))
		return job.Run(context.Background())
	}
	if err := run(); err != nil {
		t.Fatalf("on the heap: %v", err)
	}
	err := run(weir.PebbleState(t.TempDir(), 4<<20))
	if err == nil || !strings.Contains(err.Error(), `"chan-counts"`) || !strings.Contains(err.Error(), "accumulator") {
		t.Fatalf("on Pebble: %v; want an error naming the operator and its accumulator", err)
	}
}

// A window aggregation's state does not move between the backends: a
// savepoint of its windows on one restores on the other with an error that
// says which backend to restore with, at once (not after every restart).
func TestStateWindowRestoreOtherBackendFails(t *testing.T) {
	w := weir.Tumbling(time.Second)
	for _, from := range []string{"heap", "pebble"} {
		backend := func(name string) []weir.JobOption {
			if name == "pebble" {
				return []weir.JobOption{weir.PebbleState(t.TempDir(), 4<<20)}
			}
			return nil
		}
		first := newMemSink()
		job := windowJobHeld(w, -1, 100_000, 2000, 2, t.TempDir(), first, backend(from)...)
		done := make(chan error, 1)
		go func() { done <- job.Run(context.Background()) }()
		waitFor(t, "first results", func() bool { return len(first.output()) > 50 })
		path, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
		if err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		to, want := "pebble", "restore it with HeapState"
		if from == "pebble" {
			to, want = "heap", "restore it with PebbleState"
		}
		job = windowJobOf(w, 30000, 0, 2, t.TempDir(), first, append(backend(to), weir.RestoreFrom(path))...)
		err = job.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), want) || !weir.IsPermanent(err) {
			t.Fatalf("a savepoint on %s restored on %s: %v; want a permanent error saying %q", from, to, err, want)
		}
		if n := job.Metrics().Checkpoints.Restarts; n != 0 {
			t.Fatalf("%d restarts before the error", n)
		}
	}
}

// A window aggregation on Pebble with changelog checkpoints (its writes
// logged per checkpoint), checkpointed often, failing once and restarting
// from the latest checkpoint: the output of a plain heap run.
func TestStateWindowChangelogRestart(t *testing.T) {
	evs := randomEvents(newRand(5), 8000, 200, 3000)
	c := metaConfig{kind: "window", p: 2, batch: 64, pebble: true, ckEvery: 500, failAt: 5000}
	want := runMeta(t, evs, c.reference())
	got := runMeta(t, evs, c, weir.StateChangelog(0))
	if len(want) < 100 || !slices.Equal(got, want) {
		t.Fatalf("%d records with changelog checkpoints, %d on the heap:\n%s", len(got), len(want), firstDiff(want, got))
	}
}
