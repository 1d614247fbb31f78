package engine

import "testing"

// BenchmarkAlignedBarrier is the synchronous part of a deferred snapshot of
// an aligned window operator (q5's state: five hop buckets of 150,000
// int64 counts), what stops the task at each checkpoint; the copy is
// reused from one checkpoint to the next, as in a running job.
func BenchmarkAlignedBarrier(b *testing.B) {
	op, _ := newTestAlignedOp(true)
	for w := int64(0); w < 5; w++ {
		for k := int64(0); k < 150_000; k++ {
			countIn(op, w*2000, k+w*30_000)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := &taskSnapshot{}
		if err := op.barrier(&barrierMsg{ID: int64(i)}, s); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Resolve(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
