package engine

import (
	"slices"
	"testing"
	"unsafe"
)

// rowLog records the rows pushed to it, in order.
type rowLog struct{ rows []coRow }

func (s *rowLog) push(b *batch[coRow]) error               { s.rows = append(s.rows, b.data...); return nil }
func (s *rowLog) finish() error                            { return nil }
func (s *rowLog) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// Prefetching a firing's memory (prefetchFire, removeFired) changes
// nothing but when memory is read: CoGroup's operator fires the same rows
// in the same order with and without it and removes every fired key; and
// for CoGroup's accumulators (slices of tagged events) the events are what
// it prefetches.
func TestFixedPrefetchSameResults(t *testing.T) {
	const keys = 3000
	fire := func(noPrefetch bool) ([]coRow, int) {
		sink := &rowLog{}
		op := newCoGroupFireOp(sink)
		op.noPrefetch = noPrefetch
		if got, want := op.accElem, unsafe.Sizeof(coEvent{}); got != want {
			t.Fatalf("accElem %d, want the size of a tagged event, %d", got, want)
		}
		pushQ8Shaped(t, op.push, keys)
		if err := op.push(&batch[keyed[int64, coEvent]]{header: header{watermark: 10_000}}); err != nil {
			t.Fatal(err)
		}
		return sink.rows, op.keys.Len()
	}
	with, left := fire(false)
	without, _ := fire(true)
	if len(with) != keys*4/6 || !slices.Equal(with, without) {
		t.Fatalf("%d rows with prefetching, %d without (want %d, the same in the same order)", len(with), len(without), keys*4/6)
	}
	if left != 0 {
		t.Fatalf("%d keys left after the firing, want 0", left)
	}
}
