package weir_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/weirtest"

	"github.com/weirstream/weir"
)

// TestTableOperatorsRecoverExactlyOnce runs a full outer interval join, a
// temporal join, NormalizeChanges and Fold in one checkpointed job, fails
// it once after checkpoints completed, and compares the committed output
// with the brute-force models: every pair, outer row, temporal result and
// change exactly once, at parallelism 1 to 4, on the heap and on Pebble.
func TestTableOperatorsRecoverExactlyOnce(t *testing.T) {
	l, r := joinInputs(51, 1200, 9, 20)
	vs := versionsInput(52, 600, 9, 40)

	var want []string
	for _, s := range outerModel(l, r, -60, 80, weir.FullOuter) {
		want = append(want, "o "+s[:strings.LastIndex(s, " @")])
	}
	for _, s := range temporalModel(l, vs) {
		want = append(want, "t "+s[:strings.LastIndex(s, " @")])
	}
	ups := make([]weir.Change[urow], len(vs))
	for i, v := range vs {
		ups[i] = weir.Change[urow]{Kind: v.C.Kind, Value: urow{v.C.Value.K, v.C.Value.V}}
	}
	per, _ := normalizeModel(ups)
	for k, cs := range per {
		for _, c := range cs {
			want = append(want, fmt.Sprintf("n k%d %s", k, c))
		}
	}
	sums := map[int]int{}
	for _, e := range l {
		old, had := sums[e.K]
		sums[e.K] = old + e.V
		if had {
			want = append(want, fmt.Sprintf("f k%d -U%d", e.K, old), fmt.Sprintf("f k%d +U%d", e.K, old+e.V))
		} else {
			want = append(want, fmt.Sprintf("f k%d +I%d", e.K, e.V))
		}
	}
	slices.Sort(want)

	build := func(p int, failed *atomic.Bool, sink *memSink, state weir.JobOption) *weir.Job {
		job := weir.NewJob("tables", weir.Parallelism(p), weir.BatchSize(16), weir.Checkpointing(5*time.Millisecond, t.TempDir()), state,
			weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 10, Interval: time.Hour}))
		// A checkpoint after every 200 left events: at least two complete
		// before the failure, however slow the machine.
		lsrc := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(l).(weir.RestorableSource[jev]), 200)
		ls := weir.FromSource(job, "left", weir.Source[jev](lsrc), weir.MonotonousTimestamps(jevTime))
		ls = weir.Map(ls, func(e jev) jev {
			if !failed.Load() {
				if e.V >= 700 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
					panic("injected failure")
				}
			}
			return e
		})
		rs := weir.FromSource(job, "right", weir.SliceSource(r), weir.MonotonousTimestamps(jevTime))
		vsrc := weir.FromSource(job, "versions", weir.SliceSource(vs), weir.MonotonousTimestamps(func(v vrec) time.Time { return time.UnixMilli(v.C.Value.T) }))
		key := func(e jev) int { return e.K }
		lk, rk := weir.KeyBy(ls, key), weir.KeyBy(rs, key)
		changes := weir.Map(vsrc, func(v vrec) weir.Change[jev] { return v.C })
		vk := weir.KeyBy(changes, func(c weir.Change[jev]) int { return c.Value.K })

		outer := weir.OuterIntervalJoin(lk, rk, -60*time.Millisecond, 80*time.Millisecond, weir.FullOuter, func(k int, a, b weir.Opt[jev]) string {
			return "o " + outerRender(k, a, b)
		}, weir.UID("outer"))
		temporal := weir.TemporalJoin(lk, vk, func(k int, p jev, v weir.Opt[jev]) string {
			return fmt.Sprintf("t k%d p%d r%s", k, p.V, optJev(v))
		}, weir.UID("temporal"))
		urows := weir.Map(changes, func(c weir.Change[jev]) weir.Change[urow] {
			return weir.Change[urow]{Kind: c.Kind, Value: urow{c.Value.K, c.Value.V}}
		})
		norm := weir.Map(weir.NormalizeChanges(weir.KeyBy(urows, func(c weir.Change[urow]) int { return c.Value.K }), weir.UID("normalize")),
			func(c weir.Change[urow]) string { return fmt.Sprintf("n k%d %v%d", c.Value.K, c.Kind, c.Value.V) })
		folded := weir.Map(weir.Fold(lk, func(_ int, s weir.Opt[int], e jev) (weir.Opt[int], error) {
			return weir.Some(s.V + e.V), nil
		}, weir.UID("fold")), func(c weir.Change[weir.KeyValue[int, int]]) string {
			return fmt.Sprintf("f k%d %v%d", c.Value.Key, c.Kind, c.Value.Value)
		})
		weir.To(weir.Union(outer, temporal, norm, folded), weir.Sink[string](sink), weir.UID("sink"))
		return job
	}
	for _, c := range []struct {
		p     int
		state func() weir.JobOption
	}{
		{1, weir.HeapState}, {2, weir.HeapState}, {3, func() weir.JobOption { return weir.PebbleState(t.TempDir(), 8<<20) }}, {4, weir.HeapState},
	} {
		got := newMemSink()
		var failed atomic.Bool
		job := build(c.p, &failed, got, c.state())
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", c.p, err)
		}
		if !failed.Load() {
			t.Fatalf("p=%d: the failure was not injected", c.p)
		}
		if n := job.Metrics().Checkpoints.Restarts; n != 1 {
			t.Fatalf("p=%d: %d restarts, want 1", c.p, n)
		}
		sameLines(t, fmt.Sprintf("p=%d after a failure", c.p), got.output(), want)
	}
}
