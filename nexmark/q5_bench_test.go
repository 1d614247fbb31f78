package nexmark_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// BenchmarkQ5Slides runs q5 over 2,000,000 events at 100,000 events/s of
// event time (20 s: a hopping window closes every 2 s, so the counts'
// firings and q5-max's work are in it, unlike the throughput run of
// `weir bench nexmark`), parallelism 2, no checkpoints. It reports the
// counts q5-max received per window (max-in/window) beside ns/op.
func BenchmarkQ5Slides(b *testing.B) {
	const events, rate = 2_000_000, 100_000
	var maxIn int64
	var rows [2]int64 // a writer per sink subtask
	for range b.N {
		job := weir.NewJob("q5-slides", weir.Parallelism(2))
		src := nexmark.Source(nexmark.GeneratorConfig{Events: events, Seed: 5, EventRate: rate, Splits: 2})
		out := func(i int) (nexmark.RowWriter, error) { return countRows{&rows[i]}, nil }
		nexmark.Emit(nexmark.Q5(nexmark.Events(job, src)), out)
		if err := job.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		maxIn += job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 {
			if o.Name == "q5-max" {
				return o.RecordsIn
			}
			return 0
		})
	}
	const windows = events/rate/2 + 4 // every 2 s, and the windows open at the end
	b.ReportMetric(float64(maxIn)/float64(b.N)/windows, "max-in/window")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/events, "ns/event")
}
