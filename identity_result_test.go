package weir_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// sumPair is an accumulator that is also the result: a count and a sum.
type sumPair struct{ N, Sum int64 }

// identAgg sums ev timestamps per key. Its Result returns the accumulator
// and counts its calls; ident says whether it also says IdentityResult.
type identAgg struct{ calls *atomic.Int64 }

func (identAgg) Create() sumPair { return sumPair{} }
func (identAgg) Add(a sumPair, e ev) sumPair {
	return sumPair{a.N + 1, a.Sum + e.TS}
}
func (identAgg) Merge(a, b sumPair) sumPair { return sumPair{a.N + b.N, a.Sum + b.Sum} }
func (g identAgg) Result(a sumPair) sumPair {
	g.calls.Add(1)
	return a
}

type identMarked struct{ identAgg }

func (identMarked) IdentityResult() {}

// markedNotIdentity says IdentityResult but its accumulator is not its
// result type: the marker must be ignored and Result called.
type markedNotIdentity struct{ calls *atomic.Int64 }

func (markedNotIdentity) Create() int64           { return 0 }
func (markedNotIdentity) Add(a int64, _ ev) int64 { return a + 1 }
func (markedNotIdentity) Merge(a, b int64) int64  { return a + b }
func (g markedNotIdentity) Result(a int64) float64 {
	g.calls.Add(1)
	return float64(a) / 2
}
func (markedNotIdentity) IdentityResult() {}

func runIdent[ACC, OUT any](t *testing.T, evs []ev, w weir.Windows, agg weir.AggregateFunction[ev, ACC, OUT]) map[wkey]OUT {
	t.Helper()
	job := weir.NewJob("ident", weir.Parallelism(2))
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	out := weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w), agg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[wkey]OUT{}
	for _, r := range out.Items() {
		got[wkey{r.Key, r.Start.UnixMilli()}] = r.Value
	}
	return got
}

// An aggregate that says IdentityResult gets the same results as without,
// and a window firing never calls its Result; one whose result type is
// not its accumulator's has the marker ignored.
func TestIdentityResultSkipsResult(t *testing.T) {
	var evs []ev
	for i := range 3000 {
		evs = append(evs, ev{Key: string(rune('a' + i%7)), TS: int64(i * 7)})
	}
	for _, w := range []weir.Windows{weir.Tumbling(time.Second), weir.Hopping(2*time.Second, time.Second), weir.Session(100 * time.Millisecond)} {
		t.Run(w.String(), func(t *testing.T) {
			var plain, marked atomic.Int64
			want := runIdent(t, evs, w, weir.AggregateFunction[ev, sumPair, sumPair](identAgg{&plain}))
			got := runIdent(t, evs, w, weir.AggregateFunction[ev, sumPair, sumPair](identMarked{identAgg{&marked}}))
			if len(want) == 0 || plain.Load() == 0 {
				t.Fatalf("%d windows, %d Result calls without the marker", len(want), plain.Load())
			}
			if len(got) != len(want) {
				t.Fatalf("%d windows with the marker, %d without", len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("window %v: %+v with the marker, %+v without", k, got[k], v)
				}
			}
			if n := marked.Load(); n != 0 {
				t.Fatalf("Result called %d times with IdentityResult", n)
			}
			var other atomic.Int64
			halves := runIdent(t, evs, w, weir.AggregateFunction[ev, int64, float64](markedNotIdentity{&other}))
			if other.Load() == 0 {
				t.Fatal("IdentityResult with a result type unlike the accumulator's skipped Result")
			}
			for k, v := range want {
				if halves[k] != float64(v.N)/2 {
					t.Fatalf("window %v: %v, want %v", k, halves[k], float64(v.N)/2)
				}
			}
		})
	}
}
