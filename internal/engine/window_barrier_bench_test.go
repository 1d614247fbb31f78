package engine

import (
	"testing"
	"time"
)

// BenchmarkGenWindowBarrier is the task's work at a checkpoint barrier of
// the general window operator with deferred encoding, for 200 K keys'
// windows of CoGroup's state (each window's events in a slice) and of
// session counts (Nexmark q11's), with the copy's prefetching and without
// it: ns/key is the whole copy, stop-ns/key the part the barrier stops the
// task for (listing the keys); the rest is made copyStep keys a tick
// afterwards. The encoding, on the coordinator's goroutine, is not timed.
func BenchmarkGenWindowBarrier(b *testing.B) {
	const keys = 200_000
	type barrierOp interface {
		push(*batch[keyed[int64, int64]]) error
		barrier(*barrierMsg, *taskSnapshot) error
		copyRest()
	}
	for _, c := range []struct {
		name string
		op   func(noPrefetch bool) barrierOp
	}{
		{"cogroup", func(noPrefetch bool) barrierOp {
			op, _ := newTestCollectOp(true)
			op.noPrefetch = noPrefetch
			return op
		}},
		{"sessions", func(noPrefetch bool) barrierOp {
			op := newTestSessionOp(true)
			op.noPrefetch = noPrefetch
			return op
		}},
	} {
		for _, pf := range []bool{true, false} {
			name := c.name + "/prefetch"
			if !pf {
				name = c.name + "/no-prefetch"
			}
			b.Run(name, func(b *testing.B) {
				op := c.op(!pf)
				pushScattered(b, op.push, keys)
				var stop time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					s := &taskSnapshot{}
					start := time.Now()
					if err := op.barrier(&barrierMsg{ID: int64(i + 1)}, s); err != nil {
						b.Fatal(err)
					}
					stop += time.Since(start)
					op.copyRest()
					b.StopTimer()
					for _, f := range s.Deferred {
						if _, err := f(); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
				b.ReportMetric(float64(stop.Nanoseconds())/float64(b.N*keys), "stop-ns/key")
			})
		}
	}
}
