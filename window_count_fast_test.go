package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

type iev struct {
	Key int64
	TS  int64
}

// runCountAgg counts iev per key and window with agg and returns the results
// as text (in emission order at parallelism 1, sorted otherwise) and the
// number of late events dropped.
func runCountAgg(t *testing.T, evs []iev, w weir.Windows, agg weir.AggregateFunction[iev, int64, int64], p, bs int) ([]string, int64) {
	t.Helper()
	job := weir.NewJob("count", weir.Parallelism(p), weir.BatchSize(bs))
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e iev) time.Time { return time.UnixMilli(e.TS) }))
	out := weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e iev) int64 { return e.Key }), w), agg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range out.Items() {
		rows = append(rows, fmt.Sprintf("%d [%d,%d) %d %v", r.Key, r.Start.UnixMilli(), r.End.UnixMilli(), r.Value, r.Kind))
	}
	if p > 1 {
		slices.Sort(rows)
	}
	return rows, job.Metrics().Sum(lateDropped)
}

// The aligned window operator increments Count's accumulator in place
// instead of calling the AggregateFunction; a user-written count (which
// takes the generic path) must give the same results in the same order and
// drop the same events: tumbling and hopping windows, int64 keys over the
// whole range, disorder beyond the bound (late drops), several parallelisms
// and batch sizes.
func TestCountFastPathMatchesGeneric(t *testing.T) {
	userCount := weir.AggregateFuncs[iev, int64, int64]{
		AddFn:    func(a int64, _ iev) int64 { return a + 1 },
		MergeFn:  func(a, b int64) int64 { return a + b },
		ResultFn: func(a int64) int64 { return a },
	}
	r := rand.New(rand.NewPCG(3, 4))
	keys := []int64{0, -1, 1, 1 << 62, -1 << 63, 1<<63 - 1, 12345}
	evs := make([]iev, 3000)
	ts := int64(-20_000)
	for i := range evs {
		ts += r.Int64N(30)
		d := r.Int64N(200)
		if r.IntN(8) == 0 {
			d = r.Int64N(3000) // late
		}
		evs[i] = iev{Key: keys[r.IntN(len(keys))], TS: ts - d}
	}
	for _, w := range []weir.Windows{weir.Tumbling(time.Second), weir.Hopping(2*time.Second, 500*time.Millisecond)} {
		for _, p := range []int{1, 2} {
			for _, bs := range []int{1, 64} {
				got, gotDropped := runCountAgg(t, evs, w, weir.Count[iev](), p, bs)
				want, wantDropped := runCountAgg(t, evs, w, userCount, p, bs)
				if gotDropped == 0 {
					t.Fatalf("%v p%d b%d: no late events: the test does not reach the late path", w, p, bs)
				}
				if gotDropped != wantDropped || !slices.Equal(got, want) {
					t.Fatalf("%v p%d b%d: Count gave %d results (%d dropped), the generic count %d (%d dropped)\nfirst: %v\nwant:  %v",
						w, p, bs, len(got), gotDropped, len(want), wantDropped, got[:min(5, len(got))], want[:min(5, len(want))])
				}
			}
		}
	}
}
