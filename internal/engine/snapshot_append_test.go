package engine

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// collectSink keeps the records pushed to it, as strings.
type collectSink[T any] struct{ got []string }

func (s *collectSink[T]) push(b *batch[T]) error {
	for _, r := range b.data {
		s.got = append(s.got, fmt.Sprint(r))
	}
	return nil
}
func (s *collectSink[T]) finish() error                            { return nil }
func (s *collectSink[T]) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// pushVals pushes one record per (key, value) at time ts, with watermark wm.
func pushVals(t *testing.T, op consumer[keyed[int64, int64]], kv [][2]int64, ts, wm int64) {
	t.Helper()
	b := newBatch[keyed[int64, int64]](len(kv))
	for _, p := range kv {
		b.add(keyed[int64, int64]{hash: uint64(p[0] * 7919), key: p[0], val: p[1]}, ts, wm)
	}
	b.watermark = wm
	if err := op.push(b); err != nil {
		t.Fatal(err)
	}
}

// sameState fails unless the deferred snapshot got, once resolved, holds
// the bytes of the synchronous one, want.
func sameState(t *testing.T, want, got *taskSnapshot) {
	t.Helper()
	if len(want.States) != 1 || len(want.Deferred) != 0 {
		t.Fatalf("synchronous snapshot: %d states, %d deferred", len(want.States), len(want.Deferred))
	}
	if err := got.Resolve(); err != nil {
		t.Fatal(err)
	}
	w, g := want.States[0], got.States[0]
	if w.Watermark != g.Watermark || len(w.Groups) == 0 || len(w.Groups) != len(g.Groups) {
		t.Fatalf("state file: watermark %d, %d key groups; want %d, %d", g.Watermark, len(g.Groups), w.Watermark, len(w.Groups))
	}
	for kg, data := range w.Groups {
		if !bytes.Equal(g.Groups[kg], data) {
			t.Fatalf("key group %d differs from the synchronous snapshot's", kg)
		}
	}
}

type collectOp = genWindowOp[int64, int64, []int64, []int64, string]

// newTestCollectOp is CoGroup's window operator over int64 events: tumbling
// 10 s windows that collect their events (readOnlyCollect), rendered as
// "key start events".
func newTestCollectOp(async bool) (*collectOp, *collectSink[string]) {
	sink := &collectSink[string]{}
	render := func(emit func(string), key int64, w *gwin[[]int64, []int64], kind ChangeKind, v []int64) error {
		emit(fmt.Sprint(key, " ", w.start, " ", v))
		return nil
	}
	op := &collectOp{
		winOut: winOut[int64, int64, string]{out: sink, ob: newBatch[string](8), batchSize: 8, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Tumbling(10 * time.Second), agg: readOnlyCollect[int64]{}, trig: EventTimeTrigger(), render: render,
		now: func() int64 { return 0 }, info: opInfo{uid: "c", name: "c", maxP: 128}, async: async,
	}
	op.init()
	return op, sink
}

// CoGroup's window state (each window's events in a slice) is copied at the
// barrier, slice headers only, and encoded later; events appended to the
// same slices after the barrier (into their spare capacity), windows fired
// and removed, and new windows do not reach the snapshot: its bytes are the
// synchronous snapshot's, and an operator restored from it fires what the
// state at the barrier would have fired.
func TestCoGroupSnapshotDeferred(t *testing.T) {
	var kv [][2]int64
	for i := int64(0); i < 300; i++ {
		kv = append(kv, [2]int64{i % 70, i}) // 4 or 5 events per key: slices with spare capacity
	}
	fill := func(op *collectOp) {
		pushVals(t, op, kv, 1000, 0)
		pushVals(t, op, kv[:90], 12000, 0) // a second window for some keys
	}
	syncOp, _ := newTestCollectOp(false)
	fill(syncOp)
	want := &taskSnapshot{}
	if err := syncOp.barrier(&barrierMsg{ID: 1}, want); err != nil {
		t.Fatal(err)
	}

	if !deferrable(readOnlyCollect[int64]{}, reflect.TypeFor[int64](), reflect.TypeFor[[]int64](), reflect.TypeFor[[]int64]()) {
		t.Fatal("CoGroup's collecting aggregate is not deferrable")
	}
	op, _ := newTestCollectOp(true)
	fill(op)
	got := deferredBarrier(t, op)
	// After the barrier: more events into the same windows (appended in
	// place where a slice has room), the first window fired and removed,
	// a third window.
	var more [][2]int64
	for i := int64(0); i < 70; i++ {
		more = append(more, [2]int64{i, -i})
	}
	pushVals(t, op, more, 2000, 0)
	pushVals(t, op, more, 13000, 10500)
	pushVals(t, op, more[:5], 25000, 10500)
	sameState(t, want, got)

	// Recovery: restored from the deferred snapshot, the operator fires the
	// state at the barrier.
	restored, out := newTestCollectOp(true)
	var groups [][]byte
	for _, data := range got.States[0].Groups {
		groups = append(groups, data)
	}
	if err := restored.restore(got.States[0].Watermark, groups); err != nil {
		t.Fatal(err)
	}
	ref, refOut := newTestCollectOp(false)
	fill(ref)
	for _, o := range []*collectOp{restored, ref} {
		if err := o.advance(watermark.Max); err != nil {
			t.Fatal(err)
		}
		if err := o.emit(watermark.Max); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(out.got)
	slices.Sort(refOut.got)
	if len(out.got) == 0 || !slices.Equal(out.got, refOut.got) {
		t.Fatalf("restored operator fired %d results, want %d:\n%.300v\nwant\n%.300v", len(out.got), len(refOut.got), out.got, refOut.got)
	}
}

// maxVals keeps the maximum and every value equal to it, as Nexmark q7's
// accumulator keeps its bids.
type maxVals struct {
	Max  int64
	Vals []int64
}

type maxValsAgg struct{}

func (maxValsAgg) Create() maxVals { return maxVals{Max: -1 << 63} }
func (maxValsAgg) Add(a maxVals, v int64) maxVals {
	switch {
	case v > a.Max:
		a.Max, a.Vals = v, append(a.Vals[:0:0], v)
	case v == a.Max:
		a.Vals = append(a.Vals, v)
	}
	return a
}
func (maxValsAgg) Merge(a, b maxVals) maxVals { panic("not merged") }
func (maxValsAgg) Result(a maxVals) maxVals   { return a }
func (maxValsAgg) AppendOnlyAccumulator()     {}

type maxValsOp = alignedWindowOp[int64, int64, maxVals, maxVals]

func newTestMaxValsOp(async bool) *maxValsOp {
	sink := &barrierSink[WindowResult[int64, maxVals]]{}
	return &maxValsOp{
		winOut: winOut[int64, int64, WindowResult[int64, maxVals]]{out: sink, ob: newBatch[WindowResult[int64, maxVals]](8), batchSize: 8, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      Tumbling(10 * time.Second), agg: maxValsAgg{}, wm: watermark.Min, nextFire: watermark.Max,
		info: opInfo{uid: "m", name: "m", maxP: 128}, async: async,
	}
}

// An aggregate that promises append-only accumulators (AppendOnlyAccumulator)
// has its slices copied by header at an aligned window's barrier: values
// equal to the maximum appended after it, and a new maximum that replaces
// the slice, leave the snapshot as the barrier saw it.
func TestAppendOnlyAccumulatorSnapshotDeferred(t *testing.T) {
	var kv [][2]int64
	for i := int64(0); i < 400; i++ {
		kv = append(kv, [2]int64{i % 50, 7}) // 8 equal maxima per key: len 8, then room after 8 more
	}
	fill := func(op *maxValsOp) {
		pushVals(t, op, kv, 1000, 0)
		pushVals(t, op, kv[:30], 11000, 0)
	}
	syncOp := newTestMaxValsOp(false)
	fill(syncOp)
	want := &taskSnapshot{}
	if err := syncOp.barrier(&barrierMsg{ID: 1}, want); err != nil {
		t.Fatal(err)
	}
	if !deferrable(maxValsAgg{}, reflect.TypeFor[int64](), reflect.TypeFor[maxVals](), reflect.TypeFor[maxVals]()) {
		t.Fatal("an append-only aggregate of slices is not deferrable")
	}
	op := newTestMaxValsOp(true)
	fill(op)
	got := deferredBarrier(t, op)
	var more [][2]int64
	for i := int64(0); i < 50; i++ {
		more = append(more, [2]int64{i, 7}, [2]int64{i, 7})
		if i%5 == 0 {
			more = append(more, [2]int64{i + 1000, 9}) // new keys
		}
	}
	pushVals(t, op, more, 2000, 0)
	pushVals(t, op, [][2]int64{{1, 8}, {2, 8}}, 3000, 0) // new maxima: new slices
	if err := op.advance(9999); err != nil {             // the first window fires; its table is reused
		t.Fatal(err)
	}
	pushVals(t, op, more, 21000, 9999)
	sameState(t, want, got)
}

func TestDeferrable(t *testing.T) {
	type withMap struct{ M map[int]int }
	type withPtr struct{ P []*int }
	i64, str := reflect.TypeFor[int64](), reflect.TypeFor[string]()
	for _, c := range []struct {
		name        string
		agg         any
		k, acc, out reflect.Type
		want        bool
	}{
		{"count", Count[int64](), i64, i64, i64, true},
		{"string key", Count[int64](), str, i64, i64, true},
		{"pointer key", Count[int64](), reflect.TypeFor[*int](), i64, i64, false},
		{"slices, no promise", collectAgg[int64]{}, i64, reflect.TypeFor[[]int64](), reflect.TypeFor[[]int64](), false},
		{"slices, append-only", readOnlyCollect[int64]{}, i64, reflect.TypeFor[[]int64](), reflect.TypeFor[[]int64](), true},
		{"struct with a slice", maxValsAgg{}, i64, reflect.TypeFor[maxVals](), reflect.TypeFor[maxVals](), true},
		{"nested slices", maxValsAgg{}, i64, reflect.TypeFor[[][]string](), i64, true},
		{"map, append-only", maxValsAgg{}, i64, reflect.TypeFor[withMap](), i64, false},
		{"pointers, append-only", maxValsAgg{}, i64, reflect.TypeFor[withPtr](), i64, false},
		{"result with a slice, no promise", Count[int64](), i64, i64, reflect.TypeFor[[]int64](), false},
	} {
		if got := deferrable(c.agg, c.k, c.acc, c.out); got != c.want {
			t.Errorf("%s: deferrable = %v, want %v", c.name, got, c.want)
		}
	}
}

// deferredBarrier passes op a barrier and checks that its snapshot was
// deferred whole (one deferred state, nothing encoded at the barrier).
func deferredBarrier(t *testing.T, op interface {
	barrier(*barrierMsg, *taskSnapshot) error
}) *taskSnapshot {
	t.Helper()
	got := &taskSnapshot{}
	if err := op.barrier(&barrierMsg{ID: 1}, got); err != nil {
		t.Fatal(err)
	}
	if len(got.States) != 0 || len(got.Deferred) != 1 {
		t.Fatalf("deferred snapshot: %d states, %d deferred; want 0 and 1", len(got.States), len(got.Deferred))
	}
	return got
}
