package nexmark_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// q5's local maximum drops, on each subtask of the count, the counts that
// cannot be a window's maximum: q5-max (one subtask per window) receives a
// few counts per window and subtask, not one per auction. Without it,
// 200,000 events at 10,000/s (20 s of event time) gave q5-max every count,
// 60,695; with it, under 200.
func TestQ5LocalMaxBounded(t *testing.T) {
	job := weir.NewJob("q5-local-max", weir.Parallelism(2))
	src := nexmark.Source(nexmark.GeneratorConfig{Events: 200_000, Seed: 5, EventRate: 10_000, Splits: 2})
	var perSubtask [2]int64 // a writer per sink subtask: no counter shared between goroutines
	out := func(i int) (nexmark.RowWriter, error) { return countRows{&perSubtask[i]}, nil }
	nexmark.Emit(nexmark.Q5(nexmark.Events(job, src)), out)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	n := perSubtask[0] + perSubtask[1]
	met := job.Metrics()
	sum := func(name string, f func(*weir.OperatorMetrics) int64) int64 {
		return met.Sum(func(o *weir.OperatorMetrics) int64 {
			if o.Name == name {
				return f(o)
			}
			return 0
		})
	}
	counts := sum("q5-count", func(o *weir.OperatorMetrics) int64 { return o.RecordsOut })
	maxIn := sum("q5-max", func(o *weir.OperatorMetrics) int64 { return o.RecordsIn })
	t.Logf("%d rows; q5-count emitted %d counts, q5-max received %d", n, counts, maxIn)
	const windows, subtasks, perWindow = 14, 2, 100
	if n < windows {
		t.Fatalf("%d rows, want one or more per window", n)
	}
	if counts < 10*windows*subtasks*perWindow {
		t.Fatalf("q5-count emitted %d counts: too few for the test to tell", counts)
	}
	if maxIn == 0 || maxIn > windows*subtasks*perWindow {
		t.Errorf("q5-max received %d of %d counts for %d windows, want at most %d", maxIn, counts, windows, windows*subtasks*perWindow)
	}
}
