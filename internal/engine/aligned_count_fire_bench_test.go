package engine

import (
	"testing"
	"time"
)

// BenchmarkAlignedCountFire is the firing of one of q5's hop buckets on a
// count subtask: 125,000 keys (a subtask's share of a window at about
// 600,000 events/s), fired by the watermark into a consumer that drops the
// results (batches of 1,024). ns/key is the walk, the result and the batch
// per key; the filling is not timed.
func BenchmarkAlignedCountFire(b *testing.B) {
	const keys = 125_000
	var fire time.Duration
	for range b.N {
		b.StopTimer()
		op, _ := newTestAlignedOp(false)
		op.batchSize = 1024
		op.ob = newBatch[WindowResult[int64, int64]](1024)
		for k := int64(0); k < keys; k++ {
			countIn(op, 0, int64(uint64(k)*0x9e3779b97f4a7c15>>17))
		}
		b.StartTimer()
		t0 := time.Now()
		if err := op.advance(9999); err != nil {
			b.Fatal(err)
		}
		fire += time.Since(t0)
	}
	b.ReportMetric(float64(fire.Nanoseconds())/float64(b.N)/keys, "ns/key")
	b.ReportMetric(float64(fire.Microseconds())/1000/float64(b.N), "fire-ms")
}
