package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestTemporalJoinProcTimeJoinsTheCurrentRow runs the processing-time
// temporal join's function over one keyed input of both sides, so that it
// sees them in exactly the input's order (the public operator merges two
// channels, whose interleaving is up to timing): each probe joins the row
// as it is when the probe arrives.
func TestTemporalJoinProcTimeJoinsTheCurrentRow(t *testing.T) {
	type in = tagged[string, Change[int]]
	probe := func(k string) in { return in{Left: k} }
	ch := func(kind ChangeKind, v int) in { return in{IsRight: true, Right: Change[int]{kind, v}} }
	// keys: probes name theirs; rows of key a are below 20, of b above.
	evs := []in{
		probe("a1"), ch(Insert, 10), probe("a2"), ch(Insert, 20),
		ch(UpdateBefore, 10), ch(UpdateAfter, 11), probe("a3"), probe("b4"), ch(Delete, 20), probe("b5"),
	}
	key := func(e in) string {
		if !e.IsRight {
			return e.Left[:1]
		}
		if e.Right.Value >= 20 {
			return "b"
		}
		return "a"
	}
	job := NewJob("proctime", Parallelism(2))
	src := FromSource(job, "in", SliceSource(evs), NoWatermarks[in]())
	fn := func(k string, p string, r Opt[int]) string {
		if v, ok := r.Get(); ok {
			return fmt.Sprintf("%s r%d", p, v)
		}
		return p + " r-"
	}
	out := Collect(ProcessWith(KeyBy(src, key), func() KeyedProcessFunction[string, in, string] {
		return &procTemporalJoin[string, string, int, string]{fn: fn}
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	want := []string{"a1 r-", "a2 r10", "a3 r11", "b4 r20", "b5 r-"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestTemporalJoinLateProbeAndSameTimeVersion runs the event-time temporal
// join's function over one keyed input of both sides with monotonous
// timestamps, so that every record meets exactly the watermark of its
// place in the input: a probe sees a version of its own time even when
// that comes after the watermark reached the probe's time, and a
// probe below the watermark (whose version may already be pruned) is
// dropped and counted.
func TestTemporalJoinLateProbeAndSameTimeVersion(t *testing.T) {
	type in = tagged[int, Change[int]]
	type tev struct {
		T int64
		E in
	}
	probe := func(ts int64, v int) tev { return tev{ts, in{Left: v}} }
	version := func(ts int64, v int) tev { return tev{ts, in{IsRight: true, Right: Change[int]{UpdateAfter, v}}} }
	evs := []tev{
		// The version at 3000 comes after one at 3001, when the watermark
		// is 3000: it is not late, and the probe at 3000 must wait for it.
		version(1000, 1), version(2000, 2), probe(3000, 30), version(3001, 4), version(3000, 3),
		probe(5000, 50), version(6000, 6), probe(1500, 15), probe(9000, 90),
	}
	job := NewJob("late-probe")
	src := FromSource(job, "in", SliceSource(evs), MonotonousTimestamps(func(e tev) time.Time { return time.UnixMilli(e.T) }))
	ks := KeyBy(Map(src, func(e tev) in { return e.E }), func(in) string { return "k" })
	fn := func(_ string, p int, r Opt[int]) string { return fmt.Sprintf("p%d r%d", p, r.V) }
	joined := ProcessWith(ks, func() KeyedProcessFunction[string, in, string] {
		return &temporalJoin[string, int, int, string]{fn: fn}
	})
	out := Collect(ProcessWith(KeyBy(joined, func(string) int { return 0 }), func() KeyedProcessFunction[int, string, string] {
		return ProcessFunc[int, string, string](func(ctx *KeyedContext[int, string], s string) error {
			ctx.Emit(fmt.Sprintf("%s @%d", s, ctx.Timestamp().UnixMilli()))
			return nil
		})
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	want := []string{"p30 r3 @3000", "p50 r4 @5000", "p90 r6 @9000"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if late := job.Metrics().Sum(func(o *OperatorMetrics) int64 { return o.LateDropped }); late != 1 {
		t.Fatalf("late dropped = %d, want 1", late)
	}
}
