package nexmark_test

import (
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
	n, sum := runPlan(t, "q5-local-max", func(ev *weir.Stream[nexmark.Event], out nexmark.Output) { nexmark.Emit(nexmark.Q5(ev), out) })
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
