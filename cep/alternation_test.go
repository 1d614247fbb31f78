package cep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// Alternations, greedy groups and matches as ordered steps: what SQL's
// row patterns `A (B C)+ D`, `A B | C` need of the engine.

func anyOf(names ...string) func(sev) bool {
	return func(e sev) bool { return slices.Contains(names, e.Name) }
}

// runSteps runs p with DetectSteps and prints each match as
// "stage:label ...", sorted.
func runSteps(t *testing.T, p *Pattern[sev], in string) []string {
	t.Helper()
	job := weir.NewJob("steps")
	src := weir.FromSource(job, "events", weir.SliceSource(evs(in)),
		weir.MonotonousTimestamps(func(e sev) time.Time { return time.UnixMilli(e.TS) }))
	out := weir.Collect(DetectStepsNumbered(weir.KeyBy(src, func(sev) int { return 0 }), p, func(_ int, n int64, s []Step[sev]) string {
		var ws []string
		for _, st := range s {
			ws = append(ws, st.Stage+":"+st.Event.Label)
		}
		return strings.Join(ws, " ")
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	return got
}

func checkSteps(t *testing.T, p *Pattern[sev], in string, want ...string) {
	t.Helper()
	got := runSteps(t, p, in)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events %q:\n got  %q\n want %q", in, got, want)
	}
}

func TestAlternation(t *testing.T) {
	alt := func(opts ...Option) *Pattern[sev] {
		return Begin[sev]("start", opts...).Where(named("c")).
			NextAlt(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b")), Begin[sev]("x").Where(named("x"))).
			Next("end").Where(named("d"))
	}
	check(t, alt(), "c a b d", "c a b d")
	check(t, alt(), "c x d", "c x d")
	check(t, alt(), "c a d")
	check(t, alt(), "c a x d")
	// in a loop each iteration chooses again
	loop := Begin[sev]("start").Where(named("c")).
		NextAlt(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b")), Begin[sev]("x").Where(named("x"))).
		OneOrMore().Consecutive().Greedy().Next("end").Where(named("d"))
	checkSteps(t, loop, "c a1 b1 x1 a2 b2 d", "start:c a:a1 b:b1 x:x1 a:a2 b:b2 end:d")
	// an alternation may start the sequence, and end it
	first := BeginAlt([]*Pattern[sev]{Begin[sev]("a").Where(named("a")), Begin[sev]("x").Where(named("x"))}).Next("end").Where(named("d"))
	check(t, first, "a d x d", "a d", "x d")
	last := Begin[sev]("start").Where(named("c")).NextAlt(Begin[sev]("a").Where(named("a")), Begin[sev]("x").Where(named("x")))
	check(t, last, "c a c x c d", "c a", "c x")
	// an optional alternation
	opt := Begin[sev]("start").Where(named("c")).
		NextAlt(Begin[sev]("a").Where(named("a")), Begin[sev]("x").Where(named("x"))).Optional().
		Next("end").Where(named("d"))
	check(t, opt, "c d c a d c x d c b d", "c d", "c a d", "c x d")
}

// SQL's preference: the first alternative that leads to a match wins,
// even when a later one completes first.
func TestAlternationPreference(t *testing.T) {
	any3 := func(opts ...Option) *Pattern[sev] {
		return Begin[sev]("s", opts...).Where(named("s")).NextAlt(
			Begin[sev]("l1").Where(named("e")).Next("l2").Where(named("e")).Next("l3").Where(named("e")),
			Begin[sev]("r1").Where(named("e")))
	}
	// without a skip strategy every match is emitted
	check(t, any3(), "s e1 e2 e3", "s e1", "s e1 e2 e3")
	// with one, the right alternative's match waits for the left one's
	// partial match, which completes and wins
	check(t, any3(SkipToNext()), "s e1 e2 e3", "s e1 e2 e3")
	check(t, any3(SkipPastLastEvent()), "s e1 e2 e3 s e4 x", "s e1 e2 e3", "s e4")
	// (while the left one's partial match lives, the right one's waits:
	// at the end of input it is never emitted)
	check(t, any3(SkipPastLastEvent()), "s e1 e2 e3 s e4", "s e1 e2 e3")
	// the left one fails at x: the right one's match is emitted then
	check(t, any3(SkipToNext()), "s e1 e2 x", "s e1")
	// equal completions: the left alternative's match
	same := Begin[sev]("s", SkipToNext()).Where(named("s")).NextAlt(
		Begin[sev]("l").Where(named("e")), Begin[sev]("r").Where(named("e")))
	checkSteps(t, same, "s e1", "s:s l:e1")
	// nested: the outer alternation decides first
	nested := Begin[sev]("s", SkipToNext()).Where(named("s")).NextAlt(
		BeginAlt([]*Pattern[sev]{Begin[sev]("a1").Where(named("e")).Next("a2").Where(named("e")), Begin[sev]("b1").Where(named("e"))}),
		Begin[sev]("c1").Where(named("e")))
	checkSteps(t, nested, "s e1 e2", "s:s a1:e1 a2:e2")
	checkSteps(t, nested, "s e1 x", "s:s b1:e1")
}

func TestGreedyGroup(t *testing.T) {
	// end also takes a: a lazy group lets it, a greedy one takes a2 for
	// another iteration
	p := func(greedy bool) *Pattern[sev] {
		g := Begin[sev]("s").Where(named("s")).
			NextGroup(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b"))).OneOrMore().Consecutive()
		if greedy {
			g = g.Greedy()
		}
		return g.Next("end").Where(anyOf("a", "d"))
	}
	checkSteps(t, p(false), "s a1 b1 a2 b2 d", "s:s a:a1 b:b1 end:a2", "s:s a:a1 b:b1 a:a2 b:b2 end:d")
	checkSteps(t, p(true), "s a1 b1 a2 b2 d", "s:s a:a1 b:b1 a:a2 b:b2 end:d")
	// greedy, no backtracking: a2 is taken by the group, b missing
	checkSteps(t, p(true), "s a1 b1 a2 d")
	// a greedy range and an optional greedy group
	rng := Begin[sev]("s").Where(named("s")).
		NextGroup(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b"))).TimesRange(1, 2).Consecutive().Greedy().
		Next("end").Where(anyOf("a", "d"))
	checkSteps(t, rng, "s a1 b1 a2 b2 a3", "s:s a:a1 b:b1 a:a2 b:b2 end:a3")
	star := Begin[sev]("s").Where(named("s")).
		NextGroup(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b"))).OneOrMore().Optional().Consecutive().Greedy().
		Next("end").Where(anyOf("a", "d"))
	checkSteps(t, star, "s a1 b1 d", "s:s a:a1 b:b1 end:d")
	checkSteps(t, star, "s d", "s:s end:d")
	// a greedy group must be consecutive
	bad := Begin[sev]("s").NextGroup(Begin[sev]("a")).OneOrMore().Greedy().Next("end")
	if _, err := compile(bad); err == nil || !strings.Contains(err.Error(), "Consecutive") {
		t.Errorf("greedy relaxed group: %v", err)
	}
}

func TestSkipToStageInGroup(t *testing.T) {
	// SkipToLast("b") inside a group: the next match may start at the
	// last b (not at b1, which is before it)
	p := Begin[sev]("s", SkipToLast("b")).Where(anyOf("s", "b")).
		NextGroup(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b"))).Times(2).Consecutive()
	checkSteps(t, p, "s a1 b1 a2 b2 a3 b3 a4 b4",
		"s:s a:a1 b:b1 a:a2 b:b2", "s:b2 a:a3 b:b3 a:a4 b:b4")
	// without a skip strategy b1 starts one too
	p2 := Begin[sev]("s").Where(anyOf("s", "b")).
		NextGroup(Begin[sev]("a").Where(named("a")).Next("b").Where(named("b"))).Times(2).Consecutive()
	checkSteps(t, p2, "s a1 b1 a2 b2 a3 b3 a4 b4",
		"s:s a:a1 b:b1 a:a2 b:b2", "s:b1 a:a2 b:b2 a:a3 b:b3", "s:b2 a:a3 b:b3 a:a4 b:b4")
	// several stage names for one SQL variable: the first of either
	q := Begin[sev]("s", SkipToFirst("x", "y")).Where(named("s")).
		NextAlt(Begin[sev]("x").Where(named("e")), Begin[sev]("y").Where(named("f"))).OneOrMore().Consecutive().Greedy().
		Next("end").Where(named("d"))
	checkSteps(t, q, "s f1 e1 d", "s:s y:f1 x:e1 end:d")
	// skipping to a match's first event keeps the partial matches that
	// began with it; with an alternation, the other alternatives' matches
	// from that event are dropped all the same (one match per first
	// event, as in SQL)
	first := Begin[sev]("s", SkipToFirst("s")).Where(named("s")).NextAlt(
		Begin[sev]("l1").Where(named("e")).Next("l2").Where(named("e")),
		Begin[sev]("r1").Where(named("e")))
	checkSteps(t, first, "s e1 e2", "s:s l1:e1 l2:e2")
	if _, err := compile(Begin[sev]("s", SkipToFirst("nope")).Next("x")); err == nil {
		t.Error("skip to a missing stage compiled")
	}
}

// Without a skip strategy an alternation's matches are those of its
// alternatives, each run as a pattern of its own (random alternatives and
// events).
func TestAlternationIsUnionOfAlternatives(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 39))
	letters := []string{"a", "b", "c"}
	randCond := func() func(sev) bool {
		var ok []string
		for _, l := range letters {
			if rng.IntN(2) == 0 {
				ok = append(ok, l)
			}
		}
		if len(ok) == 0 {
			ok = []string{letters[rng.IntN(3)]}
		}
		return anyOf(ok...)
	}
	type stage struct {
		name string
		cond func(sev) bool
	}
	seq := func(st []stage) *Pattern[sev] {
		p := Begin[sev](st[0].name).Where(st[0].cond)
		for _, s := range st[1:] {
			p = p.Next(s.name).Where(s.cond)
		}
		return p
	}
	total := 0
	for iter := 0; iter < 30; iter++ {
		var alts [][]stage
		for a := 0; a < 2+rng.IntN(2); a++ {
			var st []stage
			for i := 0; i < 1+rng.IntN(3); i++ {
				st = append(st, stage{fmt.Sprintf("x%d_%d", a, i), randCond()})
			}
			alts = append(alts, st)
		}
		startCond, endCond := randCond(), randCond()
		var words []string
		for i := 0; i < 14; i++ {
			words = append(words, fmt.Sprintf("%s%d", letters[rng.IntN(3)], i))
		}
		in := strings.Join(words, " ")
		var ps []*Pattern[sev]
		for _, a := range alts {
			ps = append(ps, seq(a))
		}
		alt := Begin[sev]("s").Where(startCond).NextAlt(ps...).Next("e").Where(endCond)
		got := runSteps(t, alt, in)
		total += len(got)
		var want []string
		for _, a := range alts {
			one := Begin[sev]("s").Where(startCond).NextGroup(seq(a)).Next("e").Where(endCond)
			want = append(want, runSteps(t, one, in)...)
		}
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("events %q:\n got  %q\n want %q", in, got, want)
		}
	}
	if total < 30 {
		t.Errorf("only %d matches in all: the test draws too few", total)
	}
	t.Logf("%d matches", total)
}
