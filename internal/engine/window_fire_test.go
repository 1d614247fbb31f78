package engine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// discardSink counts the records pushed to it.
type discardSink[T any] struct{ n int }

func (s *discardSink[T]) push(b *batch[T]) error                   { s.n += len(b.data); return nil }
func (s *discardSink[T]) finish() error                            { return nil }
func (s *discardSink[T]) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// BenchmarkGenWindowFire is the cost of firing a tumbling window of 100 K
// keys in the general window operator (CoGroup's and ProcessWindow's), per
// key: what every row of Nexmark q8's window waits for.
func BenchmarkGenWindowFire(b *testing.B) {
	const keys = 100_000
	sink := &discardSink[int64]{}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		op := newFireBenchOp(sink)
		pushScattered(b, op.push, keys)
		b.StartTimer()
		if err := op.advance(10_000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
}

// newFireBenchOp is the general window operator of the firing benchmarks:
// Tumbling(10 s) collecting each key's values (CoGroup's state), one result
// per key to out.
func newFireBenchOp(out consumer[int64]) *genWindowOp[int64, int64, []int64, []int64, int64] {
	return newCollectBenchOp(out, func(emit func(int64), key int64, w *gwin[[]int64, []int64], kind ChangeKind, v []int64) error {
		emit(key + int64(len(v)))
		return nil
	})
}

// newCollectBenchOp is the general window operator over Tumbling(10 s)
// collecting each key's events (CoGroup's and ProcessWindow's state),
// rendered by render to out in batches of 1,024.
func newCollectBenchOp[T, R any](out consumer[R], render func(emit func(R), key int64, w *gwin[[]T, []T], kind ChangeKind, v []T) error) *genWindowOp[int64, T, []T, []T, R] {
	op := &genWindowOp[int64, T, []T, []T, R]{
		winOut: winOut[int64, T, R]{out: out, ob: newBatch[R](1024), batchSize: 1024, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Tumbling(10 * time.Second), agg: readOnlyCollect[T]{}, trig: EventTimeTrigger(), render: render,
		now: func() int64 { return 0 }, info: opInfo{uid: "c", name: "c", maxP: 128},
	}
	op.init()
	return op
}

// pushScattered pushes one record for each of keys keys to push, in
// batches of 1,024, in an arrival order unlike the keys' hash order, with
// event times in [1 s, 6 s): all in the window [0, 10 s).
func pushScattered(tb testing.TB, push func(*batch[keyed[int64, int64]]) error, keys int64) {
	tb.Helper()
	in := newBatch[keyed[int64, int64]](1024)
	for k := int64(0); k < keys; k++ {
		key := (k * 7919) % keys // arrival order unlike hash order
		in.add(keyed[int64, int64]{hash: uint64(key) * 0x9E3779B97F4A7C15, key: key, val: k}, 1000+k%5000, 0)
		if len(in.data) == cap(in.data) {
			if err := push(in); err != nil {
				tb.Fatal(err)
			}
			in.reset()
		}
	}
	if err := push(in); err != nil {
		tb.Fatal(err)
	}
}

// fireLog records every record and batch pushed to it, with timestamps and
// watermarks, in order.
type fireLog struct{ lines []string }

func (s *fireLog) push(b *batch[string]) error {
	for i, r := range b.data {
		s.lines = append(s.lines, fmt.Sprintf("%s ts=%d wm=%d", r, b.ts[i], b.wm[i]))
	}
	s.lines = append(s.lines, fmt.Sprintf("batch watermark=%d idle=%v", b.watermark, b.idle))
	return nil
}
func (s *fireLog) finish() error                            { return nil }
func (s *fireLog) barrier(*barrierMsg, *taskSnapshot) error { return nil }

type sumOp = genWindowOp[int64, int64, int64, int64, string]

// newTestSumOp is a general window operator summing int64 values, each
// result rendered with its kind, key, window and value. fixed false forces
// the per-key timer heap on tumbling and hopping windows too.
func newTestSumOp(w Windows, trig WindowTrigger, lateness int64, retract, fixed bool, now *int64) (*sumOp, *fireLog) {
	sink := &fireLog{}
	render := func(emit func(string), key int64, gw *gwin[int64, int64], kind ChangeKind, v int64) error {
		emit(fmt.Sprint(kind, " ", key, " [", gw.start, ",", gw.end, ") ", v))
		return nil
	}
	op := &sumOp{
		winOut: winOut[int64, int64, string]{out: sink, ob: newBatch[string](5), batchSize: 5, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      w, agg: Sum(func(v int64) int64 { return v }), trig: trig, lateness: lateness, retract: retract, render: render,
		now: func() int64 { return *now }, info: opInfo{uid: "s", name: "s", maxP: 16},
	}
	op.init()
	op.isFixed = op.isFixed && fixed
	return op, sink
}

// The FIFO timer queues of tumbling and hopping windows
// (window_fixed_timers.go) fire the same results, in the same order, with
// the same timestamps and watermarks, as the per-key heap they replace, for
// every trigger, allowed lateness and late events; and an operator restored
// from a checkpoint taken at any batch continues exactly as the one that
// was not stopped.
func TestFixedTimersMatchHeap(t *testing.T) {
	triggers := []WindowTrigger{
		EventTimeTrigger(),
		EventTimeTrigger().WithEarlyFirings(50 * time.Millisecond),
		EventTimeTrigger().WithLateFirings(30 * time.Millisecond),
		CountTrigger(3),
		CountTrigger(2).Purging(),
		ProcessingTimeTrigger(),
		// Removes a window at its processing-time firing.
		ProcessingTimeTrigger().Purging(),
	}
	windows := []Windows{Tumbling(100 * time.Millisecond), Hopping(100*time.Millisecond, 30*time.Millisecond)}
	for seed := uint64(1); seed <= 6; seed++ {
		for _, w := range windows {
			for _, trig := range triggers {
				for _, lateness := range []int64{0, 60, 100} {
					name := fmt.Sprintf("seed %d %v %v lateness %d", seed, w, trig, lateness)
					runFixedAgainstHeap(t, name, seed, w, trig, lateness)
				}
			}
		}
	}
}

// fireStep is a batch of (key, value) events at times ts, then the
// watermark wm, the processing time now, and maybe a barrier.
type fireStep struct {
	kv      [][2]int64
	ts      []int64
	wm, now int64
	barrier bool
}

// randomFireSteps are 60 batches of events with disorder (some late), the
// watermark trailing the largest time by a random bound, processing time
// moving on.
func randomFireSteps(seed uint64) []fireStep {
	rng := rand.New(rand.NewPCG(seed, 7))
	var steps []fireStep
	var maxTS, now int64 = 0, 1000
	for i := 0; i < 60; i++ {
		var s fireStep
		for j := rng.IntN(12); j > 0; j-- {
			ts := maxTS + rng.Int64N(40) - 25
			if rng.IntN(10) == 0 {
				ts -= 150 // late for its window, maybe within the lateness
			}
			maxTS = max(maxTS, ts)
			s.kv = append(s.kv, [2]int64{rng.Int64N(6), rng.Int64N(100)})
			s.ts = append(s.ts, ts)
		}
		s.wm = maxTS - 20 - rng.Int64N(20)
		now += rng.Int64N(40)
		s.now = now
		s.barrier = rng.IntN(8) == 0
		steps = append(steps, s)
	}
	return steps
}

func runFixedAgainstHeap(t *testing.T, name string, seed uint64, w Windows, trig WindowTrigger, lateness int64) {
	t.Helper()
	steps := randomFireSteps(seed)
	run := func(fixed bool, restoreAt int) []string {
		clock := int64(0)
		op, sink := newTestSumOp(w, trig, lateness, true, fixed, &clock)
		for i, s := range steps {
			clock = s.now
			if i == restoreAt {
				// Checkpoint here, restore into a fresh operator, go on
				// with it: what it emits from now on must be what the
				// uninterrupted operator emits.
				snap := &taskSnapshot{}
				if err := op.barrier(&barrierMsg{ID: 1}, snap); err != nil {
					t.Fatal(err)
				}
				if err := snap.Resolve(); err != nil {
					t.Fatal(err)
				}
				var groups [][]byte // by key group, as a restore reads them
				for _, kg := range slices.Sorted(maps.Keys(snap.States[0].Groups)) {
					groups = append(groups, snap.States[0].Groups[kg])
				}
				var sink2 *fireLog
				op, sink2 = newTestSumOp(w, trig, lateness, true, fixed, &clock)
				if err := op.restore(snap.States[0].Watermark, groups); err != nil {
					t.Fatal(err)
				}
				sink2.lines = append(sink.lines, "restored")
				sink = sink2
			}
			if err := op.onProcessingTime(clock); err != nil {
				t.Fatal(err)
			}
			b := newBatch[keyed[int64, int64]](len(s.kv))
			for j, p := range s.kv {
				b.add(keyed[int64, int64]{hash: uint64(p[0]) * 0x9E3779B97F4A7C15, key: p[0], val: p[1]}, s.ts[j], op.wm)
			}
			b.watermark = max(s.wm, op.wm)
			if err := op.push(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.advance(watermark.Max); err != nil {
			t.Fatal(err)
		}
		if err := op.endBatch(watermark.Max, false); err != nil {
			t.Fatal(err)
		}
		return sink.lines
	}
	want := run(false, -1)
	if got := run(true, -1); !slices.Equal(got, want) {
		t.Fatalf("%s: fixed timers:\n%s\nheap:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) < 10 {
		t.Fatalf("%s: only %d lines of output", name, len(want))
	}
	// Restored, the windows get their sequence numbers in the order of the
	// snapshot (by key group), so results due at the same time may come out
	// in another order than without the restore (with the heap as with the
	// queues): the restored queues must match the restored heap exactly,
	// and the uninterrupted run as a multiset of records (each exactly
	// once).
	records := func(lines []string) []string {
		var rs []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "batch ") && l != "restored" {
				rs = append(rs, l)
			}
		}
		slices.Sort(rs)
		return rs
	}
	for at := 0; at < len(steps); at++ {
		if !steps[at].barrier {
			continue
		}
		got, heap := run(true, at), run(false, at)
		if !slices.Equal(got, heap) {
			t.Fatalf("%s: restored at step %d, fixed timers:\n%s\nheap:\n%s", name, at, strings.Join(got, "\n"), strings.Join(heap, "\n"))
		}
		// Processing-time timers are set again from the clock at a restore,
		// so with them the firings themselves may differ.
		procTime := trig.early > 0 || trig.late > 0 || trig.kind == processingTimeTrigger
		if !procTime && !slices.Equal(records(got), records(want)) {
			t.Fatalf("%s: restored at step %d:\n%s\nuninterrupted:\n%s", name, at, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
