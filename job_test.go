package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

type click struct {
	AdID string
	TS   time.Time
}

// clicks returns n clicks with event times disordered by up to jitter.
func clicks(seed uint64, n int, jitter time.Duration) []click {
	r := rand.New(rand.NewPCG(seed, seed))
	base := time.UnixMilli(1_700_000_000_000)
	out := make([]click, n)
	for i := range out {
		d := time.Duration(i)*10*time.Millisecond - time.Duration(r.Int64N(int64(jitter)+1))
		out[i] = click{AdID: fmt.Sprintf("ad-%d", r.IntN(20)), TS: base.Add(d)}
	}
	return out
}

type wkey struct {
	ad    string
	start int64
}

// batchCount is the reference: a count per (ad, minute) over the whole input.
func batchCount(cs []click, size time.Duration) map[wkey]int64 {
	m := map[wkey]int64{}
	for _, c := range cs {
		ms := c.TS.UnixMilli()
		s := ms - ((ms%size.Milliseconds())+size.Milliseconds())%size.Milliseconds()
		m[wkey{c.AdID, s}]++
	}
	return m
}

func runCount(t *testing.T, cs []click, p int, bound time.Duration, opts ...weir.JobOption) (map[wkey]int64, *weir.Job) {
	t.Helper()
	job := weir.NewJob("ad-clicks", append([]weir.JobOption{weir.Parallelism(p)}, opts...)...)
	src := weir.FromSource(job, "clicks", weir.SliceSource(cs),
		weir.BoundedOutOfOrderness(bound, func(c click) time.Time { return c.TS }))
	perAd := weir.KeyBy(src, func(c click) string { return c.AdID })
	var counts *weir.Stream[weir.WindowResult[string, int64]] = weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[click]())
	out := weir.Collect(counts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[wkey]int64{}
	for _, r := range out.Items() {
		k := wkey{r.Key, r.Start.UnixMilli()}
		if _, dup := got[k]; dup {
			t.Fatalf("window %v emitted twice", k)
		}
		if r.End.Sub(r.Start) != time.Minute {
			t.Fatalf("window %v has length %v", k, r.End.Sub(r.Start))
		}
		got[k] = r.Value
	}
	return got, job
}

func TestTumblingCountEqualsBatchAtAnyParallelism(t *testing.T) {
	cs := clicks(1, 50_000, 5*time.Second)
	want := batchCount(cs, time.Minute)
	for _, p := range []int{1, 3} {
		for _, bs := range []int{1, 7, 1024} {
			t.Run(fmt.Sprintf("p=%d/batch=%d", p, bs), func(t *testing.T) {
				got, job := runCount(t, cs, p, 5*time.Second, weir.BatchSize(bs))
				diff(t, got, want)
				if d := job.Metrics().Sum(lateDropped); d != 0 {
					t.Fatalf("%d events dropped as late; disorder is within the bound", d)
				}
			})
		}
	}
}

func lateDropped(o *weir.OperatorMetrics) int64 { return o.LateDropped }

func diff(t *testing.T, got, want map[wkey]int64) {
	t.Helper()
	diffCounts(t, "", got, want)
}

// diffCounts fails t, saying what, with the first keys (windows) whose
// counts in got and want differ.
func diffCounts[K comparable](t *testing.T, what string, got, want map[K]int64) {
	t.Helper()
	var bad []string
	for k, v := range want {
		if got[k] != v {
			bad = append(bad, fmt.Sprintf("%v: got %d want %d", k, got[k], v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, fmt.Sprintf("%v: got %d, not expected", k, v))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		if what != "" {
			what += ": "
		}
		t.Fatalf("%s%d windows differ, first: %v", what, len(bad), bad[:min(len(bad), 10)])
	}
}
