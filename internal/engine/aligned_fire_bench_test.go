package engine

import (
	"testing"
	"time"
)

// pushCounts pushes n records (keys from k0 on, event time ts) through the
// operator in batches of 1,000, the last batch carrying watermark wm.
func pushCounts(tb testing.TB, op *alignedWindowOp[int64, int64, int64, int64], k0, n, ts, wm int64) {
	for i := int64(0); i < n; i += 1000 {
		b := newBatch[keyed[int64, int64]](1000)
		for k := k0 + i; k < k0+min(i+1000, n); k++ {
			b.data = append(b.data, keyed[int64, int64]{hash: uint64(k) * 0x9e3779b97f4a7c15, key: k})
			b.ts = append(b.ts, ts)
			b.wm = append(b.wm, op.wm)
		}
		if i+1000 >= n {
			b.watermark = wm
		}
		if err := op.push(b); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkAlignedCheckpointFire is q5's moment of a checkpoint before a
// window fires: five hop buckets of 150,000 counts, a barrier, then the
// batch whose watermark fires the oldest bucket (and whose records go to
// the four others). fire-ms is the task's time from the barrier to the end
// of that batch (what a window's rows wait for); task-ms adds the next
// batch after the coordinator encoded the snapshot (any work the
// operator left for after the encoding). The encoding itself is not timed.
func BenchmarkAlignedCheckpointFire(b *testing.B) {
	var fire, task time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		op, _ := newTestAlignedOp(true)
		pushCounts(b, op, 0, 150_000, 9000, 8000)
		pushCounts(b, op, 150_000, 20_000, 9500, 8000) // the hot keys of the next batches
		b.StartTimer()
		t0 := time.Now()
		s := &taskSnapshot{}
		if err := op.barrier(&barrierMsg{ID: int64(i)}, s); err != nil {
			b.Fatal(err)
		}
		pushCounts(b, op, 150_000, 1000, 10500, 9999)
		t1 := time.Now()
		b.StopTimer()
		if err := s.Resolve(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t2 := time.Now()
		pushCounts(b, op, 151_000, 1000, 10600, 9999)
		t3 := time.Now()
		fire += t1.Sub(t0)
		task += t1.Sub(t0) + t3.Sub(t2)
	}
	b.ReportMetric(float64(fire.Microseconds())/1000/float64(b.N), "fire-ms")
	b.ReportMetric(float64(task.Microseconds())/1000/float64(b.N), "task-ms")
}
