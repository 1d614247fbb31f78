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
	"github.com/weirstream/weir/internal/testing/weirtest"
)

func trigger(t weir.WindowTrigger) *weir.WindowTrigger { return &t }

// stateTriggerCases are window aggregations with other triggers than the
// default, and over Global windows, which on PebbleState run on process
// functions with their state in Pebble (window_state_trigger.go).
// Processing-time triggers are in internal/engine's
// TestTrigStateWindowMatchesHeap, with an injected clock.
var stateTriggerCases = []stateWindowCase{
	{"tumbling-count", weir.Tumbling(time.Second), 0, false, trigger(weir.CountTrigger(5))},
	{"tumbling-count-lateness-retract", weir.Tumbling(time.Second), time.Second, true, trigger(weir.CountTrigger(3))},
	{"hopping-count-purging-lateness", weir.Hopping(3*time.Second, time.Second), 300 * time.Millisecond, false, trigger(weir.CountTrigger(3).Purging())},
	{"tumbling-purging-lateness-retract", weir.Tumbling(time.Second), 2 * time.Second, true, trigger(weir.EventTimeTrigger().Purging())},
	{"session-count-lateness-retract", weir.Session(300 * time.Millisecond), time.Second, true, trigger(weir.CountTrigger(4))},
	{"session-count-purging", weir.Session(300 * time.Millisecond), 0, false, trigger(weir.CountTrigger(2).Purging())},
	{"global-count", weir.Global(), 0, false, trigger(weir.CountTrigger(7))},
	{"global-count-purging-retract", weir.Global(), 0, true, trigger(weir.CountTrigger(5).Purging())},
	{"global-count-retract", weir.Global(), 0, true, trigger(weir.CountTrigger(9))},
}

// Aggregate and Reduce with count triggers (accumulating, purging,
// retracting), a purging event-time trigger, and over Global windows, give
// on PebbleState what they give on the heap (weir's general window
// operator): the same results, late events and drops, at parallelism 1
// and 3; and on Pebble no operator is left with heap state.
func TestStateWindowTriggersSameAsHeap(t *testing.T) {
	r := newRand(41)
	evs := randomEvents(r, 3000, 200, 3000)
	for i, c := range stateTriggerCases {
		p := 1 + 2*(i%2)
		batch := []int{7, 64}[i/2%2]
		heap := runStateWindows(t, evs, c, p, batch)
		pebble := runStateWindows(t, evs, c, p, batch, weir.PebbleState(t.TempDir(), 8<<20))
		global := strings.HasPrefix(c.name, "global")
		if len(heap.results) < 100 || !global && (heap.dropped == 0 || len(heap.late) == 0) {
			t.Fatalf("%s: a weak case: %d results, %d dropped, %d late events", c.name, len(heap.results), heap.dropped, len(heap.late))
		}
		checkSameAsHeap(t, c.name, p, heap, pebble)
		if len(heap.heapOps) == 0 {
			t.Errorf("%s: on the heap backend, HeapStateOperators names no window operator", c.name)
		}
	}
}

// windowJobWith is windowJobFrom (savepoint_test.go) with window options,
// its results showing their kind.
func windowJobWith(w weir.Windows, wopts []weir.WindowOption, gen weir.Source[ev], p int, dir string, sink *memSink, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("sp", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(20*time.Millisecond, dir)}, opts...)...)
	src := weir.FromSource(job, "gen", gen,
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }), weir.UID("gen"))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w, wopts...), weir.Count[ev](), weir.UID("counts"))
	weir.To(weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("%s@%d=%d %v", r.Key, r.Start.UnixMilli(), r.Value, r.Kind)
	}), weir.Sink[string](sink), weir.UID("sink"))
	return job
}

// Window aggregations on PebbleState with other triggers and over Global
// (and Sliding) windows: stopped with a savepoint at parallelism 2 and
// restored at 1 and at 3, the output before the stop and after the
// restore is that of one uninterrupted run on the heap.
func TestStateWindowTriggersRescale(t *testing.T) {
	n := 30000
	if raceEnabled {
		n = 16000 // 32 s of the test command's root package at 30,000
	}
	type windowCase struct {
		w     weir.Windows
		wopts []weir.WindowOption
	}
	for _, c := range []windowCase{
		{weir.Tumbling(time.Second), []weir.WindowOption{weir.Trigger(weir.CountTrigger(7)), weir.AllowedLateness(time.Second), weir.Retracting()}},
		{weir.Session(150 * time.Millisecond), []weir.WindowOption{weir.Trigger(weir.CountTrigger(3).Purging()), weir.AllowedLateness(300 * time.Millisecond)}},
		{weir.Global(), []weir.WindowOption{weir.Trigger(weir.CountTrigger(50))}},
		{weir.Sliding(500 * time.Millisecond), nil},
	} {
		gen := func(count int64, rate float64, hold int) weir.Source[ev] {
			g := weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 3, Rate: rate}, genEvents)
			if hold > 0 {
				g = weirtest.HoldAfter(g.(weir.RestorableSource[ev]), hold)
			}
			return g
		}
		ref := newMemSink()
		if err := windowJobWith(c.w, c.wopts, gen(int64(n), 0, 0), 2, t.TempDir(), ref).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := ref.output()
		for _, p := range []int{1, 3} {
			pebble := weir.PebbleState(t.TempDir(), 4<<20)
			first := newMemSink()
			// Each of the two readers stops after n/4 events, so the stop
			// comes before the input's end however slow the machine.
			job := windowJobWith(c.w, c.wopts, gen(-1, 100_000, n/4), 2, t.TempDir(), first, pebble)
			if heap := job.HeapStateOperators(); len(heap) != 0 {
				t.Fatalf("%v on Pebble: operators with heap state %q", c.w, heap)
			}
			done := make(chan error, 1)
			go func() { done <- job.Run(context.Background()) }()
			waitFor(t, "first results", func() bool { return len(first.output()) > 50 })
			path, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
			}
			before := len(first.output())
			if before >= len(want) {
				t.Fatalf("%v: the first job ran to the end (%d results): the savepoint came too late", c.w, before)
			}
			if err := windowJobWith(c.w, c.wopts, gen(int64(n), 0, 0), p, t.TempDir(), first, pebble, weir.RestoreFrom(path)).Run(context.Background()); err != nil {
				t.Fatalf("%v: restore at p=%d: %v", c.w, p, err)
			}
			if got := first.output(); !slices.Equal(got, want) {
				t.Fatalf("%v %d options, restored at p=%d: %d results before the savepoint, %d in all; want %d as one run on the heap:\n%s",
					c.w, len(c.wopts), p, before, len(got), len(want), firstDiff(want, got))
			}
		}
	}
}

// Properties of the windows on state with other triggers, Global and
// Sliding windows, on PebbleState: sliding windows within the bound give
// the batch answer; a Global window counted with a count trigger never
// reached fires each key's count at the end of the input; a count trigger
// with allowed lateness, retracting, leaves per window a signed sum equal
// to the events the window accepted (the record-at-a-time model of
// window_property_test.go), the others dropped.
func TestPropertyStateWindows(t *testing.T) {
	r := newRand(43)
	pebble := func() []weir.JobOption { return []weir.JobOption{weir.PebbleState(t.TempDir(), 4<<20)} }
	within := randomEvents(r, 1500, 400, 400) // disorder never beyond 400ms
	perKey := map[spanKey]int64{}
	for _, e := range within {
		perKey[spanKey{e.Key, -1 << 63, 1<<63 - 1}]++
	}
	beyond := randomEvents(r, 2000, 300, 4000)
	want, wantDropped := modelWindowsLateness(beyond, 300, 1000, 1000, 1000)
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 64} {
			name := fmt.Sprintf("p%d b%d", p, bs)
			_, last, dropped := runSignedOn(t, within, weir.Sliding(time.Second), 400*time.Millisecond, p, bs, pebble())
			if dropped != 0 {
				t.Fatalf("sliding %s: %d dropped within the bound", name, dropped)
			}
			diffCounts(t, "sliding "+name, last, batchSliding(within, 1000))
			_, last, _ = runSignedOn(t, within, weir.Global(), 400*time.Millisecond, p, bs, pebble(), weir.Trigger(weir.CountTrigger(1<<40)))
			diffCounts(t, "global "+name, last, perKey)
			signed, _, dropped := runSignedOn(t, beyond, weir.Tumbling(time.Second), 300*time.Millisecond, p, bs, pebble(),
				weir.Trigger(weir.CountTrigger(3)), weir.AllowedLateness(time.Second), weir.Retracting())
			diffCounts(t, "count trigger "+name, signed, want)
			if dropped != wantDropped {
				t.Fatalf("count trigger %s: dropped %d, model %d", name, dropped, wantDropped)
			}
		}
	}
}

// BenchmarkStateWindowTriggers is BenchmarkStateWindows (same events: 100
// a millisecond over 10 K keys, parallelism 1) for the windows of
// window_state_trigger.go and window_state_sliding.go, on the heap and on
// PebbleState: a tumbling count with CountTrigger(5).Purging(), a Global
// count with CountTrigger(10).Purging(), and a Sliding(100ms) count (a
// key has one event in each range). ns/op is per event.
//
//	go test -run XXX -bench StateWindowTriggers -benchtime 1000000x .
func BenchmarkStateWindowTriggers(b *testing.B) {
	cases := []struct {
		name  string
		w     weir.Windows
		wopts []weir.WindowOption
	}{
		{"tumbling-count-purging", weir.Tumbling(time.Second), []weir.WindowOption{weir.Trigger(weir.CountTrigger(5).Purging())}},
		{"global-count-purging", weir.Global(), []weir.WindowOption{weir.Trigger(weir.CountTrigger(10).Purging())}},
		{"sliding", weir.Sliding(100 * time.Millisecond), nil},
	}
	for _, c := range cases {
		for _, backend := range []string{"heap", "pebble"} {
			b.Run(c.name+"/"+backend, func(b *testing.B) {
				n, results := benchWindowCounts(b, backend, func(ks *weir.KeyedStream[string, ev]) *weir.Stream[weir.WindowResult[string, int64]] {
					return weir.Aggregate(weir.Window(ks, c.w, c.wopts...), weir.Count[ev]())
				}, windowCount)
				if c.w != weir.Sliding(100*time.Millisecond) && n != int64(b.N) || results == 0 {
					b.Fatalf("counted %d events of %d in %d results", n, b.N, results)
				}
			})
		}
	}
}

// On PebbleState, processing-time firings of windows on state run from
// the job's clock through the process function's timer service: early
// firings, ProcessingTimeTrigger and gathered late firings, as
// TestEarlyFiringsAndProcessingTimeTrigger checks them on the heap.
func TestStateWindowProcessingTimeOnPebble(t *testing.T) {
	for _, mode := range []string{"early", "processing", "late"} {
		clock := &fakeClock{}
		job := weir.NewJob("early", weir.Clock(clock.now), weir.PebbleState(t.TempDir(), 4<<20))
		in := make(feed, 16)
		src := weir.FromSource(job, "feed", weir.Source[ev](in),
			weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		opts := []weir.WindowOption{weir.Trigger(weir.EventTimeTrigger().WithEarlyFirings(time.Second))}
		switch mode {
		case "processing":
			opts = []weir.WindowOption{weir.Trigger(weir.ProcessingTimeTrigger())}
		case "late":
			opts = []weir.WindowOption{weir.Trigger(weir.EventTimeTrigger().WithLateFirings(time.Second)), weir.AllowedLateness(time.Minute)}
		}
		res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(10*time.Second), opts...), weir.Count[ev]())
		out := weir.Collect(res)
		if heap := job.HeapStateOperators(); len(heap) != 0 {
			t.Fatalf("%s: operators with heap state on Pebble: %q", mode, heap)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- job.Run(ctx) }()
		// settle waits until the job has looked at the clock many times
		// since now (a count, not a duration): the events sent are in.
		settle := func() {
			seen := clock.reads.Load()
			waitFor(t, "the job to read the clock", func() bool { return clock.reads.Load() >= seen+20 })
		}
		in <- ev{"a", 1000}
		in <- ev{"a", 2000}
		if mode == "late" {
			in <- ev{"a", 11_000} // on-time firing of [0, 10 s)
			waitFor(t, "on-time firing", func() bool { return len(out.Items()) == 1 })
			in <- ev{"a", 3000} // late, within the lateness: gathered
		}
		clock.ms.Store(500)
		settle()
		if n, want := len(out.Items()), map[bool]int{true: 1}[mode == "late"]; n != want {
			t.Fatalf("%s: %d results before the clock moved, want %d", mode, n, want)
		}
		clock.ms.Store(20_000) // past the intervals and past the window end
		want := []weir.WindowResult[string, int64]{{Key: "a", Start: time.UnixMilli(0).UTC(), End: time.UnixMilli(10_000).UTC(), Value: 2, Kind: weir.Insert}}
		if mode == "late" {
			want = append(want, weir.WindowResult[string, int64]{Key: "a", Start: want[0].Start, End: want[0].End, Value: 3, Kind: weir.UpdateAfter})
		}
		waitFor(t, mode+" firing", func() bool { return len(out.Items()) == len(want) })
		if got := out.Items(); !slices.Equal(got, want) {
			t.Fatalf("%s: %+v, want %+v", mode, got, want)
		}
		if mode == "early" {
			in <- ev{"a", 3000}
			in <- ev{"a", 11_000} // the watermark passes the window: on-time firing
			waitFor(t, "on-time firing", func() bool { return len(out.Items()) == 2 })
			if r := out.Items()[1]; r.Value != 3 || r.Kind != weir.UpdateAfter {
				t.Fatalf("on-time firing %+v, want UpdateAfter 3", r)
			}
		}
		cancel()
		<-done
	}
}

// On PebbleState, a window with another trigger whose result type cannot
// be stored, and a Sliding window whose input type cannot be stored, fail
// the job before it starts, naming the operator and the type; on the heap
// they run.
func TestStateWindowUnencodableResultAndInput(t *testing.T) {
	type res struct {
		N    int64
		Done chan struct{} // no encoding
	}
	type in struct {
		Key  string
		TS   int64
		Done chan struct{}
	}
	count := weir.AggregateFuncs[in, int64, res]{
		AddFn:    func(a int64, _ in) int64 { return a + 1 },
		MergeFn:  func(a, b int64) int64 { return a + b },
		ResultFn: func(a int64) res { return res{N: a} },
	}
	for _, c := range []struct {
		w     weir.Windows
		wopts []weir.WindowOption
		what  string
	}{
		{weir.Global(), []weir.WindowOption{weir.Trigger(weir.CountTrigger(2))}, "result type"},
		{weir.Sliding(time.Second), nil, "input type"},
	} {
		run := func(opts ...weir.JobOption) error {
			job := weir.NewJob("chan-types", opts...)
			src := weir.FromSource(job, "events", weir.SliceSource([]in{{"a", 1, nil}, {"a", 2, nil}}),
				weir.MonotonousTimestamps(func(e in) time.Time { return time.UnixMilli(e.TS) }))
			weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e in) string { return e.Key }), c.w, c.wopts...), count, weir.Name("chan-window")))
			return job.Run(context.Background())
		}
		if err := run(); err != nil {
			t.Fatalf("%v on the heap: %v", c.w, err)
		}
		err := run(weir.PebbleState(t.TempDir(), 4<<20))
		if err == nil || !strings.Contains(err.Error(), `"chan-window"`) || !strings.Contains(err.Error(), c.what) {
			t.Fatalf("%v on Pebble: %v; want an error naming the operator and its %s", c.w, err, c.what)
		}
	}
}
