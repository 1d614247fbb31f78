package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// tsList renders the event times of evs in their order.
func tsList(evs []ev) string {
	var b strings.Builder
	for i, e := range evs {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, e.TS)
	}
	return b.String()
}

// side is the right side of the CoGroup and WindowJoin tests: another type.
type side struct {
	K string
	T int64
}

// addProcessWindow adds to src, keyed by Key, a ProcessWindow over w with
// its LateEvents, and returns their outputs: a line per firing with the
// window's events in the order the window function got them, and a line
// per late event.
func addProcessWindow(src *weir.Stream[ev], w weir.Windows, wopts []weir.WindowOption) (out, late *weir.Stream[string]) {
	ks := weir.KeyBy(src, func(e ev) string { return e.Key })
	pw := weir.ProcessWindow(weir.Window(ks, w, wopts...), func(k string, win weir.WindowInfo, evs []ev, emit func(weir.WindowResult[string, string])) error {
		emit(weir.WindowResult[string, string]{Key: k, Start: win.Start, End: win.End, Value: tsList(evs)})
		return nil
	}, weir.Name("pw"))
	out = weir.Map(pw, func(r weir.WindowResult[string, string]) string {
		return fmt.Sprintf("pw %s %s %s", r.Key, span(r.Start, r.End), r.Value)
	})
	late = weir.Map(weir.LateEvents[ev](pw), func(l weir.LateEvent[string, ev]) string {
		return fmt.Sprintf("late %s@%d missed %s wm=%d", l.Key, l.Timestamp.UnixMilli(), span(l.Window.Start, l.Window.End), l.Watermark.UnixMilli())
	})
	return out, late
}

// addCoGroups adds to src, keyed by Key, a CoGroup and a WindowJoin over w
// whose two sides are the events at even and at odd times, and returns
// their output: a line per firing (a pair for the join) with each side's
// event times, sorted (the two sides are a union, which interleaves them
// in no fixed order; src must have no late events for the same reason).
func addCoGroups(src *weir.Stream[ev], w weir.Windows, wopts []weir.WindowOption) *weir.Stream[string] {
	left := weir.KeyBy(weir.Filter(src, func(e ev) bool { return e.TS%2 == 0 }), func(e ev) string { return e.Key })
	right := weir.KeyBy(weir.Map(weir.Filter(src, func(e ev) bool { return e.TS%2 != 0 }), func(e ev) side { return side{e.Key, e.TS} }),
		func(s side) string { return s.K })
	cg := weir.CoGroup(left, right, w, func(k string, win weir.WindowInfo, ls []ev, rs []side, emit func(string)) error {
		var r []ev
		for _, s := range rs {
			r = append(r, ev{s.K, s.T})
		}
		emit(fmt.Sprintf("cg %s %s L=%s R=%s", k, span(win.Start, win.End), sortedTS(ls), sortedTS(r)))
		return nil
	}, append(slices.Clone(wopts), weir.Name("cogroup"))...)
	wj := weir.WindowJoin(left, right, w, func(k string, win weir.WindowInfo, l ev, r side) string {
		return fmt.Sprintf("wj %s %s %d-%d", k, span(win.Start, win.End), l.TS, r.T)
	}, append(slices.Clone(wopts), weir.Name("join"))...)
	return weir.Union(cg, wj)
}

// sortedTS is tsList of evs sorted by time.
func sortedTS(evs []ev) string {
	evs = slices.Clone(evs)
	slices.SortFunc(evs, func(a, b ev) int { return int(a.TS - b.TS) })
	return tsList(evs)
}

// runProcessWindows runs addProcessWindow's and addCoGroups' operators
// over c's windows.
func runProcessWindows(t *testing.T, evs []ev, c stateWindowCase, p, batch int, opts ...weir.JobOption) stateWindowRun {
	t.Helper()
	job := weir.NewJob("process-windows", append([]weir.JobOption{weir.Parallelism(p), weir.BatchSize(batch)}, opts...)...)
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	var wopts []weir.WindowOption
	if c.lateness > 0 {
		wopts = append(wopts, weir.AllowedLateness(c.lateness))
	}
	if c.retract {
		wopts = append(wopts, weir.Retracting())
	}
	out, lateOut := addProcessWindow(src, c.w, wopts)
	// CoGroup and WindowJoin over events that are never late (within the
	// bound): which events a union makes late is not fixed.
	pairs := weir.FromSource(job, "pairs", weir.SliceSource(randomEvents(newRand(43), 3000, 200, 200)),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	results, late := weir.Collect(weir.Union(out, addCoGroups(pairs, c.w, wopts))), weir.Collect(lateOut)
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

// ProcessWindow, CoGroup and WindowJoin over tumbling, hopping and session
// windows, with and without allowed lateness, give on PebbleState
// (process functions, the windows' events in Pebble) what they give on
// the heap: the same firings with the same events in the same order, the
// same late events and drops, at parallelism 1 and 3; and on Pebble no
// operator is left with heap state.
func TestStateProcessWindowsSameAsHeap(t *testing.T) {
	r := newRand(41)
	evs := randomEvents(r, 3000, 200, 3000)
	for i, c := range stateWindowCases {
		p := 1 + 2*(i%2)
		batch := []int{7, 64}[i/2%2]
		heap := runProcessWindows(t, evs, c, p, batch)
		pebble := runProcessWindows(t, evs, c, p, batch, weir.PebbleState(t.TempDir(), 8<<20))
		if len(heap.results) < 100 || heap.dropped == 0 || len(heap.late) == 0 {
			t.Fatalf("%s: a weak case: %d results, %d dropped, %d late events", c.name, len(heap.results), heap.dropped, len(heap.late))
		}
		for _, op := range []string{"pw ", "cg ", "wj "} {
			if !slices.ContainsFunc(heap.results, func(s string) bool { return strings.HasPrefix(s, op) }) {
				t.Fatalf("%s: no output of %q", c.name, op)
			}
		}
		checkSameAsHeap(t, c.name, p, heap, pebble)
		if len(heap.heapOps) < 3 {
			t.Errorf("%s: on the heap backend, HeapStateOperators names %q", c.name, heap.heapOps)
		}
	}
}

// TestProcessWindowsGolden runs the events of testdata/windows.txt's
// cases (TestWindowsGolden) through ProcessWindow on the heap and on
// PebbleState: the same output on both; on Pebble, the operator over
// tumbling, hopping and session windows with the default trigger keeps no
// heap state, the others stay on the heap.
func TestProcessWindowsGolden(t *testing.T) {
	datadriven.RunTest(t, "testdata/windows.txt", func(t *testing.T, d *datadriven.TestData) string {
		var c stateWindowCase
		var bound time.Duration
		var wopts []weir.WindowOption
		ms := func(s string) time.Duration {
			var n int64
			if _, err := fmt.Sscan(s, &n); err != nil {
				t.Fatalf("bad number %q", s)
			}
			return time.Duration(n) * time.Millisecond
		}
		onState := true
		for _, a := range d.CmdArgs {
			k, v, _ := strings.Cut(a.String(), "=")
			f := strings.Split(v, ":")
			switch k {
			case "window":
				switch f[0] {
				case "tumbling":
					c.w = weir.Tumbling(ms(f[1]))
				case "hopping":
					c.w = weir.Hopping(ms(f[1]), ms(f[2]))
				case "session":
					c.w = weir.Session(ms(f[1]))
				case "global":
					c.w, onState = weir.Global(), false
				case "sliding":
					return d.Expected // ProcessWindow takes no sliding windows
				}
			case "bound":
				bound = ms(v)
			case "lateness":
				wopts = append(wopts, weir.AllowedLateness(ms(v)))
			case "trigger":
				var n int64
				fmt.Sscan(f[1], &n)
				tr := weir.CountTrigger(n)
				if len(f) > 2 && f[2] == "purge" {
					tr = tr.Purging()
				}
				wopts, onState = append(wopts, weir.Trigger(tr)), false
			}
		}
		var evs []ev
		for _, l := range strings.Split(d.Input, "\n") {
			l = strings.TrimSpace(l)
			if l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			var e ev
			if _, err := fmt.Sscanf(l, "%s %d", &e.Key, &e.TS); err != nil {
				t.Fatalf("bad event line %q: %v", l, err)
			}
			evs = append(evs, e)
		}
		run := func(opts ...weir.JobOption) ([]string, int64, *weir.Job) {
			job := weir.NewJob("golden-process", opts...)
			src := weir.FromSource(job, "events", weir.SliceSource(evs),
				weir.BoundedOutOfOrderness(bound, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
			out, late := addProcessWindow(src, c.w, wopts)
			res := weir.Collect(weir.Union(out, late))
			if err := job.Run(context.Background()); err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			got := res.Items()
			slices.Sort(got)
			return got, job.Metrics().Sum(lateDropped), job
		}
		heap, heapDropped, _ := run()
		pebble, pebbleDropped, job := run(weir.PebbleState(t.TempDir(), 4<<20))
		if len(heap) == 0 {
			t.Errorf("%s: no output", d.Pos)
		}
		if !slices.Equal(heap, pebble) || heapDropped != pebbleDropped {
			t.Errorf("%s: on PebbleState (%d dropped):\n%s\non the heap (%d dropped):\n%s", d.Pos, pebbleDropped, strings.Join(pebble, "\n"), heapDropped, strings.Join(heap, "\n"))
		}
		if heapOps := job.HeapStateOperators(); onState != (len(heapOps) == 0) {
			t.Errorf("%s: on PebbleState, operators with heap state: %q", d.Pos, heapOps)
		}
		return d.Expected
	})
}

// genInBound is genEvents with less disorder, within the bound: no event
// is late, which a union of two sides would decide in no fixed order.
func genInBound(i int64, rng *rand.Rand) ev {
	return ev{Key: fmt.Sprintf("k%d", rng.IntN(30)), TS: i*10 - rng.Int64N(150)}
}

// processWindowJob is windowJobFrom's job with a ProcessWindow over w and
// a CoGroup over w (its sides: events at even and odd times) in place of
// the count: each firing is a line with the window's events' times,
// sorted (the source's readers interleave in no fixed order).
func processWindowJob(w weir.Windows, gen weir.Source[ev], p int, dir string, sink *memSink, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("sp-process", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(20*time.Millisecond, dir)}, opts...)...)
	src := weir.FromSource(job, "gen", gen,
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }), weir.UID("gen"))
	ks := weir.KeyBy(src, func(e ev) string { return e.Key })
	pw := weir.ProcessWindow(weir.Window(ks, w), func(k string, win weir.WindowInfo, evs []ev, emit func(string)) error {
		emit(fmt.Sprintf("pw %s@%d=%s", k, win.Start.UnixMilli(), sortedTS(evs)))
		return nil
	}, weir.UID("pw"))
	left := weir.KeyBy(weir.Filter(src, func(e ev) bool { return e.TS%2 == 0 }, weir.UID("even")), func(e ev) string { return e.Key })
	right := weir.KeyBy(weir.Filter(src, func(e ev) bool { return e.TS%2 != 0 }, weir.UID("odd")), func(e ev) string { return e.Key })
	cg := weir.CoGroup(left, right, w, func(k string, win weir.WindowInfo, ls, rs []ev, emit func(string)) error {
		emit(fmt.Sprintf("cg %s@%d=%s|%s", k, win.Start.UnixMilli(), sortedTS(ls), sortedTS(rs)))
		return nil
	}, weir.UID("cogroup"))
	weir.To(weir.Union(pw, cg), weir.Sink[string](sink), weir.UID("sink"))
	return job
}

// Stop-with-savepoint of ProcessWindow and CoGroup on PebbleState at
// parallelism 2, restore at 1 and at 4: the output before the stop plus
// the output after the restore equals one uninterrupted run on the heap.
// A savepoint of them on one backend restored on the other fails at once
// with an error that says which backend to restore with.
func TestStateProcessWindowSavepointRescale(t *testing.T) {
	n := 20000
	if raceEnabled {
		n = 5000 // 41 s of the test command's root package at 20,000
	}
	for _, w := range []weir.Windows{weir.Hopping(time.Second, 500*time.Millisecond), weir.Session(150 * time.Millisecond)} {
		gen := func(count int64, rate float64, hold int) weir.Source[ev] {
			g := weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 3, Rate: rate}, genInBound)
			if hold > 0 {
				g = weirtest.HoldAfter(g.(weir.RestorableSource[ev]), hold)
			}
			return g
		}
		ref := newMemSink()
		if err := processWindowJob(w, gen(int64(n), 0, 0), 2, t.TempDir(), ref).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := ref.output()
		pebble := func() weir.JobOption { return weir.PebbleState(t.TempDir(), 4<<20) }
		for _, p := range []int{1, 4} {
			first := newMemSink()
			job := processWindowJob(w, gen(-1, 100_000, n/4), 2, t.TempDir(), first, pebble())
			if heap := job.HeapStateOperators(); len(heap) != 0 {
				t.Fatalf("%v on Pebble: operators with heap state %q", w, heap)
			}
			path := stopWithSavepoint(t, job, first)
			before := len(first.output())
			if before >= len(want) {
				t.Fatalf("%v: the first job ran to the end (%d results): the savepoint came too late", w, before)
			}
			if err := processWindowJob(w, gen(int64(n), 0, 0), p, t.TempDir(), first, pebble(), weir.RestoreFrom(path)).Run(context.Background()); err != nil {
				t.Fatalf("%v: restore at p=%d: %v", w, p, err)
			}
			if got := first.output(); !slices.Equal(got, want) {
				t.Fatalf("%v p=%d: %d results before the savepoint, %d in all; want %d as one run on the heap\n%s", w, p, before, len(got), len(want), firstDiff(want, got))
			}
		}
		for _, from := range []string{"heap", "pebble"} {
			var fromOpts, toOpts []weir.JobOption
			to, want := "pebble", "restore it with HeapState"
			if from == "pebble" {
				fromOpts, to, want = []weir.JobOption{pebble()}, "heap", "restore it with PebbleState"
			} else {
				toOpts = []weir.JobOption{pebble()}
			}
			first := newMemSink()
			path := stopWithSavepoint(t, processWindowJob(w, gen(-1, 100_000, n/4), 2, t.TempDir(), first, fromOpts...), first)
			job := processWindowJob(w, gen(int64(n), 0, 0), 2, t.TempDir(), first, append(toOpts, weir.RestoreFrom(path))...)
			err := job.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), want) || !weir.IsPermanent(err) {
				t.Fatalf("%v: a savepoint on %s restored on %s: %v; want a permanent error saying %q", w, from, to, err, want)
			}
			if n := job.Metrics().Checkpoints.Restarts; n != 0 {
				t.Fatalf("%d restarts before the error", n)
			}
		}
	}
}

// stopWithSavepoint runs job until sink has some output, stops it with a
// savepoint and returns the savepoint's path.
func stopWithSavepoint(t *testing.T, job *weir.Job, sink *memSink) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	waitFor(t, "first results", func() bool { return len(sink.output()) > 50 })
	path, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
	}
	return path
}

// A ProcessWindow whose events cannot be stored fails a job on
// PebbleState before it starts, naming the operator; on the heap it runs.
func TestStateProcessWindowUnencodableEvents(t *testing.T) {
	type event struct {
		Key  string
		Done chan struct{} // no encoding
	}
	run := func(opts ...weir.JobOption) error {
		job := weir.NewJob("chan-events", opts...)
		src := weir.FromSource(job, "events", weir.SliceSource([]event{{Key: "a"}, {Key: "a"}}),
			weir.MonotonousTimestamps(func(event) time.Time { return time.UnixMilli(1) }))
		weir.Collect(weir.ProcessWindow(weir.Window(weir.KeyBy(src, func(e event) string { return e.Key }), weir.Tumbling(time.Second)),
			func(k string, _ weir.WindowInfo, evs []event, emit func(int)) error { emit(len(evs)); return nil }, weir.Name("chan-windows")))
		return job.Run(context.Background())
	}
	if err := run(); err != nil {
		t.Fatalf("on the heap: %v", err)
	}
	err := run(weir.PebbleState(t.TempDir(), 4<<20))
	if err == nil || !strings.Contains(err.Error(), `"chan-windows"`) || !strings.Contains(err.Error(), "event type") {
		t.Fatalf("on Pebble: %v; want an error naming the operator and its event type", err)
	}
}

// ProcessWindow over sessions with allowed lateness on incremental Pebble
// checkpoints, checkpointed often, failing once and restarting from the
// latest checkpoint, at parallelism 2, then again with changelog
// checkpoints: the output of a plain heap run.
func TestStateProcessWindowRestart(t *testing.T) {
	evs := randomEvents(newRand(6), 8000, 200, 3000)
	c := metaConfig{kind: "pwindow", p: 2, batch: 64, pebble: true, incremental: true, ckEvery: 500, failAt: 5000}
	want := runMeta(t, evs, c.reference())
	got := runMeta(t, evs, c)
	if len(want) < 100 || !slices.Equal(got, want) {
		t.Fatalf("%d records on Pebble, %d on the heap:\n%s", len(got), len(want), firstDiff(want, got))
	}
	c.incremental = false
	if got := runMeta(t, evs, c, weir.StateChangelog(0)); !slices.Equal(got, want) {
		t.Fatalf("%d records with changelog checkpoints, %d on the heap:\n%s", len(got), len(want), firstDiff(want, got))
	}
}
