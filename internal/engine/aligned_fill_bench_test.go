package engine

import (
	"testing"
)

// BenchmarkAlignedFillCheckpoints is q5's throughput run in small: the
// windows only fill (one second of event time, every record in five hop
// buckets, new keys all along, each key counted a few times while it is
// recent), with a checkpoint every 200,000 records whose deferred encoding
// runs 20 batches after its barrier, as the coordinator's does while the
// task goes on. Everything is timed: the task's work, the copy-on-write's,
// and the encodings.
func BenchmarkAlignedFillCheckpoints(b *testing.B) {
	const records, every, lag = 2_000_000, 200_000, 20
	for i := 0; i < b.N; i++ {
		op, _ := newTestAlignedOp(true)
		var pending *taskSnapshot
		batches := 0
		for n := int64(0); n < records; n += 1000 {
			bt := newBatch[keyed[int64, int64]](1000)
			for j := n; j < n+1000; j++ {
				k := j/8 - (j%8)*7 // key j/8 and some recent ones
				bt.data = append(bt.data, keyed[int64, int64]{hash: uint64(k) * 0x9e3779b97f4a7c15, key: k})
				bt.ts = append(bt.ts, j*1000/records)
				bt.wm = append(bt.wm, op.wm)
			}
			if err := op.push(bt); err != nil {
				b.Fatal(err)
			}
			batches++
			if pending != nil && batches == lag {
				if err := pending.Resolve(); err != nil {
					b.Fatal(err)
				}
				pending = nil
			}
			if (n+1000)%every == 0 && pending == nil {
				pending = &taskSnapshot{}
				if err := op.barrier(&barrierMsg{ID: n}, pending); err != nil {
					b.Fatal(err)
				}
				batches = 0
			}
		}
		if pending != nil {
			if err := pending.Resolve(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
