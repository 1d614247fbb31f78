package weir_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// stamped renders each record of s with its event time, so that tests can
// check the timestamps operators put on their results.
func stamped[T any](s *weir.Stream[T], render func(T) string) *weir.Stream[string] {
	return weir.Process(weir.KeyBy(s, func(T) int { return 0 }), weir.ProcessFunc[int, T, string](
		func(ctx *weir.KeyedContext[int, string], v T) error {
			ctx.Emit(fmt.Sprintf("%s @%d", render(v), ctx.Timestamp().UnixMilli()))
			return nil
		}), weir.Name("stamp"))
}

func optJev(o weir.Opt[jev]) string {
	if v, ok := o.Get(); ok {
		return fmt.Sprint(v.V)
	}
	return "-"
}

// outerModel is the brute-force outer interval join: every pair in the
// interval stamped with the later time, then every event of a kept side
// without a partner stamped with the last time a partner could have had.
func outerModel(l, r []jev, lo, hi int64, kind weir.OuterJoinKind) []string {
	var want []string
	lm, rm := make([]bool, len(l)), make([]bool, len(r))
	for i, a := range l {
		for j, b := range r {
			if a.K == b.K && b.T >= a.T+lo && b.T <= a.T+hi {
				want = append(want, fmt.Sprintf("k%d l%d r%d @%d", a.K, a.V, b.V, max(a.T, b.T)))
				lm[i], rm[j] = true, true
			}
		}
	}
	if kind == weir.LeftOuter || kind == weir.FullOuter {
		for i, a := range l {
			if !lm[i] {
				want = append(want, fmt.Sprintf("k%d l%d r- @%d", a.K, a.V, max(a.T, a.T+hi)))
			}
		}
	}
	if kind == weir.RightOuter || kind == weir.FullOuter {
		for j, b := range r {
			if !rm[j] {
				want = append(want, fmt.Sprintf("k%d l- r%d @%d", b.K, b.V, max(b.T, b.T-lo)))
			}
		}
	}
	slices.Sort(want)
	return want
}

func outerRender(k int, a weir.Opt[jev], b weir.Opt[jev]) string {
	return fmt.Sprintf("k%d l%s r%s", k, optJev(a), optJev(b))
}

func TestOuterIntervalJoinMatchesModel(t *testing.T) {
	l, r := joinInputs(11, 400, 9, 40)
	cases := []struct {
		lo, hi time.Duration
		kind   weir.OuterJoinKind
	}{
		{-100 * time.Millisecond, 150 * time.Millisecond, weir.LeftOuter},
		{0, 0, weir.FullOuter},
		{50 * time.Millisecond, 300 * time.Millisecond, weir.RightOuter},
		{-400 * time.Millisecond, -30 * time.Millisecond, weir.FullOuter},
	}
	for _, c := range cases {
		want := outerModel(l, r, c.lo.Milliseconds(), c.hi.Milliseconds(), c.kind)
		unmatched := 0
		for _, w := range want {
			if strings.Contains(w, "-") {
				unmatched++
			}
		}
		if unmatched == 0 || unmatched == len(want) {
			t.Fatalf("%v: test input has %d of %d outer rows; want some of both", c, unmatched, len(want))
		}
		for p := 1; p <= 4; p++ {
			got := runJoin(t, p, l, r, func(ls, rs *weir.KeyedStream[int, jev]) *weir.Stream[string] {
				return stamped(weir.OuterIntervalJoin(ls, rs, c.lo, c.hi, c.kind, outerRender), func(s string) string { return s })
			}, func(s string) string { return s })
			sameLines(t, fmt.Sprintf("%v [%v,%v] p=%d", c.kind, c.lo, c.hi, p), got, want)
		}
	}
}

func TestOuterIntervalJoinRejectsBadArguments(t *testing.T) {
	for _, c := range []struct {
		lo, hi time.Duration
		kind   weir.OuterJoinKind
	}{{0, time.Second, 0}, {time.Second, 0, weir.LeftOuter}} {
		job := weir.NewJob("bad")
		s := weir.KeyBy(weir.FromSource(job, "in", weir.SliceSource([]jev{{}}), weir.MonotonousTimestamps(jevTime)), func(e jev) int { return e.K })
		weir.Collect(weir.OuterIntervalJoin(s, s, c.lo, c.hi, c.kind, outerRender))
		if err := job.Run(context.Background()); err == nil {
			t.Fatalf("%v [%v,%v] was accepted", c.kind, c.lo, c.hi)
		}
	}
}

// Example_clickThroughRate is the lesson's click-through rate: each search
// joined to the clicks of its session within an hour, searches without a
// click kept, so that the rate counts them.
func Example_clickThroughRate() {
	type event struct {
		Session string
		Query   string
		At      time.Time
	}
	t0 := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	searches := []event{{"s1", "shoes", t0}, {"s2", "hats", t0.Add(time.Minute)}, {"s3", "socks", t0.Add(2 * time.Minute)}}
	clicks := []event{{"s1", "shoes/42", t0.Add(5 * time.Minute)}, {"s3", "socks/7", t0.Add(90 * time.Minute)}}

	job := weir.NewJob("ctr")
	at := func(e event) time.Time { return e.At }
	session := func(e event) string { return e.Session }
	s := weir.KeyBy(weir.FromSource(job, "searches", weir.SliceSource(searches), weir.MonotonousTimestamps(at)), session)
	c := weir.KeyBy(weir.FromSource(job, "clicks", weir.SliceSource(clicks), weir.MonotonousTimestamps(at)), session)
	type row struct {
		Query   string
		Clicked bool
	}
	rows := weir.Collect(weir.OuterIntervalJoin(s, c, 0, time.Hour, weir.LeftOuter,
		func(_ string, s weir.Opt[event], c weir.Opt[event]) row { return row{s.V.Query, c.OK} }))
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}
	out := rows.Items()
	slices.SortFunc(out, func(a, b row) int { return cmpString(a.Query, b.Query) })
	clicked := 0
	for _, r := range out {
		fmt.Println(r.Query, r.Clicked)
		if r.Clicked {
			clicked++
		}
	}
	fmt.Printf("click-through rate %d/%d\n", clicked, len(out))
	// Output:
	// hats false
	// shoes true
	// socks false
	// click-through rate 1/3
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
