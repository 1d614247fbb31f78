package cep

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// Scenarios ported from Flink's CEP tests (GreedyITCase, GroupITCase,
// UntilConditionITCase, IterativeConditionsITCase, NotPatternITCase,
// AfterMatchSkipITCase) in weir's API, with their expected matches: the
// cases the random differential test does not draw (greedy, until,
// iterative conditions, groups).

type sev struct {
	Label string // unique: "a1"
	Name  string // what conditions test: "a"
	Price float64
	TS    int64
}

// evs builds events one ms apart from "label:price" words; the name is
// the label without its digits.
func evs(spec string) []sev {
	var out []sev
	for i, w := range strings.Fields(spec) {
		label, price, _ := strings.Cut(w, ":")
		var p float64
		for _, c := range price {
			p = p*10 + float64(c-'0')
		}
		out = append(out, sev{Label: label, Name: strings.TrimRight(label, "0123456789"), Price: p, TS: int64(i + 1)})
	}
	return out
}

func named(n string) func(sev) bool { return func(e sev) bool { return e.Name == n } }

func flat(m Match[sev]) string {
	var all []sev
	for _, es := range m {
		all = append(all, es...)
	}
	slices.SortFunc(all, func(a, b sev) int { return cmpInt(a.TS, b.TS) })
	var ls []string
	for _, e := range all {
		ls = append(ls, e.Label)
	}
	return strings.Join(ls, " ")
}

func runScenario(t *testing.T, p *Pattern[sev], in []sev, opts ...weir.JobOption) []string {
	t.Helper()
	job := weir.NewJob("scenario", opts...)
	src := weir.FromSource(job, "events", weir.SliceSource(in),
		weir.MonotonousTimestamps(func(e sev) time.Time { return time.UnixMilli(e.TS) }))
	out := weir.Collect(Detect(weir.KeyBy(src, func(sev) int { return 0 }), p, func(_ int, m Match[sev]) string { return flat(m) }))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	return got
}

func check(t *testing.T, p *Pattern[sev], in string, want ...string) {
	t.Helper()
	got := runScenario(t, p, evs(in))
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("events %q:\n got  %q\n want %q", in, got, want)
	}
}

func cad(middle func(p *Pattern[sev]) *Pattern[sev]) *Pattern[sev] {
	p := Begin[sev]("start").Where(named("c")).FollowedBy("middle").Where(named("a"))
	return middle(p).FollowedBy("end").Where(named("d"))
}

func TestGreedy(t *testing.T) {
	greedyStar := func(p *Pattern[sev]) *Pattern[sev] { return p.OneOrMore().Optional().Greedy() }
	check(t, cad(greedyStar), "c a1 a2 a3 d", "c a1 a2 a3 d")
	check(t, cad(greedyStar), "c x a1 x a2 x a3 d", "c a1 a2 a3 d")
	check(t, cad(greedyStar), "c a1 a2 x d", "c a1 a2 d")
	check(t, cad(greedyStar), "c x d", "c d")
	consecutive := Begin[sev]("start").Where(named("c")).FollowedBy("middle").Where(named("a")).
		OneOrMore().Optional().Consecutive().Greedy().FollowedBy("end").Where(named("d"))
	check(t, consecutive, "c a1 a2 a3 d", "c a1 a2 a3 d")
	// Flink's Pattern.optional refuses a stage after a greedy one.
	if _, err := compile(Begin[sev]("a").OneOrMore().Greedy().FollowedBy("b").Optional()); err == nil {
		t.Error("optional after greedy compiled")
	}
	// Greedy then optional (Flink's old testGreedyZeroOrMoreBeforeOptional)
	// is refused by Flink's current Pattern.optional.
	beforeOptional := Begin[sev]("start").Where(named("c")).FollowedBy("middle1").Where(named("a")).
		OneOrMore().Optional().Greedy().FollowedBy("middle2").Where(named("d")).Optional()
	if _, err := compile(beforeOptional); err == nil {
		t.Error("optional after greedy compiled")
	}
	until := func(p *Pattern[sev]) *Pattern[sev] {
		return p.OneOrMore().Optional().Greedy().Until(func(e sev) bool { return e.Price > 3 })
	}
	check(t, cad(until), "c a1:2 a2:3 a3:3 a4:4 d", "c a1 a2 a3 d")
	check(t, cad(until), "c a4:4 a1:2 a2:3 a3:3 d", "c d")
}

func TestUntil(t *testing.T) {
	p := cad(func(p *Pattern[sev]) *Pattern[sev] {
		return p.OneOrMore().Until(func(e sev) bool { return e.Price > 3 })
	})
	// The event meeting Until ends every loop: a3 is never taken.
	check(t, p, "c a1:2 a2:3 x:4 a3:3 d", "c a1 d", "c a1 a2 d")
	check(t, p, "c a1:2 a2:3 a3:3 d", "c a1 d", "c a1 a2 d", "c a1 a2 a3 d")
	// Until on a stage that does not loop is a malformed pattern.
	bad := Begin[sev]("start").Until(named("x"))
	if _, err := compile(bad); err == nil || !strings.Contains(err.Error(), "looping") {
		t.Errorf("Until on a single stage: %v", err)
	}
}

func TestIterativeCondition(t *testing.T) {
	// "up" takes events priced higher than every earlier event of "up".
	p := Begin[sev]("start").Where(named("s")).FollowedBy("up").WhereIter(func(e sev, ctx *Context[sev]) bool {
		if e.Name != "u" {
			return false
		}
		for _, prev := range ctx.EventsForPattern("up") {
			if e.Price <= prev.Price {
				return false
			}
		}
		return true
	}).OneOrMore().FollowedBy("end").Where(named("e"))
	check(t, p, "s u1:1 u2:3 u3:2 e", "s u1 e", "s u1 u2 e")
	check(t, p, "s u1:1 u2:2 u3:3 e", "s u1 e", "s u1 u2 e", "s u1 u2 u3 e")
}

func group() *Pattern[sev] {
	return Begin[sev]("middle1").Where(named("a")).FollowedBy("middle2").Where(named("b"))
}

func TestGroup(t *testing.T) {
	times := Begin[sev]("start").Where(named("c")).FollowedByGroup(group()).Times(2).FollowedBy("end").Where(named("d"))
	check(t, times, "c a1 b1 a2 b2 d", "c a1 b1 a2 b2 d")
	optional := Begin[sev]("start").Where(named("c")).FollowedByGroup(group()).Optional().FollowedBy("end").Where(named("d"))
	check(t, optional, "c a1 a2 b d", "c d", "c a1 b d")
	timesOptional := Begin[sev]("start").Where(named("c")).FollowedByGroup(group()).Times(2).Optional().FollowedBy("end").Where(named("d"))
	check(t, timesOptional, "c a d", "c d")
	oneOrMore := Begin[sev]("start").Where(named("c")).FollowedByGroup(group()).OneOrMore().FollowedBy("end").Where(named("d"))
	check(t, oneOrMore, "c a1 b1 a2 b2 d", "c a1 b1 d", "c a1 b1 a2 b2 d")
	// A group may start the sequence.
	first := BeginGroup(group()).FollowedBy("end").Where(named("d"))
	check(t, first, "a1 b1 d", "a1 b1 d")
	// Stage names must be unique across groups.
	dup := Begin[sev]("middle1").FollowedByGroup(group())
	if _, err := compile(dup); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate name across a group: %v", err)
	}
}

func TestNotPatterns(t *testing.T) {
	mid := Begin[sev]("a").Where(named("a")).NotFollowedBy("not").Where(named("x")).FollowedBy("b").Where(named("b"))
	check(t, mid, "a1 c b1", "a1 b1")
	check(t, mid, "a1 x b1")
	check(t, mid, "a1 x a2 b1", "a2 b1")
	next := Begin[sev]("a").Where(named("a")).NotNext("not").Where(named("x")).FollowedBy("b").Where(named("b"))
	check(t, next, "a1 x b1")
	check(t, next, "a1 c x b1", "a1 b1")
	// notFollowedBy at the end waits for the window: a1's window [1, 11)
	// passes without x; a2's has x2 in it.
	end := Begin[sev]("a").Where(named("a")).NotFollowedBy("not").Where(named("x")).Within(10 * time.Millisecond)
	check(t, end, "a1 c1 c2 c3 c4 c5 c6 c7 c8 c9 x1", "a1")
	check(t, end, "a1 c1 x1")
	if _, err := compile(Begin[sev]("a").NotFollowedBy("b")); err == nil {
		t.Error("trailing notFollowedBy without Within compiled")
	}
	if _, err := compile(Begin[sev]("a").Optional().NotFollowedBy("b").FollowedBy("c")); err == nil {
		t.Error("NOT after optional compiled")
	}
}

func TestSkipStrategies(t *testing.T) {
	three := func(o Option) *Pattern[sev] { return Begin[sev]("a", o).Where(named("a")).Times(3).Within(time.Second) }
	check(t, three(NoSkip()), "a1 a2 a3 a4", "a1 a2 a3", "a2 a3 a4")
	check(t, three(SkipToNext()), "a1 a2 a3 a4", "a1 a2 a3", "a2 a3 a4")
	check(t, three(SkipPastLastEvent()), "a1 a2 a3 a4", "a1 a2 a3")
	consecutive := func(o Option) *Pattern[sev] {
		return Begin[sev]("a", o).Where(named("a")).Times(3).Consecutive().Within(time.Second)
	}
	check(t, consecutive(SkipToFirst("a")), "a1 a2 a3 a4 a5", "a1 a2 a3", "a2 a3 a4", "a3 a4 a5")
	check(t, consecutive(SkipToLast("a")), "a1 a2 a3 a4 a5", "a1 a2 a3", "a3 a4 a5")
	if _, err := compile(Begin[sev]("a", SkipToFirst("zz")).FollowedBy("b")); err == nil {
		t.Error("skip to an unknown stage compiled")
	}
}

// TestSkipWaitsForEarlierPartialMatch: under a skip strategy a complete
// match waits while a partial match that began earlier is alive (it may
// still complete and prune it); without Within such a partial match never
// ends and, as in Flink, the waiting match is never emitted.
func TestSkipWaitsForEarlierPartialMatch(t *testing.T) {
	p := func(o Option) *Pattern[sev] {
		// b must cost at least a's price.
		return Begin[sev]("a", o).Where(named("a")).FollowedByAny("b").WhereIter(func(e sev, ctx *Context[sev]) bool {
			return e.Name == "b" && e.Price >= ctx.EventsForPattern("a")[0].Price
		})
	}
	check(t, p(NoSkip()), "a1:5 a2:1 b1:2 b2:6", "a2 b1", "a1 b2", "a2 b2")
	// {a2 b1} waits for a1's partial match, which completes as {a1 b2}
	// and is emitted first; it prunes a1's other partial matches only, so
	// {a2 b1} follows and prunes {a2 b2}.
	check(t, p(SkipToNext()), "a1:5 a2:1 b1:2 b2:6", "a1 b2", "a2 b1")
	// {a1 b2} prunes every match starting at or before b2.
	check(t, p(SkipPastLastEvent()), "a1:5 a2:1 b1:2 b2:6", "a1 b2")
	// a1 never completes: {a2 b1} waits for ever, unless Within ends a1.
	check(t, p(SkipToNext()), "a1:5 a2:1 b1:2")
	check(t, p(SkipToNext()).Within(time.Second), "a1:5 a2:1 b1:2", "a2 b1")
}

func TestTimedOut(t *testing.T) {
	p := Begin[sev]("a").Where(named("a")).FollowedBy("b").Where(named("b")).Within(5 * time.Millisecond)
	in := []sev{
		{Label: "a1", Name: "a", TS: 1}, {Label: "x", Name: "x", TS: 3}, {Label: "a2", Name: "a", TS: 4},
		{Label: "b1", Name: "b", TS: 8}, {Label: "a3", Name: "a", TS: 20},
	}
	job := weir.NewJob("timeouts")
	src := weir.FromSource(job, "events", weir.SliceSource(in),
		weir.MonotonousTimestamps(func(e sev) time.Time { return time.UnixMilli(e.TS) }))
	matches := Detect(weir.KeyBy(src, func(sev) string { return "k" }), p, func(_ string, m Match[sev]) string { return flat(m) })
	out := weir.Collect(matches)
	to := weir.Collect(TimedOut[string, sev](matches))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := out.Items(); !slices.Equal(got, []string{"a2 b1"}) {
		t.Errorf("matches %q", got)
	}
	var got []string
	for _, x := range to.Items() {
		got = append(got, x.Key+" "+flat(x.Match)+" @"+x.At.Format(".000"))
	}
	// a1 times out when time reaches 1+5 (at b1's arrival, 8); a3 at the
	// end of input.
	if want := []string{"k a1 @.006", "k a3 @.025"}; !slices.Equal(got, want) {
		t.Errorf("timed out %q, want %q", got, want)
	}
}

func TestLateEvents(t *testing.T) {
	p := Begin[sev]("a").Where(named("a")).FollowedBy("b").Where(named("b"))
	// b0 at 1 arrives after a at 10 pushed the watermark to 9: late.
	in := []sev{{Label: "a1", Name: "a", TS: 10}, {Label: "b0", Name: "b", TS: 1}, {Label: "b1", Name: "b", TS: 11}}
	job := weir.NewJob("late")
	src := weir.FromSource(job, "events", weir.SliceSource(in),
		weir.MonotonousTimestamps(func(e sev) time.Time { return time.UnixMilli(e.TS) }))
	matches := Detect(weir.KeyBy(src, func(sev) string { return "k" }), p, func(_ string, m Match[sev]) string { return flat(m) })
	out := weir.Collect(matches)
	late := weir.Collect(LateEvents[string, sev](matches))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := out.Items(); !slices.Equal(got, []string{"a1 b1"}) {
		t.Errorf("matches %q", got)
	}
	if l := late.Items(); len(l) != 1 || l[0].Event.Label != "b0" || l[0].Key != "k" {
		t.Errorf("late %+v", l)
	}
	if n := LateDropped(matches); n != 1 {
		t.Errorf("LateDropped = %d", n)
	}
}

// TestStatePruned: once Within has passed, a key's partial matches and
// their events are gone; the runner reports the key idle so that Detect
// clears its state.
func TestStatePruned(t *testing.T) {
	p := Begin[sev]("a").Where(named("a")).FollowedByAny("b").Where(named("b")).FollowedBy("c").Where(named("c")).Within(10 * time.Millisecond)
	n, err := compile(p)
	if err != nil {
		t.Fatal(err)
	}
	var buf sharedBuffer[sev]
	fd := &feed[sev]{buf: &buf}
	r := newRunner(n, fd)
	ks := &nfaState{}
	var matches int
	r.onMatch = func(Match[sev]) { matches++ }
	for i, e := range evs("a1 b1 a2 b2 x b3 c1 a3 b4") {
		r.advanceTime(ks, e.TS)
		fd.curEv, fd.curID = -1, int64(i)
		r.process(ks, &e, e.TS)
		if fd.curEv >= 0 {
			buf.releaseEvent(fd.curEv)
		}
	}
	if matches == 0 {
		t.Fatal("no match")
	}
	if buf.live() == 0 || idle(ks) {
		t.Fatal("partial matches should be alive before the window passes")
	}
	// Shared buffer: b1 is held by several partial matches but stored once.
	stored := len(buf.Events) - len(buf.FreeEv)
	if stored > 9 {
		t.Errorf("%d events stored for 9 input events", stored)
	}
	r.advanceTime(ks, 100)
	if !idle(ks) || buf.live() != 0 || len(buf.Events) != len(buf.FreeEv) {
		t.Errorf("after the window: idle=%v nodes=%d events=%d/%d", idle(ks), buf.live(), len(buf.Events), len(buf.FreeEv))
	}
}

// The timelines of docs/cep.md.
func TestDocTimelines(t *testing.T) {
	ab := func(f func(*Pattern[sev]) *Pattern[sev]) *Pattern[sev] {
		return f(Begin[sev]("a").Where(named("a")).OneOrMore()).FollowedBy("b").Where(named("b"))
	}
	id := func(p *Pattern[sev]) *Pattern[sev] { return p }
	check(t, ab(id), "a1 a2 a3 b1", "a1 b1", "a1 a2 b1", "a1 a2 a3 b1", "a2 b1", "a2 a3 b1", "a3 b1")
	check(t, ab(func(p *Pattern[sev]) *Pattern[sev] { return p.AllowCombinations() }), "a1 a2 a3 b1",
		"a1 b1", "a1 a2 b1", "a1 a2 a3 b1", "a2 b1", "a2 a3 b1", "a3 b1", "a1 a3 b1")
	check(t, ab(func(p *Pattern[sev]) *Pattern[sev] { return p.Consecutive() }), "a1 x a2 b1", "a1 b1", "a2 b1")
	check(t, Begin[sev]("a").Where(named("a")).Next("b").Where(named("b")), "a1 x a2 b1 b2", "a2 b1")
	check(t, Begin[sev]("a").Where(named("a")).FollowedBy("b").Where(named("b")), "a1 x b1 b2", "a1 b1")
	check(t, Begin[sev]("a").Where(named("a")).FollowedByAny("b").Where(named("b")), "a1 x b1 b2", "a1 b1", "a1 b2")
	check(t, Begin[sev]("a").Where(named("a")).FollowedBy("b").Where(named("b")).Optional().FollowedBy("c").Where(named("c")),
		"a1 b1 c1", "a1 b1 c1", "a1 c1")
}

// A malformed pattern fails the job when it starts, naming the stage.
func TestMalformedPatternFailsJob(t *testing.T) {
	p := Begin[sev]("a").FollowedBy("b").Times(2).Times(3)
	job := weir.NewJob("bad")
	src := weir.FromSource(job, "events", weir.SliceSource(evs("a1 b1")),
		weir.MonotonousTimestamps(func(e sev) time.Time { return time.UnixMilli(e.TS) }))
	weir.Collect(Detect(weir.KeyBy(src, func(sev) int { return 0 }), p, func(int, Match[sev]) int { return 0 }))
	err := job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), `stage "b"`) || !strings.Contains(err.Error(), "quantifier was already applied") {
		t.Fatalf("err = %v", err)
	}
}
