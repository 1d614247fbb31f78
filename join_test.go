package weir_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// jev is an event of either side of a join test.
type jev struct {
	K int
	T int64 // ms
	V int
}

func jevTime(e jev) time.Time { return time.UnixMilli(e.T) }

// joinInputs makes n events per side over keys [0, keys), with times
// increasing by 0..step ms, so that neither source ever has a late event
// and the joins' results are exactly the model's.
func joinInputs(seed uint64, n, keys int, step int64) (l, r []jev) {
	rng := newRand(seed)
	gen := func(base int) []jev {
		evs := make([]jev, n)
		t := int64(1_000_000)
		for i := range evs {
			t += rng.Int64N(step + 1)
			evs[i] = jev{K: rng.IntN(keys), T: t, V: base + i}
		}
		return evs
	}
	return gen(0), gen(100_000)
}

// runJoin builds a job with the two inputs as sources, lets build add the
// join, and returns the sorted results.
func runJoin[OUT any](t *testing.T, p int, l, r []jev, build func(l, r *weir.KeyedStream[int, jev]) *weir.Stream[OUT], render func(OUT) string) []string {
	t.Helper()
	job := weir.NewJob("join", weir.Parallelism(p), weir.BatchSize(7))
	ls := weir.FromSource(job, "left", weir.SliceSource(l), weir.MonotonousTimestamps(jevTime))
	rs := weir.FromSource(job, "right", weir.SliceSource(r), weir.MonotonousTimestamps(jevTime))
	key := func(e jev) int { return e.K }
	out := weir.Collect(build(weir.KeyBy(ls, key), weir.KeyBy(rs, key)))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range out.Items() {
		got = append(got, render(v))
	}
	slices.Sort(got)
	return got
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the model expects no output; the test input is too sparse", what)
	}
	if !slices.Equal(got, want) {
		n := 0
		for i := 0; i < len(got) || i < len(want); i++ {
			var g, w string
			if i < len(got) {
				g = got[i]
			}
			if i < len(want) {
				w = want[i]
			}
			if g != w && n < 5 {
				t.Errorf("%s: line %d: got %q, want %q", what, i, g, w)
				n++
			}
		}
		t.Fatalf("%s: got %d results, want %d", what, len(got), len(want))
	}
}

func pair(l, r jev) string { return fmt.Sprintf("k%d l%d r%d", l.K, l.V, r.V) }

func TestWindowJoinMatchesModel(t *testing.T) {
	l, r := joinInputs(1, 600, 7, 40)
	for _, w := range []weir.Windows{weir.Tumbling(time.Second), weir.Hopping(2*time.Second, 500*time.Millisecond)} {
		size, slide := int64(1000), int64(1000)
		if w.String() != weir.Tumbling(time.Second).String() {
			size, slide = 2000, 500
		}
		var want []string
		for _, a := range l {
			for _, b := range r {
				if a.K != b.K {
					continue
				}
				// every window [s, s+size) holding both
				for s := a.T - a.T%slide; s > a.T-size; s -= slide {
					if b.T >= s && b.T < s+size {
						want = append(want, fmt.Sprintf("%s w%d", pair(a, b), s))
					}
				}
			}
		}
		slices.Sort(want)
		for _, p := range []int{1, 2, 4} {
			got := runJoin(t, p, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
				return weir.WindowJoin(ls, rs, w, func(k int, win weir.WindowInfo, a, b jev) string {
					if a.K != k || b.K != k {
						t.Errorf("pair %v %v under key %d", a, b, k)
					}
					return fmt.Sprintf("%s w%d", pair(a, b), win.Start.UnixMilli())
				})
			}, func(s string) string { return s })
			sameLines(t, fmt.Sprintf("%v p=%d", w, p), got, want)
		}
	}
}

func TestCoGroupSeesBothSidesAndEmptySides(t *testing.T) {
	l, r := joinInputs(2, 300, 40, 30)
	type cnt struct{ l, r int }
	model := map[string]*cnt{}
	for _, e := range l {
		k := fmt.Sprintf("k%d w%d", e.K, e.T-e.T%1000)
		if model[k] == nil {
			model[k] = &cnt{}
		}
		model[k].l++
	}
	for _, e := range r {
		k := fmt.Sprintf("k%d w%d", e.K, e.T-e.T%1000)
		if model[k] == nil {
			model[k] = &cnt{}
		}
		model[k].r++
	}
	var want []string
	empty := 0
	for k, c := range model {
		want = append(want, fmt.Sprintf("%s l%d r%d", k, c.l, c.r))
		if c.l == 0 || c.r == 0 {
			empty++
		}
	}
	if empty == 0 {
		t.Fatal("test input has no one-sided window")
	}
	slices.Sort(want)
	got := runJoin(t, 2, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
		return weir.CoGroup(ls, rs, weir.Tumbling(time.Second), func(k int, win weir.WindowInfo, a, b []jev, emit func(string)) error {
			emit(fmt.Sprintf("k%d w%d l%d r%d", k, win.Start.UnixMilli(), len(a), len(b)))
			return nil
		})
	}, func(s string) string { return s })
	sameLines(t, "cogroup", got, want)
}

func TestIntervalJoinMatchesModel(t *testing.T) {
	l, r := joinInputs(3, 500, 5, 30)
	for _, b := range []struct{ lo, hi time.Duration }{
		{-200 * time.Millisecond, 300 * time.Millisecond},
		{0, 0},
		{100 * time.Millisecond, 400 * time.Millisecond},
		{-500 * time.Millisecond, -50 * time.Millisecond},
	} {
		lo, hi := b.lo.Milliseconds(), b.hi.Milliseconds()
		var want []string
		for _, a := range l {
			for _, c := range r {
				if a.K == c.K && c.T >= a.T+lo && c.T <= a.T+hi {
					want = append(want, fmt.Sprintf("%s t%d", pair(a, c), max(a.T, c.T)))
				}
			}
		}
		slices.Sort(want)
		for _, p := range []int{1, 3} {
			type res struct {
				s string
			}
			got := runJoin(t, p, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
				return weir.IntervalJoin(ls, rs, b.lo, b.hi, func(k int, a, c jev) string {
					return fmt.Sprintf("%s t%d", pair(a, c), max(a.T, c.T))
				})
			}, func(s string) string { return s })
			sameLines(t, fmt.Sprintf("[%v,%v] p=%d", b.lo, b.hi, p), got, want)
		}
	}
}

// TestIntervalJoinStampsPairsWithTheLaterTime checks the output timestamps
// through a downstream window: each pair counts in the window of the later
// of its two times.
func TestIntervalJoinStampsPairsWithTheLaterTime(t *testing.T) {
	l, r := joinInputs(4, 300, 3, 50)
	want := map[int64]int{}
	for _, a := range l {
		for _, c := range r {
			if a.K == c.K && c.T >= a.T-700 && c.T <= a.T+700 {
				m := max(a.T, c.T)
				want[m-m%1000]++
			}
		}
	}
	var wantLines []string
	for w, n := range want {
		wantLines = append(wantLines, fmt.Sprintf("w%d n%d", w, n))
	}
	slices.Sort(wantLines)
	got := runJoin(t, 2, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
		pairs := weir.IntervalJoin(ls, rs, -700*time.Millisecond, 700*time.Millisecond, func(k int, a, c jev) int { return 0 })
		counts := weir.Aggregate(weir.Window(weir.KeyBy(pairs, func(int) int { return 0 }), weir.Tumbling(time.Second)), weir.Count[int]())
		return weir.Map(counts, func(w weir.WindowResult[int, int64]) string {
			return fmt.Sprintf("w%d n%d", w.Start.UnixMilli(), w.Value)
		})
	}, func(s string) string { return s })
	sameLines(t, "windowed pairs", got, wantLines)
}

func TestIntervalJoinDropsAndCountsLateEvents(t *testing.T) {
	// Both sides come from one source, so the join sees the records and
	// the watermark in the source's order whatever the timing: with
	// monotonous timestamps the watermark is 8999 after the events at 9000,
	// and the right event at 1000 that follows is late. It must not join,
	// though a left event (l1 at 1000) matches it.
	type tev struct {
		jev
		Right bool
	}
	in := []tev{
		{jev{K: 1, T: 1000, V: 1}, false}, {jev{K: 1, T: 5000, V: 2}, false}, {jev{K: 1, T: 9000, V: 3}, false},
		{jev{K: 1, T: 9000, V: 10}, true}, {jev{K: 1, T: 1000, V: 11}, true},
	}
	job := weir.NewJob("late")
	src := weir.FromSource(job, "in", weir.SliceSource(in), weir.MonotonousTimestamps(func(e tev) time.Time { return time.UnixMilli(e.T) }))
	side := func(right bool) *weir.KeyedStream[int, jev] {
		s := weir.FlatMap(src, func(e tev, emit func(jev)) {
			if e.Right == right {
				emit(e.jev)
			}
		})
		return weir.KeyBy(s, func(e jev) int { return e.K })
	}
	out := weir.Collect(weir.IntervalJoin(side(false), side(true), 0, 0, func(k int, a, c jev) string { return pair(a, c) }))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	if !slices.Equal(got, []string{"k1 l3 r10"}) {
		t.Fatalf("got %v", got)
	}
	if n := job.Metrics().Sum(lateDropped); n != 1 {
		t.Fatalf("late dropped = %d, want 1", n)
	}
}

func TestRegularJoinMatchesModel(t *testing.T) {
	l, r := joinInputs(5, 300, 11, 20)
	pred := func(a, b jev) bool { return (a.V+b.V)%3 != 0 }
	var want []string
	for _, a := range l {
		for _, b := range r {
			if a.K == b.K && pred(a, b) {
				want = append(want, pair(a, b))
			}
		}
	}
	slices.Sort(want)
	for _, p := range []int{1, 2} {
		got := runJoin(t, p, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
			return weir.Join(ls, rs, func(k int, a, b jev) (string, bool) { return pair(a, b), pred(a, b) })
		}, func(s string) string { return s })
		sameLines(t, fmt.Sprintf("p=%d", p), got, want)
	}
}

// view applies a changelog to a multiset and fails on retracting a row
// that is not there.
func view[T comparable](t *testing.T, changes []weir.Change[T]) map[T]int {
	t.Helper()
	v := map[T]int{}
	for _, c := range changes {
		if c.Adds() {
			v[c.Value]++
			continue
		}
		if v[c.Value] == 0 {
			t.Fatalf("retraction of %v, which is not in the view", c.Value)
		}
		v[c.Value]--
		if v[c.Value] == 0 {
			delete(v, c.Value)
		}
	}
	return v
}

// TestAggregateChangesAndJoinChanges builds SQL's
//
//	SELECT l.k, l.mx, r.mx FROM (SELECT k, MAX(v) mx FROM L GROUP BY k) l
//	JOIN (SELECT k, MAX(v) mx FROM R GROUP BY k) r ON l.k = r.k
//
// over inputs with retractions and checks the final view against the
// batch answer, and every changelog for consistency.
func TestAggregateChangesAndJoinChanges(t *testing.T) {
	type row struct{ K, V int }
	rng := newRand(6)
	mk := func() ([]weir.Change[row], map[int][]int) {
		var ch []weir.Change[row]
		present := map[int][]int{}
		for i := range 2000 {
			k := rng.IntN(13)
			if vs := present[k]; len(vs) > 0 && rng.IntN(3) == 0 {
				j := rng.IntN(len(vs))
				ch = append(ch, weir.Change[row]{Kind: weir.Delete, Value: row{k, vs[j]}})
				present[k] = append(vs[:j], vs[j+1:]...)
				continue
			}
			v := rng.IntN(50) + i%7
			ch = append(ch, weir.Change[row]{Kind: weir.Insert, Value: row{k, v}})
			present[k] = append(present[k], v)
		}
		return ch, present
	}
	lch, lfinal := mk()
	rch, rfinal := mk()
	want := map[string]int{}
	for k, lv := range lfinal {
		rv := rfinal[k]
		if len(lv) == 0 || len(rv) == 0 {
			continue
		}
		want[fmt.Sprintf("k%d %d %d", k, slices.Max(lv), slices.Max(rv))]++
	}
	for _, p := range []int{1, 2, 4} {
		job := weir.NewJob("changes", weir.Parallelism(p), weir.BatchSize(5))
		key := func(c weir.Change[row]) int { return c.Value.K }
		maxOf := func(ch []weir.Change[row], name string) *weir.KeyedStream[int, weir.Change[weir.KeyValue[int, int]]] {
			s := weir.FromSource(job, name, weir.SliceSource(ch), weir.NoWatermarks[weir.Change[row]]())
			agg := weir.AggregateChanges(weir.KeyBy(s, key), weir.MaxRetract(func(r row) int { return r.V }), weir.Name("max-"+name))
			return weir.KeyBy(agg, func(c weir.Change[weir.KeyValue[int, int]]) int { return c.Value.Key })
		}
		joined := weir.JoinChanges(maxOf(lch, "l"), maxOf(rch, "r"), func(k int, a, b weir.KeyValue[int, int]) (string, bool) {
			return fmt.Sprintf("k%d %d %d", k, a.Value, b.Value), true
		})
		out := weir.Collect(joined)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := view(t, out.Items())
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("p=%d: final view\n got %v\nwant %v", p, got, want)
		}
	}
}

func TestAggregateChangesEmitsUpdatesOnlyOnChange(t *testing.T) {
	ins := func(v int) weir.Change[int] { return weir.Change[int]{Kind: weir.Insert, Value: v} }
	del := func(v int) weir.Change[int] { return weir.Change[int]{Kind: weir.Delete, Value: v} }
	in := []weir.Change[int]{ins(5), ins(3), ins(9), ins(9), del(9), del(9), del(5), del(3), ins(4)}
	job := weir.NewJob("agg")
	s := weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[weir.Change[int]]())
	out := weir.Collect(weir.AggregateChanges(weir.KeyBy(s, func(weir.Change[int]) string { return "k" }), weir.MaxRetract(func(v int) int { return v })))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range out.Items() {
		got = append(got, fmt.Sprintf("%v%d", c.Kind, c.Value.Value))
	}
	want := []string{"+I5", "-U5", "+U9", "-U9", "+U5", "-U5", "+U3", "-D3", "+I4"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestRetractingAggregates(t *testing.T) {
	avg := weir.AvgRetract(func(v int64) int64 { return v })
	a := avg.Create()
	for _, v := range []int64{10, 11, 13} {
		a = avg.Add(a, v)
	}
	if got := avg.Result(a); got != 11 { // 34/3 truncated
		t.Fatalf("avg = %d, want 11", got)
	}
	a = avg.Retract(a, 13)
	if got := avg.Result(a); got != 10 { // 21/2 truncated
		t.Fatalf("avg after retract = %d, want 10", got)
	}
	mn := weir.MinRetract(func(v int) int { return v })
	m := mn.Create()
	for _, v := range []int{4, 2, 2, 8} {
		m = mn.Add(m, v)
	}
	m = mn.Retract(m, 2)
	if mn.Result(m) != 2 {
		t.Fatal("min must stay 2 while one 2 is left")
	}
	m = mn.Retract(m, 2)
	if mn.Result(m) != 4 {
		t.Fatalf("min = %d, want 4", mn.Result(m))
	}
}

// TestJoinsRecoverExactlyOnce runs a window join, an interval join and a
// regular join in one checkpointed job, fails it once after checkpoints
// completed, and compares the committed output with a failure-free run at
// another parallelism.
func TestJoinsRecoverExactlyOnce(t *testing.T) {
	l, r := joinInputs(7, 1500, 9, 20)
	build := func(p int, fail bool, failed *atomic.Bool, sink *memSink) *weir.Job {
		job := weir.NewJob("joins", weir.Parallelism(p), weir.BatchSize(16), weir.Checkpointing(5*time.Millisecond, t.TempDir()),
			weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 10, Interval: time.Hour}))
		var lsrc weir.Source[jev] = weir.SliceSource(l)
		if fail {
			// A checkpoint after every 200 left events: at least two
			// complete before the failure, however slow the machine.
			lsrc = weirtest.CheckpointEvery(func() *weir.Job { return job }, lsrc.(weir.RestorableSource[jev]), 200)
		}
		ls := weir.FromSource(job, "left", lsrc, weir.MonotonousTimestamps(jevTime))
		ls = weir.Map(ls, func(e jev) jev {
			if fail && !failed.Load() {
				if e.V >= 900 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
					panic("injected failure")
				}
			}
			return e
		})
		rs := weir.FromSource(job, "right", weir.SliceSource(r), weir.MonotonousTimestamps(jevTime))
		key := func(e jev) int { return e.K }
		lk, rk := weir.KeyBy(ls, key), weir.KeyBy(rs, key)
		wj := weir.WindowJoin(lk, rk, weir.Tumbling(time.Second), func(k int, w weir.WindowInfo, a, b jev) string {
			return "w " + pair(a, b)
		}, weir.UID("wj"))
		ij := weir.IntervalJoin(lk, rk, -100*time.Millisecond, 100*time.Millisecond, func(k int, a, b jev) string {
			return "i " + pair(a, b)
		}, weir.UID("ij"))
		rj := weir.Join(lk, rk, func(k int, a, b jev) (string, bool) { return "r " + pair(a, b), (a.V+b.V)%17 == 0 }, weir.UID("rj"))
		weir.To(weir.Union(wj, ij, rj), weir.Sink[string](sink), weir.UID("sink"))
		return job
	}
	want := newMemSink()
	if err := build(2, false, nil, want).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []int{1, 3} {
		got := newMemSink()
		var failed atomic.Bool
		job := build(p, true, &failed, got)
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		if !failed.Load() {
			t.Fatalf("p=%d: the failure was not injected", p)
		}
		if n := job.Metrics().Checkpoints.Restarts; n != 1 {
			t.Fatalf("p=%d: %d restarts, want 1", p, n)
		}
		g, w := got.output(), want.output()
		if len(w) == 0 || !slices.Equal(g, w) {
			t.Fatalf("p=%d: %d results after a failure, %d without", p, len(g), len(w))
		}
	}
}

// TestStateRetentionExpiresJoinAndGroupState runs a regular join and a
// group aggregate under a clock that moves an hour on every reading, so
// that with StateRetention(1m) every element has expired before the next
// record of its key is processed: nothing joins, and every change starts
// its group over with an Insert. Without it, every pair joins.
func TestStateRetentionExpiresJoinAndGroupState(t *testing.T) {
	l, r := joinInputs(8, 100, 3, 20)
	var ticks atomic.Int64
	hourly := weir.Clock(func() time.Time { return time.Unix(0, 0).Add(time.Duration(ticks.Add(1)) * time.Hour) })
	run := func(opts ...weir.RetentionOption) (pairs int, kinds map[weir.ChangeKind]int) {
		job := weir.NewJob("retention", hourly)
		ls := weir.FromSource(job, "left", weir.SliceSource(l), weir.MonotonousTimestamps(jevTime))
		rs := weir.FromSource(job, "right", weir.SliceSource(r), weir.MonotonousTimestamps(jevTime))
		key := func(e jev) int { return e.K }
		joined := weir.Collect(weir.Join(weir.KeyBy(ls, key), weir.KeyBy(rs, key), func(k int, a, b jev) (string, bool) { return pair(a, b), true }, opts...))
		agg := weir.Collect(weir.AggregateChanges(weir.KeyBy(weir.Changes(ls), func(c weir.Change[jev]) int { return c.Value.K }),
			weir.CountRetract[jev](), opts...))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		kinds = map[weir.ChangeKind]int{}
		for _, c := range agg.Items() {
			kinds[c.Kind]++
		}
		return len(joined.Items()), kinds
	}
	pairs, kinds := run()
	if pairs == 0 || kinds[weir.Insert] != 3 || kinds[weir.UpdateAfter] != len(l)-3 {
		t.Fatalf("without retention: %d pairs, changes %v; want pairs and 3 groups updated", pairs, kinds)
	}
	pairs, kinds = run(weir.StateRetention(time.Minute))
	if pairs != 0 || kinds[weir.Insert] != len(l) || kinds[weir.UpdateAfter] != 0 {
		t.Fatalf("with retention: %d pairs, changes %v; want none, and an Insert per record", pairs, kinds)
	}
}
