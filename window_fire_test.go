package weir

import (
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// discardSink counts the records pushed to it.
type discardSink[T any] struct{ n int }

func (s *discardSink[T]) push(b *batch[T]) error                   { s.n += len(b.data); return nil }
func (s *discardSink[T]) finish() error                            { return nil }
func (s *discardSink[T]) barrier(*barrierMsg, *taskSnapshot) error { return nil }

// BenchmarkGenWindowFire is the cost of firing a tumbling window of 100 K
// keys in the general window operator (CoGroup's and ProcessWindow's), per
// key: what every row of Nexmark q8's window waits for.
func BenchmarkGenWindowFire(b *testing.B) {
	const keys = 100_000
	sink := &discardSink[int64]{}
	render := func(emit func(int64), key int64, w *gwin[[]int64, []int64], kind ChangeKind, v []int64) error {
		emit(key + int64(len(v)))
		return nil
	}
	in := newBatch[keyed[int64, int64]](1024)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		op := &genWindowOp[int64, int64, []int64, []int64, int64]{
			winOut: winOut[int64, int64, int64]{out: sink, ob: newBatch[int64](1024), batchSize: 1024, sentWM: watermark.Min, m: &metrics.Operator{}},
			w:      Tumbling(10 * time.Second), agg: readOnlyCollect[int64]{}, trig: EventTimeTrigger(), render: render,
			now: func() int64 { return 0 }, info: opInfo{uid: "c", name: "c", maxP: 128},
		}
		op.init()
		for k := int64(0); k < keys; k++ {
			key := (k * 7919) % keys // arrival order unlike hash order
			in.add(keyed[int64, int64]{hash: uint64(key) * 0x9E3779B97F4A7C15, key: key, val: k}, 1000+k%5000, 0)
			if len(in.data) == cap(in.data) {
				if err := op.push(in); err != nil {
					b.Fatal(err)
				}
				in.reset()
			}
		}
		if err := op.push(in); err != nil {
			b.Fatal(err)
		}
		in.reset()
		b.StartTimer()
		if err := op.advance(10_000); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*keys), "ns/key")
}
