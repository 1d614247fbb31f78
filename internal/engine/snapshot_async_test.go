package engine

import (
	"bytes"
	"cmp"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/codec"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// barrierSink is the end of a chain in unit tests of an operator's
// barrier: it takes batches and barriers and keeps nothing.
type barrierSink[T any] struct{ barriers int }

func (s *barrierSink[T]) push(*batch[T]) error                     { return nil }
func (s *barrierSink[T]) finish() error                            { return nil }
func (s *barrierSink[T]) barrier(*barrierMsg, *taskSnapshot) error { s.barriers++; return nil }

func newTestAlignedOp(async bool) (*alignedWindowOp[int64, int64, int64, int64], *barrierSink[WindowResult[int64, int64]]) {
	sink := &barrierSink[WindowResult[int64, int64]]{}
	op := &alignedWindowOp[int64, int64, int64, int64]{
		winOut: winOut[int64, int64, WindowResult[int64, int64]]{out: sink, ob: newBatch[WindowResult[int64, int64]](8), batchSize: 8, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Hopping(10*time.Second, 2*time.Second), agg: Count[int64](), wm: watermark.Min, nextFire: watermark.Max,
		info: opInfo{uid: "w", name: "w", maxP: 128}, async: async,
	}
	return op, sink
}

// countIn adds one to key's count in the window [start, start+10s).
func countIn(op *alignedWindowOp[int64, int64, int64, int64], start, key int64) {
	p, _ := op.upsert(op.bucket(start, start+10000, start), uint64(key*7919), key)
	*p++
}

// An aligned window operator with shareable state copies it at the barrier
// and leaves the encoding to the coordinator: the barrier goes on at once,
// the task's snapshot holds a deferred state file, and that file is what
// the synchronous snapshot would have written at the barrier, whatever the
// operator did after it.
func TestAlignedWindowSnapshotDeferred(t *testing.T) {
	fill := func(op *alignedWindowOp[int64, int64, int64, int64]) {
		for k := int64(0); k < 300; k++ {
			countIn(op, 0, k)
			countIn(op, 2000, k%17)
			countIn(op, 2000, k%17)
		}
	}
	syncOp, _ := newTestAlignedOp(false)
	fill(syncOp)
	want := &taskSnapshot{}
	if err := syncOp.barrier(&barrierMsg{ID: 1}, want); err != nil {
		t.Fatal(err)
	}
	if len(want.States) != 1 || len(want.Deferred) != 0 {
		t.Fatalf("synchronous snapshot: %d states, %d deferred", len(want.States), len(want.Deferred))
	}

	op, sink := newTestAlignedOp(true)
	fill(op)
	got := &taskSnapshot{}
	if err := op.barrier(&barrierMsg{ID: 1}, got); err != nil {
		t.Fatal(err)
	}
	if sink.barriers != 1 {
		t.Fatalf("barrier forwarded %d times", sink.barriers)
	}
	if len(got.States) != 0 || len(got.Deferred) != 1 {
		t.Fatalf("deferred snapshot: %d states, %d deferred; want 0 and 1", len(got.States), len(got.Deferred))
	}
	// The operator goes on after the barrier: new keys, new counts, a new
	// window, and a window fired and its table reused.
	for k := int64(0); k < 500; k++ {
		countIn(op, 0, k)
		countIn(op, 4000, k)
	}
	if err := op.advance(9999); err != nil {
		t.Fatal(err)
	}
	countIn(op, 10000, 1)
	if err := got.Resolve(); err != nil {
		t.Fatal(err)
	}
	if len(got.States) != 1 || got.Deferred != nil {
		t.Fatalf("resolved: %d states, %d deferred", len(got.States), len(got.Deferred))
	}
	w, g := want.States[0], got.States[0]
	if w.UID != g.UID || w.Watermark != g.Watermark || len(w.Groups) != len(g.Groups) {
		t.Fatalf("state file %+v, want %+v", g, w)
	}
	for kg, data := range w.Groups {
		if !bytes.Equal(g.Groups[kg], data) {
			t.Fatalf("key group %d differs from the synchronous snapshot's", kg)
		}
	}
}

func TestShareable(t *testing.T) {
	type flat struct {
		A int64
		S string
		F [3]float64
	}
	type withSlice struct {
		A int64
		B []int64
	}
	for _, c := range []struct {
		v    any
		want bool
	}{
		{int64(0), true}, {"", true}, {flat{}, true}, {[2]flat{}, true}, {WindowResult[int64, int64]{}, false},
		{withSlice{}, false}, {[]int64{}, false}, {map[int]int{}, false}, {new(int), false}, {[1]any{}, false},
		{struct{ f func() }{}, false}, {struct{ c chan int }{}, false}, {[0][]int{}, true},
	} {
		if got := shareable(reflect.TypeOf(c.v)); got != c.want {
			t.Errorf("shareable(%T) = %v, want %v", c.v, got, c.want)
		}
	}
}

func newTestSessionOp(async bool) *genWindowOp[int64, int64, int64, int64, WindowResult[int64, int64]] {
	sink := &barrierSink[WindowResult[int64, int64]]{}
	render := func(emit func(WindowResult[int64, int64]), key int64, w *gwin[int64, int64], kind ChangeKind, v int64) error {
		emit(WindowResult[int64, int64]{Key: key, Start: time.UnixMilli(w.start).UTC(), End: time.UnixMilli(w.end).UTC(), Value: v, Kind: kind})
		return nil
	}
	op := &genWindowOp[int64, int64, int64, int64, WindowResult[int64, int64]]{
		winOut: winOut[int64, int64, WindowResult[int64, int64]]{out: sink, ob: newBatch[WindowResult[int64, int64]](8), batchSize: 8, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Session(10 * time.Second), agg: Count[int64](), trig: EventTimeTrigger(), render: render,
		now: func() int64 { return 0 }, info: opInfo{uid: "s", name: "s", maxP: 128}, async: async,
	}
	op.init()
	return op
}

// pushKeys pushes one record per key at time ts, with watermark wm.
func pushKeys(t *testing.T, op consumer[keyed[int64, int64]], keys []int64, ts, wm int64) {
	t.Helper()
	b := newBatch[keyed[int64, int64]](len(keys))
	for _, k := range keys {
		b.add(keyed[int64, int64]{hash: uint64(k * 7919), key: k, val: k}, ts, wm)
	}
	b.watermark = wm
	if err := op.push(b); err != nil {
		t.Fatal(err)
	}
}

// The general window operator (here sessions) defers its snapshot the same
// way when keys, accumulators and results are shareable: with few keys,
// and with enough that the barrier's copy prefetches keys with a second
// session ahead and the encoding rests (restEvery) on the way.
func TestSessionWindowSnapshotDeferred(t *testing.T) {
	for _, distinct := range []int{70, 2*restEvery + 100} {
		t.Run(strconv.Itoa(distinct), func(t *testing.T) { testSessionWindowSnapshotDeferred(t, distinct) })
	}
}

func testSessionWindowSnapshotDeferred(t *testing.T, distinct int) {
	keys := make([]int64, 3*distinct)
	for i := range keys {
		keys[i] = int64(i % distinct)
	}
	fill := func(op consumer[keyed[int64, int64]]) {
		pushKeys(t, op, keys, 1000, 0)
		pushKeys(t, op, keys[:distinct*3/4], 30000, 0) // a second session for some keys
	}
	syncOp := newTestSessionOp(false)
	fill(syncOp)
	want := &taskSnapshot{}
	if err := syncOp.barrier(&barrierMsg{ID: 1}, want); err != nil {
		t.Fatal(err)
	}
	op := newTestSessionOp(true)
	fill(op)
	got := &taskSnapshot{}
	if err := op.barrier(&barrierMsg{ID: 1}, got); err != nil {
		t.Fatal(err)
	}
	if len(want.States) != 1 || len(got.States) != 0 || len(got.Deferred) != 1 {
		t.Fatalf("sync: %d states; deferred: %d states, %d deferred", len(want.States), len(got.States), len(got.Deferred))
	}
	// A small state is copied at the barrier; a large one is copied
	// afterwards, copyStep keys a tick, and copy-on-write.
	if copied, small := len(op.snapCopy), distinct <= copyStep; small != (copied == distinct) || !small && copied != 0 {
		t.Fatalf("%d of %d keys copied at the barrier", copied, distinct)
	}
	if err := op.onProcessingTime(0); err != nil {
		t.Fatal(err)
	}
	// After the barrier: the first sessions fire and go, new ones open,
	// and the second ones grow.
	pushKeys(t, op, nil, 0, 12000)
	pushKeys(t, op, keys, 15000, 12000)
	pushKeys(t, op, []int64{1000, 1001}, 16000, 20000)
	pushKeys(t, op, keys[:distinct/2], 31000, 20000)
	tickCopy(t, op)
	if err := got.Resolve(); err != nil {
		t.Fatal(err)
	}
	sameEntries[int64, int64](t, want, got)
}

// tickCopy makes what is left of a deferred snapshot's copy as the task
// loop does, a processing-time tick at a time, and checks that it ends.
func tickCopy(t *testing.T, op procTimers) {
	t.Helper()
	for i := 0; op.nextProcessingTime() == watermark.Min; i++ {
		if i > 1e6 {
			t.Fatal("the copy does not end")
		}
		if err := op.onProcessingTime(0); err != nil {
			t.Fatal(err)
		}
	}
}

// sameEntries fails unless the resolved deferred snapshot got holds the
// entries of the synchronous snapshot want, key group by key group. Within
// a group the order may differ: a copy-on-write copy holds the keys the
// task changed first (a restore does not depend on the order).
func sameEntries[ACC, OUT any](t *testing.T, want, got *taskSnapshot) {
	t.Helper()
	w, g := want.States[0], got.States[0]
	if w.Watermark != g.Watermark || len(w.Groups) == 0 || len(w.Groups) != len(g.Groups) {
		t.Fatalf("state file: watermark %d, %d key groups; want %d, %d", g.Watermark, len(g.Groups), w.Watermark, len(w.Groups))
	}
	decode := func(data []byte) []genEntry[int64, ACC, OUT] {
		var es []genEntry[int64, ACC, OUT]
		if err := codec.EachEntry([][]byte{data}, func(e genEntry[int64, ACC, OUT]) { es = append(es, e) }); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(es, func(a, b genEntry[int64, ACC, OUT]) int { return cmp.Compare(a.Key, b.Key) })
		return es
	}
	for kg, data := range w.Groups {
		if ge, we := decode(g.Groups[kg]), decode(data); !reflect.DeepEqual(ge, we) {
			t.Fatalf("key group %d: %d entries differ from the synchronous snapshot's %d", kg, len(ge), len(we))
		}
	}
}

// A barrier that comes while the last barrier's copy is still being made
// (that checkpoint was aborted: nothing resolves its snapshot) completes
// that copy first, then starts its own, which holds the state at the new
// barrier.
func TestSessionWindowCopyOfAbortedCheckpoint(t *testing.T) {
	const distinct = 3 * copyStep
	keys := make([]int64, distinct)
	for i := range keys {
		keys[i] = int64(i)
	}
	run := func(op *genWindowOp[int64, int64, int64, int64, WindowResult[int64, int64]]) *taskSnapshot {
		pushKeys(t, op, keys, 1000, 0)
		if op.async {
			deferredBarrier(t, op) // aborted: never resolved
			if err := op.onProcessingTime(0); err != nil {
				t.Fatal(err)
			}
		}
		pushKeys(t, op, keys[:distinct/2], 2000, 0)
		s := &taskSnapshot{}
		if err := op.barrier(&barrierMsg{ID: 2}, s); err != nil {
			t.Fatal(err)
		}
		pushKeys(t, op, keys, 3000, 0)
		return s
	}
	want := run(newTestSessionOp(false))
	op := newTestSessionOp(true)
	got := run(op)
	tickCopy(t, op)
	if err := got.Resolve(); err != nil {
		t.Fatal(err)
	}
	sameEntries[int64, int64](t, want, got)
}

// A deferred encoding waits for the task's copy; when the task stops
// before it made it, the encoding fails (a checkpoint that cannot be
// written) instead of waiting for ever.
func TestSessionWindowCopyTaskStopped(t *testing.T) {
	op := newTestSessionOp(true)
	stopped := make(chan struct{})
	op.stopped = stopped
	keys := make([]int64, 2*copyStep)
	for i := range keys {
		keys[i] = int64(i)
	}
	pushKeys(t, op, keys, 1000, 0)
	got := deferredBarrier(t, op)
	close(stopped)
	if err := got.Resolve(); err == nil || !strings.Contains(err.Error(), "stopped before it copied") {
		t.Fatalf("Resolve = %v, want the task's stop", err)
	}
}

// A window removed after the barrier without a firing (cleaned up when its
// allowed lateness passed) is copied before it goes.
func TestSessionWindowCopyCleanup(t *testing.T) {
	keys := make([]int64, 3*copyStep)
	for i := range keys {
		keys[i] = int64(i)
	}
	run := func(async bool) (*genWindowOp[int64, int64, int64, int64, WindowResult[int64, int64]], *taskSnapshot) {
		op := newTestSessionOp(async)
		op.lateness = 5000
		pushKeys(t, op, keys, 1000, 0)
		pushKeys(t, op, nil, 0, 12000) // fired; cleaned up at 15999
		s := &taskSnapshot{}
		if err := op.barrier(&barrierMsg{ID: 1}, s); err != nil {
			t.Fatal(err)
		}
		if err := op.onProcessingTime(0); err != nil {
			t.Fatal(err)
		}
		pushKeys(t, op, nil, 0, 20000)
		if op.keys.Len() != 0 {
			t.Fatalf("%d keys left after the cleanup", op.keys.Len())
		}
		return op, s
	}
	_, want := run(false)
	op, got := run(true)
	tickCopy(t, op)
	if err := got.Resolve(); err != nil {
		t.Fatal(err)
	}
	sameEntries[int64, int64](t, want, got)
}
