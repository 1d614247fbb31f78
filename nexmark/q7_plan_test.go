package nexmark_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// q7's partial maximum fires a few partials per window, not one per
// auction: q7-pick (one subtask per window) receives at most 512 per
// window plus the boundary bids, however many auctions had bids. With the
// partial maximum keyed by auction, 200,000 events at 10,000/s (20 s of
// event time, ~12,000 auctions) gave q7-pick thousands per window.
func TestQ7PartialsPerWindowBounded(t *testing.T) {
	n, sum := runPlan(t, "q7-partials", func(ev *weir.Stream[nexmark.Event], out nexmark.Output) { nexmark.Emit(nexmark.Q7(ev), out) })
	if n < 2 {
		t.Fatalf("%d rows, want one or more per window", n)
	}
	partials := sum("q7-partial-max", func(o *weir.OperatorMetrics) int64 { return o.RecordsOut })
	picked := sum("q7-pick", func(o *weir.OperatorMetrics) int64 { return o.RecordsIn })
	const windows = 3 // [0,10 s), [10 s, 20 s), and the last event's at 20 s
	if partials == 0 || partials > windows*512 {
		t.Errorf("q7-partial-max sent %d partials for %d windows, want at most %d", partials, windows, windows*512)
	}
	if picked < partials || picked > partials+1000 {
		t.Errorf("q7-pick received %d records, %d partials + the boundary bids", picked, partials)
	}
}

// runPlan runs a query built by build over 200,000 events at 10,000/s
// (20 s of event time) at parallelism 2, and returns the number of rows
// and a sum over the operators named name of a metric f.
func runPlan(t *testing.T, job string, build func(*weir.Stream[nexmark.Event], nexmark.Output)) (rows int64, sum func(name string, f func(*weir.OperatorMetrics) int64) int64) {
	t.Helper()
	j := weir.NewJob(job, weir.Parallelism(2))
	src := nexmark.Source(nexmark.GeneratorConfig{Events: 200_000, Seed: 5, EventRate: 10_000, Splits: 2})
	var perSubtask [2]int64 // a writer per sink subtask: no counter shared between goroutines
	build(nexmark.Events(j, src), func(i int) (nexmark.RowWriter, error) { return countRows{&perSubtask[i]}, nil })
	if err := j.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	met := j.Metrics()
	return perSubtask[0] + perSubtask[1], func(name string, f func(*weir.OperatorMetrics) int64) int64 {
		return met.Sum(func(o *weir.OperatorMetrics) int64 {
			if o.Name == name {
				return f(o)
			}
			return 0
		})
	}
}

type countRows struct{ n *int64 }

func (c countRows) Write(nexmark.Row) error { *c.n++; return nil }
func (c countRows) Close() error            { return nil }
