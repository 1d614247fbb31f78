package weir_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// Records out are counted once per record an operator emits, whether its
// output is chained or goes through network writers, and however many
// edges it feeds (Flink's numRecordsOut); a pass-through node (Rebalance)
// is counted by its writer. Before, an operator feeding network edges was
// counted by itself and again by each writer, so the dashboard showed a
// source reading twice as fast as it did.
func TestRecordsOutCountedOnce(t *testing.T) {
	const n = 10_000
	job := weir.NewJob("count-once", weir.Parallelism(2))
	src := weir.FromSource(job, "src", weir.GeneratorSource(weir.GeneratorConfig{Count: n, Splits: 2}, func(i int64, _ *rand.Rand) int64 { return i }),
		weir.MonotonousTimestamps(func(i int64) time.Time { return time.UnixMilli(i) }))
	m := weir.Map(src, func(i int64) int64 { return i }, weir.Name("map"))
	discard := func(context.Context, []int64) error { return nil }
	weir.To(weir.Rebalance(m, weir.Name("spread")), weir.SinkFunc[int64](discard), weir.Name("s1"))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(m, func(i int64) int64 { return i % 7 }), weir.Tumbling(time.Second)),
		weir.Count[int64](), weir.Name("window"))
	weir.To(counts, weir.SinkFunc[weir.WindowResult[int64, int64]](func(context.Context, []weir.WindowResult[int64, int64]) error { return nil }), weir.Name("s2"))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	met := job.Metrics()
	sum := func(name string, f func(*weir.OperatorMetrics) int64) int64 {
		return met.Sum(func(o *weir.OperatorMetrics) int64 {
			if o.Name == name {
				return f(o)
			}
			return 0
		})
	}
	out := func(o *weir.OperatorMetrics) int64 { return o.RecordsOut }
	in := func(o *weir.OperatorMetrics) int64 { return o.RecordsIn }
	for _, c := range []struct {
		what string
		got  int64
	}{
		{"src records out", sum("src", out)},
		{"map records in", sum("map", in)},
		{"map records out", sum("map", out)},
		{"spread records out", sum("spread", out)},
		{"s1 records in", sum("s1", in)},
		{"window records in", sum("window", in)},
	} {
		if c.got != n {
			t.Errorf("%s: %d, want %d", c.what, c.got, n)
		}
	}
	if w, s2 := sum("window", out), sum("s2", in); w != s2 || w == 0 {
		t.Errorf("window records out %d, s2 records in %d: want equal", w, s2)
	}
}
