package engine

import (
	"testing"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

type countingConsumer[T any] struct{ n int }

func (c *countingConsumer[T]) push(b *batch[T]) error { c.n += len(b.data); return nil }
func (c *countingConsumer[T]) finish() error          { return nil }

// Sliding windows keep one live timer per key: the pending timers must not
// grow with the input (they once did: every popped timer pushed another,
// making the operator quadratic).
func TestSlidingTimersStayBounded(t *testing.T) {
	out := &countingConsumer[WindowResult[string, int64]]{}
	op := &overOp[string, int64, int64, int64]{
		winOut: winOut[string, int64, WindowResult[string, int64]]{out: out, ob: newBatch[WindowResult[string, int64]](1024),
			batchSize: 1024, m: &metrics.Operator{}, sentWM: watermark.Min},
		rng: 1000, agg: Count[int64](), info: opInfo{maxP: 128},
	}
	op.init()
	const n = 200_000
	keys := []string{"a", "b", "c"}
	b := newBatch[keyed[string, int64]](1000)
	for i := int64(0); i < n; i++ {
		k := keys[i%3]
		b.add(keyed[string, int64]{hash: uint64(i % 3), key: k, val: i}, i, i-1)
		if len(b.data) == 1000 {
			b.watermark = i
			if err := op.push(b); err != nil {
				t.Fatal(err)
			}
			b.reset()
			// Stale timers may wait for their time, but never more than one
			// per buffered event, whatever the length of the input.
			buffered := 0
			op.keys.All(func(_ uint64, _ string, k **overKey[string, int64]) bool {
				buffered += len((*k).events)
				return true
			})
			if extra := op.timers.Len() - buffered; extra > len(keys) {
				t.Fatalf("after %d events: %d timers pending beyond one per buffered event, for %d keys", i+1, extra, len(keys))
			}
		}
	}
	b.watermark = watermark.Max
	if err := op.push(b); err != nil {
		t.Fatal(err)
	}
	if out.n != n {
		t.Fatalf("%d results for %d events", out.n, n)
	}
}
