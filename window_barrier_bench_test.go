package weir

import (
	"testing"
)

// BenchmarkGenWindowBarrier is the task's stop at a checkpoint barrier of
// the general window operator with deferred encoding (CoGroup's state, as
// in Nexmark q8): copying 200 K keys' windows. The encoding, on the
// coordinator's goroutine, is not timed.
func BenchmarkGenWindowBarrier(b *testing.B) {
	const keys = 200_000
	op, _ := newTestCollectOp(true)
	pushScattered(b, op.push, keys)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := &taskSnapshot{}
		if err := op.barrier(&barrierMsg{ID: int64(i + 1)}, s); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, f := range s.Deferred {
			if _, err := f(); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
}
