package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/watermark"
)

// resultLog records the window results pushed to it as fireLog does
// (newTestSumOp's rendering), with timestamps and watermarks.
type resultLog struct{ lines []string }

func (s *resultLog) push(b *batch[WindowResult[int64, int64]]) error {
	for i, r := range b.data {
		s.lines = append(s.lines, fmt.Sprintf("%s ts=%d wm=%d", fmt.Sprint(r.Kind, " ", r.Key, " [", r.Start.UnixMilli(), ",", r.End.UnixMilli(), ") ", r.Value), b.ts[i], b.wm[i]))
	}
	s.lines = append(s.lines, fmt.Sprintf("batch watermark=%d idle=%v", b.watermark, b.idle))
	return nil
}
func (s *resultLog) finish() error                            { return nil }
func (s *resultLog) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// newTestStateSumOp is a process operator (heap state backend, 16 key
// groups) running trigStateWindow: the sum of newTestSumOp, retracting,
// on state.
func newTestStateSumOp(t *testing.T, w Windows, trig WindowTrigger, lateness int64, now *int64) (*processOp[int64, int64, WindowResult[int64, int64]], *resultLog) {
	t.Helper()
	sink := &resultLog{}
	out := &stateWindowOut[int64, int64, WindowResult[int64, int64]]{out: sink}
	agg := Sum(func(v int64) int64 { return v })
	fn := &trigStateWindow[int64, int64, int64, int64]{trig: trig, stateWindowBase: stateWindowBase[int64, int64, int64, int64]{
		w: w, agg: agg, lateness: lateness, retract: true, ident: identityResult[int64, int64](agg), out: out}}
	return openTestStateOp(t, fn, out, now), sink
}

// stateWindowFn is a window function on state.
type stateWindowFn[K comparable, T, R any] interface {
	KeyedProcessFunction[K, T, R]
	Opener[K]
	TimerHandler[K, R]
	BatchEndHandler[K, R]
}

// openTestStateOp is a process operator running fn on the heap state
// backend (16 key groups, one subtask) with the clock at *now, as
// buildProcess makes one in a job.
func openTestStateOp[K comparable, T, R any](t *testing.T, fn stateWindowFn[K, T, R], out consumer[R], now *int64) *processOp[K, T, R] {
	t.Helper()
	op := &processOp[K, T, R]{fn: fn, out: out, size: 5, m: &metrics.Operator{},
		info: opInfo{uid: "s", name: "s", maxP: 16},
		procCore: procCore[K, R]{ob: newBatch[R](5),
			wm: watermark.Min, emitWM: watermark.Min, sentWM: watermark.Min, clock: func() int64 { return *now }}}
	op.procCore.m, op.procCore.size, op.procCore.flush = op.m, 5, op.emit
	be, err := state.NewHeap(state.Config{MaxParallelism: 16, KeyGroups: state.KeyGroupRange{Start: 0, End: 16}, Now: op.procNow})
	if err != nil {
		t.Fatal(err)
	}
	op.backend = be
	if op.event, err = state.NewTimerQueue[K, state.VoidNamespace](be, eventTimersName); err != nil {
		t.Fatal(err)
	}
	if op.proc, err = state.NewTimerQueue[K, state.VoidNamespace](be, procTimersName); err != nil {
		t.Fatal(err)
	}
	op.ctx = &KeyedContext[K, R]{op: &op.procCore}
	op.onTimer, op.onEnd = fn, fn
	rc := &RuntimeContext[K]{Parallelism: 1, keys: &op.cur, backend: be}
	if err := fn.Open(rc); err != nil || rc.err != nil {
		t.Fatal(err, rc.err)
	}
	rc.closed = true
	return op
}

// snapshotRestore checkpoints op and returns a new operator from newOp
// restored from the checkpoint, as a restore reads it (by key group).
func snapshotRestore[K comparable, T, R any](t *testing.T, op *processOp[K, T, R], newOp func() *processOp[K, T, R]) *processOp[K, T, R] {
	t.Helper()
	snap := &taskSnapshot{}
	if err := op.barrier(&barrierMsg{ID: 1}, snap); err != nil {
		t.Fatal(err)
	}
	var groups [][]byte
	for _, kg := range slices.Sorted(maps.Keys(snap.States[0].Groups)) {
		groups = append(groups, snap.States[0].Groups[kg])
	}
	op = newOp()
	if err := op.restore(snap.States[0].Watermark, groups); err != nil {
		t.Fatal(err)
	}
	return op
}

// The window functions on state with any trigger (window_state_trigger.go)
// emit what the general window operator emits, for tumbling, hopping,
// session and global windows, every trigger (processing-time ones driven
// by an injected clock), allowed lateness and retractions: the same
// records with the same timestamps and watermarks, results of one
// watermark or one processing time maybe in another order. And one
// restored from a checkpoint taken at any batch goes on as the one that
// was not stopped, processing-time firings included (their timers are in
// the state).
func TestTrigStateWindowMatchesHeap(t *testing.T) {
	triggers := []WindowTrigger{
		EventTimeTrigger(),
		EventTimeTrigger().WithEarlyFirings(50 * time.Millisecond),
		EventTimeTrigger().WithLateFirings(30 * time.Millisecond),
		EventTimeTrigger().WithEarlyFirings(40 * time.Millisecond).WithLateFirings(30 * time.Millisecond),
		EventTimeTrigger().Purging(),
		CountTrigger(3),
		CountTrigger(2).Purging(),
		ProcessingTimeTrigger(),
		ProcessingTimeTrigger().Purging(),
	}
	windows := []Windows{Tumbling(100 * time.Millisecond), Hopping(100*time.Millisecond, 30*time.Millisecond),
		Session(30 * time.Millisecond), Global()}
	for seed := uint64(1); seed <= 3; seed++ {
		for _, w := range windows {
			for _, trig := range triggers {
				for _, lateness := range []int64{0, 60} {
					name := fmt.Sprintf("seed %d %v %v lateness %d", seed, w, trig, lateness)
					runStateAgainstHeap(t, name, seed, w, trig, lateness)
				}
			}
		}
	}
}

func runStateAgainstHeap(t *testing.T, name string, seed uint64, w Windows, trig WindowTrigger, lateness int64) {
	t.Helper()
	steps := randomFireSteps(seed)
	input := func(i int, wm int64) *batch[keyed[int64, int64]] {
		s := steps[i]
		b := newBatch[keyed[int64, int64]](len(s.kv))
		for j, p := range s.kv {
			b.add(keyed[int64, int64]{hash: uint64(p[0]) * 0x9E3779B97F4A7C15, key: p[0], val: p[1]}, s.ts[j], wm)
		}
		b.watermark = max(s.wm, wm)
		return b
	}
	heap := func() []string {
		clock := int64(0)
		op, sink := newTestSumOp(w, trig, lateness, true, true, &clock)
		for i, s := range steps {
			clock = s.now
			if err := op.onProcessingTime(clock); err != nil {
				t.Fatal(err)
			}
			if err := op.push(input(i, op.wm)); err != nil {
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
	onState := func(restoreAt int) []string {
		clock := int64(0)
		op, sink := newTestStateSumOp(t, w, trig, lateness, &clock)
		var lines []string
		for i, s := range steps {
			clock = s.now
			if i == restoreAt {
				lines = append(lines, sink.lines...)
				op = snapshotRestore(t, op, func() *processOp[int64, int64, WindowResult[int64, int64]] {
					var o *processOp[int64, int64, WindowResult[int64, int64]]
					o, sink = newTestStateSumOp(t, w, trig, lateness, &clock)
					return o
				})
			}
			if err := op.onProcessingTime(clock); err != nil {
				t.Fatal(err)
			}
			if err := op.push(input(i, op.wm)); err != nil {
				t.Fatal(err)
			}
		}
		b := newBatch[keyed[int64, int64]](1)
		b.watermark = watermark.Max
		if err := op.push(b); err != nil {
			t.Fatal(err)
		}
		return append(lines, sink.lines...)
	}
	records := func(lines []string) []string {
		var rs []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "batch ") {
				rs = append(rs, l)
			}
		}
		slices.Sort(rs)
		return rs
	}
	want := records(heap())
	if len(want) < 5 && !(w.kind == globalWindows && trig.kind == processingTimeTrigger) {
		t.Fatalf("%s: only %d records", name, len(want))
	}
	got := records(onState(-1))
	if !slices.Equal(got, want) {
		t.Fatalf("%s: on state:\n%s\nheap:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for at := range steps {
		if steps[at].barrier {
			if restored := records(onState(at)); !slices.Equal(restored, got) {
				t.Fatalf("%s: restored at step %d:\n%s\nuninterrupted:\n%s", name, at, strings.Join(restored, "\n"), strings.Join(got, "\n"))
			}
		}
	}
}

// Restored with a watermark behind the end of a window that fired (a
// restore at another parallelism takes the lowest of the old subtasks'),
// a window on state with an event-time trigger fires again when the
// watermark passes its end, as genWindowOp, whose restore sets the firing
// timers again, does; not only when its lateness ends.
func TestTrigStateWindowRestoreBehindWatermark(t *testing.T) {
	for _, c := range []struct {
		trig  WindowTrigger
		after []string
	}{
		{EventTimeTrigger().Purging(), []string{"+I 1 [0,100) 5 ts=99 wm=60"}},
		{EventTimeTrigger().WithLateFirings(30 * time.Millisecond), []string{"-U 1 [0,100) 5 ts=99 wm=60", "+U 1 [0,100) 10 ts=99 wm=60"}},
	} {
		var clock int64
		op, sink := newTestStateSumOp(t, Tumbling(100*time.Millisecond), c.trig, 100, &clock)
		push := func(op *processOp[int64, int64, WindowResult[int64, int64]], ts, wm int64) {
			b := newBatch[keyed[int64, int64]](1)
			if ts >= 0 {
				b.add(keyed[int64, int64]{hash: 7, key: 1, val: 5}, ts, op.wm)
			}
			b.watermark = wm
			if err := op.push(b); err != nil {
				t.Fatal(err)
			}
		}
		push(op, 10, 120) // fires [0,100) at 99
		snap := &taskSnapshot{}
		if err := op.barrier(&barrierMsg{ID: 1}, snap); err != nil {
			t.Fatal(err)
		}
		var groups [][]byte
		for _, kg := range slices.Sorted(maps.Keys(snap.States[0].Groups)) {
			groups = append(groups, snap.States[0].Groups[kg])
		}
		var sink2 *resultLog
		op, sink2 = newTestStateSumOp(t, Tumbling(100*time.Millisecond), c.trig, 100, &clock)
		if err := op.restore(50, groups); err != nil { // behind the window's end
			t.Fatal(err)
		}
		push(op, 60, 60)
		push(op, -1, 100)
		got := slices.DeleteFunc(append(sink.lines, sink2.lines...), func(l string) bool { return strings.HasPrefix(l, "batch ") })
		want := append([]string{"+I 1 [0,100) 5 ts=99 wm=-9223372036854775808"}, c.after...)
		if !slices.Equal(got, want) {
			t.Fatalf("%v: got\n%s\nwant\n%s", c.trig, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
