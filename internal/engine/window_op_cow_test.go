package engine

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// resultSink keeps the results an operator pushes.
type resultSink[T any] struct{ got []T }

func (s *resultSink[T]) push(b *batch[T]) error                   { s.got = append(s.got, b.data...); return nil }
func (s *resultSink[T]) finish() error                            { return nil }
func (s *resultSink[T]) barrier(*barrierMsg, *taskSnapshot) error { return nil }

func newCOWTestOp(w Windows, async bool) (*alignedWindowOp[int64, int64, int64, int64], *resultSink[WindowResult[int64, int64]]) {
	sink := &resultSink[WindowResult[int64, int64]]{}
	op := &alignedWindowOp[int64, int64, int64, int64]{
		winOut: winOut[int64, int64, WindowResult[int64, int64]]{out: sink, ob: newBatch[WindowResult[int64, int64]](16), batchSize: 16, sentWM: watermark.Min, m: &metrics.Operator{}},
		w:      w, agg: Sum(func(v int64) int64 { return v }), wm: watermark.Min, nextFire: watermark.Max,
		info: opInfo{uid: "w", name: "w", maxP: 128}, async: async,
	}
	return op, sink
}

func sortedResults(rs []WindowResult[int64, int64]) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%d/%d/%d=%d", r.End.UnixMilli(), r.Start.UnixMilli(), r.Key, r.Value)
	}
	slices.Sort(out)
	return out
}

// groupEntries decodes a key group of an aligned window snapshot, sorted.
func groupEntries(t *testing.T, data []byte) []alignedEntry[int64, int64] {
	var es []alignedEntry[int64, int64]
	if err := codec.EachEntry([][]byte{data}, func(e alignedEntry[int64, int64]) { es = append(es, e) }); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(es, func(a, b alignedEntry[int64, int64]) int {
		if a.Start != b.Start {
			return int(a.Start - b.Start)
		}
		return int(a.Key - b.Key)
	})
	return es
}

// sameWindowSnapshot fails t unless got and want are each one state file
// of an aligned (or sliced) window operator, with the same watermark and
// the same entries in each key group. The entries of a key group may come
// in another order (a table's slots depend on its capacity, tables are
// reused in another order, slices are encoded at other checkpoints):
// they are compared sorted.
func sameWindowSnapshot(t *testing.T, got, want *taskSnapshot) {
	t.Helper()
	if len(got.States) != 1 || len(want.States) != 1 {
		t.Fatalf("states: %d and %d", len(got.States), len(want.States))
	}
	g, wt := got.States[0], want.States[0]
	if g.Watermark != wt.Watermark || len(g.Groups) != len(wt.Groups) {
		t.Fatalf("state file: %d groups at %d, want %d at %d", len(g.Groups), g.Watermark, len(wt.Groups), wt.Watermark)
	}
	for kg := range wt.Groups {
		if ge, we := groupEntries(t, g.Groups[kg]), groupEntries(t, wt.Groups[kg]); !slices.Equal(ge, we) {
			t.Fatalf("key group %d: %v, want %v", kg, ge, we)
		}
	}
}

// The aligned window operator's deferred snapshot shares its tables with
// the coordinator instead of copying them (window_op_cow.go). With random
// input (disorder, late records, windows firing while shared), barriers at
// random batches and each snapshot encoded on another goroutine while the
// task goes on, every snapshot must hold the entries a synchronous
// snapshot takes at the same barrier, and the results those of an operator that
// never snapshots; some snapshots are never encoded (an aborted
// checkpoint). Under -race, a write of the task to a table the
// coordinator reads is also reported as a race.
//
// The encoding runs either on another goroutine right after the barrier,
// or only when the test checks it, after the task has written more batches
// to the shared tables: then a write that reaches a shared table (or a
// copy that shares memory with it) changes the snapshot every time, not
// only when it races ahead of the encoding.
func TestAlignedWindowCopyOnWrite(t *testing.T) {
	defer func(m int) { deltaCopyMin = m }(deltaCopyMin)
	for _, copyMin := range []int{1 << 30, 4} { // deltas only; deltas replaced by copies
		deltaCopyMin = copyMin
		for _, late := range []bool{false, true} {
			testAlignedWindowCopyOnWrite(t, copyMin, late)
		}
	}
}

func testAlignedWindowCopyOnWrite(t *testing.T, copyMin int, late bool) {
	for _, w := range []Windows{Hopping(10*time.Second, 2*time.Second), Tumbling(4 * time.Second)} {
		for seed := int64(1); seed <= 4; seed++ {
			t.Run(fmt.Sprintf("%v/%d/copy%d/late=%v", w, seed, copyMin, late), func(t *testing.T) {
				rng := rand.New(rand.NewSource(seed))
				ref, refOut := newCOWTestOp(w, false)
				sync, _ := newCOWTestOp(w, false)
				op, out := newCOWTestOp(w, true)
				var pending chan error
				var want *taskSnapshot
				var got *taskSnapshot
				check := func() {
					if late {
						pending <- got.Resolve()
					}
					if err := <-pending; err != nil {
						t.Fatal(err)
					}
					pending = nil
					sameWindowSnapshot(t, got, want)
				}
				ts := int64(0)
				for step := 0; step < 400; step++ {
					b := newBatch[keyed[int64, int64]](64)
					for i := rng.Intn(64); i > 0; i-- {
						ts += int64(rng.Intn(40))
						rt := ts - int64(rng.Intn(3000)) // disorder, some of it late
						k := int64(rng.Intn(300))
						b.data = append(b.data, keyed[int64, int64]{hash: uint64(k) * 0x9e3779b97f4a7c15, key: k, val: int64(rng.Intn(10))})
						b.ts = append(b.ts, rt)
						b.wm = append(b.wm, ts-2000)
					}
					b.watermark = ts - 2000
					for _, o := range []*alignedWindowOp[int64, int64, int64, int64]{ref, sync, op} {
						c := &batch[keyed[int64, int64]]{header: b.header, data: slices.Clone(b.data)}
						if err := o.push(c); err != nil {
							t.Fatal(err)
						}
					}
					switch {
					case pending != nil && rng.Intn(4) == 0:
						check() // the coordinator is done: the next batch folds
					case pending == nil && rng.Intn(8) == 0:
						id := int64(step)
						want, got = &taskSnapshot{}, &taskSnapshot{}
						if err := sync.barrier(&barrierMsg{ID: id}, want); err != nil {
							t.Fatal(err)
						}
						if err := op.barrier(&barrierMsg{ID: id}, got); err != nil {
							t.Fatal(err)
						}
						if len(got.Deferred) != 1 {
							t.Fatalf("%d deferred state files, want 1", len(got.Deferred))
						}
						if rng.Intn(5) == 0 {
							continue // aborted: never encoded; the next barrier takes the tables back
						}
						pending = make(chan error, 1)
						if !late {
							go func(s *taskSnapshot, done chan<- error) { done <- s.Resolve() }(got, pending)
						}
					}
				}
				if pending != nil {
					check()
				}
				for _, o := range []*alignedWindowOp[int64, int64, int64, int64]{ref, op} {
					if err := o.advance(watermark.Max); err != nil {
						t.Fatal(err)
					}
					if err := o.emit(watermark.Max); err != nil {
						t.Fatal(err)
					}
				}
				if len(refOut.got) == 0 {
					t.Fatal("no results")
				}
				if g, w := sortedResults(out.got), sortedResults(refOut.got); !slices.Equal(g, w) {
					t.Fatalf("results differ from the operator without snapshots: %d against %d", len(g), len(w))
				}
			})
		}
	}
}
