package cep

import (
	"errors"
	"fmt"
	"time"
)

// consuming is how a stage relates to the events before it (Flink's
// Quantifier.ConsumingStrategy).
type consuming uint8

const (
	strict       consuming = iota // next: no event in between
	skipTillNext                  // followedBy: skip events that do not match
	skipTillAny                   // followedByAny: skip any event, also matching ones
	notFollow                     // notFollowedBy
	notNext                       // notNext
)

// Quantifier properties (Flink's QuantifierProperty).
const (
	propSingle = 1 << iota
	propLooping
	propTimes
	propOptional
	propGreedy
)

type quantifier struct {
	consuming consuming // towards the previous stage
	inner     consuming // between the events of a looping or times stage
	props     uint8
}

func (q quantifier) has(p uint8) bool { return q.props&p != 0 }

// Condition is a condition on an event that may also look at the partial
// match it would extend (Flink's IterativeCondition): ctx gives the events
// already matched by each stage.
type Condition[T any] func(ev T, ctx *Context[T]) bool

// cond is a compiled condition; nil on an edge means true.
type cond[T any] func(ev *T, c *Context[T]) bool

func simple[T any](f func(T) bool) cond[T] {
	return func(ev *T, _ *Context[T]) bool { return f(*ev) }
}

func iterative[T any](f Condition[T]) cond[T] {
	return func(ev *T, c *Context[T]) bool { return f(*ev, c) }
}

func trueCond[T any]() cond[T] { return func(*T, *Context[T]) bool { return true } }

func and[T any](a, b cond[T]) cond[T] {
	return func(ev *T, c *Context[T]) bool { return a(ev, c) && b(ev, c) }
}

func or[T any](a, b cond[T]) cond[T] {
	return func(ev *T, c *Context[T]) bool { return a(ev, c) || b(ev, c) }
}

func not[T any](a cond[T]) cond[T] {
	return func(ev *T, c *Context[T]) bool { return !a(ev, c) }
}

// Pattern is one stage of a pattern sequence and, through its
// predecessors, the sequence up to it. Begin starts a sequence; Next,
// FollowedBy, FollowedByAny, NotNext and NotFollowedBy append a stage and
// return it; the other methods change the stage they are called on (the
// last one) and return it, as Flink's Pattern does.
//
// A malformed pattern (a quantifier applied twice, Until on a stage that
// does not loop, ...) is not a panic: the error is kept and Detect's
// operator fails to open with it.
type Pattern[T any] struct {
	name  string
	prev  *Pattern[T]
	group *Pattern[T] // a group stage: the last stage of its inner sequence
	// alts, for an alternation stage, are its alternative sequences (the
	// last stage of each, in preference order); group is alts[0]
	alts   []*Pattern[T]
	cond   cond[T] // nil: any event
	until  cond[T]
	quant  quantifier
	from   int // Times: from..to events (to == from for Times(n))
	to     int
	window time.Duration
	iter   bool         // a condition looks at the partial match
	skip   skipStrategy // on the first stage only
	err    error
}

// skipKind is an after-match skip strategy.
type skipKind uint8

const (
	noSkip skipKind = iota
	skipToNext
	skipPastLast
	skipToFirst
	skipToLast
)

type skipStrategy struct {
	kind  skipKind
	stage string   // skipToFirst, skipToLast
	also  []string // more stages that count as stage
}

// names reports whether stage name is the strategy's stage.
func (s skipStrategy) names(name string) bool {
	if name == s.stage {
		return true
	}
	for _, a := range s.also {
		if a == name {
			return true
		}
	}
	return false
}

func (s skipStrategy) String() string {
	switch s.kind {
	case skipToNext:
		return "SkipToNext"
	case skipPastLast:
		return "SkipPastLastEvent"
	case skipToFirst:
		return fmt.Sprintf("SkipToFirst(%q)", s.stage)
	case skipToLast:
		return fmt.Sprintf("SkipToLast(%q)", s.stage)
	}
	return "NoSkip"
}

// Option configures a pattern sequence given to Begin: its after-match
// skip strategy (NoSkip, SkipToNext, SkipPastLastEvent, SkipToFirst,
// SkipToLast).
type Option struct{ s skipStrategy }

// NoSkip emits every match (the default).
func NoSkip() Option { return Option{skipStrategy{kind: noSkip}} }

// SkipToNext discards, after a match, every partial match that started
// with the same event.
func SkipToNext() Option { return Option{skipStrategy{kind: skipToNext}} }

// SkipPastLastEvent discards, after a match, every partial match that
// started at or before the match's last event.
func SkipPastLastEvent() Option { return Option{skipStrategy{kind: skipPastLast}} }

// SkipToFirst discards, after a match, every partial match that started
// before the first event the stage name matched in it. With more names,
// the first event any of the stages matched (stages that stand for one
// thing, as a SQL variable in several alternatives). The stages may be
// inside groups and alternations; a match without any of them prunes
// nothing.
func SkipToFirst(name string, more ...string) Option {
	return Option{skipStrategy{kind: skipToFirst, stage: name, also: more}}
}

// SkipToLast discards, after a match, every partial match that started
// before the last event the stage name (or one of more) matched in it.
func SkipToLast(name string, more ...string) Option {
	return Option{skipStrategy{kind: skipToLast, stage: name, also: more}}
}

// Begin starts a pattern sequence with a stage named name.
func Begin[T any](name string, opts ...Option) *Pattern[T] {
	p := &Pattern[T]{name: name, quant: quantifier{consuming: strict, inner: skipTillNext, props: propSingle}, from: 1, to: 1}
	for _, o := range opts {
		p.skip = o.s
	}
	if name == "" {
		p.fail("a stage needs a name")
	}
	return p
}

// BeginGroup starts a pattern sequence whose first stage is the sequence
// g (a group pattern: quantifiers then apply to g as a whole).
func BeginGroup[T any](g *Pattern[T], opts ...Option) *Pattern[T] {
	p := &Pattern[T]{group: g, quant: quantifier{consuming: strict, inner: skipTillNext, props: propSingle}, from: 1, to: 1}
	for _, o := range opts {
		p.skip = o.s
	}
	p.name = groupName(g)
	return p
}

// BeginAlt starts a pattern sequence whose first stage is an alternation
// of the sequences alts (see NextAlt).
func BeginAlt[T any](alts []*Pattern[T], opts ...Option) *Pattern[T] {
	p := BeginGroup(firstAlt(alts), opts...)
	p.setAlts(alts)
	return p
}

func firstAlt[T any](alts []*Pattern[T]) *Pattern[T] {
	if len(alts) == 0 {
		return nil
	}
	return alts[0]
}

func (p *Pattern[T]) setAlts(alts []*Pattern[T]) {
	if len(alts) == 0 {
		p.fail("an alternation needs at least one sequence")
		return
	}
	for _, a := range alts {
		if a == nil {
			p.fail("nil alternative")
			return
		}
	}
	p.alts = alts
}

// alternatives are the inner sequences of a group or alternation stage.
func (p *Pattern[T]) alternatives() []*Pattern[T] {
	if p.alts != nil {
		return p.alts
	}
	if p.group != nil {
		return []*Pattern[T]{p.group}
	}
	return nil
}

func groupName[T any](g *Pattern[T]) string {
	if g == nil {
		return "$group$"
	}
	return "$group$" + g.first().name
}

func (p *Pattern[T]) first() *Pattern[T] {
	for p.prev != nil {
		p = p.prev
	}
	return p
}

func (p *Pattern[T]) fail(format string, args ...any) {
	err := fmt.Errorf("cep: stage %q: "+format, append([]any{p.name}, args...)...)
	p.err = errors.Join(p.err, err)
}

func (p *Pattern[T]) appendStage(name string, c consuming) *Pattern[T] {
	n := &Pattern[T]{name: name, prev: p, quant: quantifier{consuming: c, inner: skipTillNext, props: propSingle}, from: 1, to: 1}
	if name == "" {
		n.fail("a stage needs a name")
	}
	return n
}

func (p *Pattern[T]) appendGroup(g *Pattern[T], c consuming) *Pattern[T] {
	n := &Pattern[T]{group: g, prev: p, quant: quantifier{consuming: c, inner: skipTillNext, props: propSingle}, from: 1, to: 1}
	n.name = groupName(g)
	if g == nil {
		n.fail("nil group")
	}
	return n
}

// Next appends a stage whose event must directly follow the previous
// stage's last event (strict contiguity).
func (p *Pattern[T]) Next(name string) *Pattern[T] { return p.appendStage(name, strict) }

// FollowedBy appends a stage whose event is the first matching one after
// the previous stage's (relaxed contiguity: non-matching events between
// are skipped).
func (p *Pattern[T]) FollowedBy(name string) *Pattern[T] { return p.appendStage(name, skipTillNext) }

// FollowedByAny appends a stage that may take any later matching event
// (non-deterministic relaxed contiguity: matching events may be skipped
// too, each choice a partial match of its own).
func (p *Pattern[T]) FollowedByAny(name string) *Pattern[T] {
	return p.appendStage(name, skipTillAny)
}

// NotNext appends a stage that no event may match directly after the
// previous stage's last event.
func (p *Pattern[T]) NotNext(name string) *Pattern[T] {
	n := p.appendStage(name, notNext)
	if p.quant.has(propOptional) {
		n.fail("a NOT stage cannot follow an optional stage")
	}
	return n
}

// NotFollowedBy appends a stage that no event may match between the
// previous stage and the next one. As the last stage it needs Within: the
// match is emitted once the window has passed without such an event.
func (p *Pattern[T]) NotFollowedBy(name string) *Pattern[T] {
	n := p.appendStage(name, notFollow)
	if p.quant.has(propOptional) {
		n.fail("a NOT stage cannot follow an optional stage")
	}
	return n
}

// NextGroup appends the sequence g as one stage, with strict contiguity.
func (p *Pattern[T]) NextGroup(g *Pattern[T]) *Pattern[T] { return p.appendGroup(g, strict) }

// NextAlt appends an alternation of the sequences alts as one stage, with
// strict contiguity: a partial match goes on with each alternative that
// takes the event. Quantifiers apply to the alternation as a whole (each
// iteration chooses again). Alternatives are in preference order, as in
// SQL's row pattern `A B | C`: under a skip strategy, a match waits while
// a partial match with the same first event that chose an earlier
// alternative at their first difference is alive, and the match of the
// earlier alternative is emitted (and prunes the other) when both
// complete. Stage names must be unique across the alternatives.
func (p *Pattern[T]) NextAlt(alts ...*Pattern[T]) *Pattern[T] {
	n := p.appendGroup(firstAlt(alts), strict)
	n.setAlts(alts)
	return n
}

// FollowedByAlt is NextAlt with relaxed contiguity.
func (p *Pattern[T]) FollowedByAlt(alts ...*Pattern[T]) *Pattern[T] {
	n := p.appendGroup(firstAlt(alts), skipTillNext)
	n.setAlts(alts)
	return n
}

// FollowedByGroup appends the sequence g as one stage, with relaxed
// contiguity.
func (p *Pattern[T]) FollowedByGroup(g *Pattern[T]) *Pattern[T] {
	return p.appendGroup(g, skipTillNext)
}

// FollowedByAnyGroup appends the sequence g as one stage, with
// non-deterministic relaxed contiguity.
func (p *Pattern[T]) FollowedByAnyGroup(g *Pattern[T]) *Pattern[T] {
	return p.appendGroup(g, skipTillAny)
}

func (p *Pattern[T]) addCond(c cond[T], isOr bool) *Pattern[T] {
	if p.group != nil {
		p.fail("a group stage takes no condition of its own")
		return p
	}
	switch {
	case p.cond == nil:
		p.cond = c
	case isOr:
		p.cond = or(p.cond, c)
	default:
		p.cond = and(p.cond, c)
	}
	return p
}

// Where adds a condition the stage's events must meet (and-ed with the
// conditions given before).
func (p *Pattern[T]) Where(f func(T) bool) *Pattern[T] { return p.addCond(simple(f), false) }

// Or adds an alternative condition (or-ed with the conditions before).
func (p *Pattern[T]) Or(f func(T) bool) *Pattern[T] { return p.addCond(simple(f), true) }

// WhereIter is Where with a condition that sees the partial match so far.
func (p *Pattern[T]) WhereIter(f Condition[T]) *Pattern[T] {
	p.iter = true
	return p.addCond(iterative(f), false)
}

// OrIter is Or with a condition that sees the partial match so far.
func (p *Pattern[T]) OrIter(f Condition[T]) *Pattern[T] {
	p.iter = true
	return p.addCond(iterative(f), true)
}

// Until stops a looping stage (OneOrMore, TimesOrMore): the first event
// meeting f ends the loop and is not taken.
func (p *Pattern[T]) Until(f func(T) bool) *Pattern[T] { return p.setUntil(simple(f)) }

// UntilIter is Until with a condition that sees the partial match so far.
func (p *Pattern[T]) UntilIter(f Condition[T]) *Pattern[T] { return p.setUntil(iterative(f)) }

func (p *Pattern[T]) setUntil(c cond[T]) *Pattern[T] {
	switch {
	case p.until != nil:
		p.fail("only one until condition can be applied")
	case !p.quant.has(propLooping):
		p.fail("the until condition is only applicable to looping stages")
	default:
		p.until = c
	}
	return p
}

func (p *Pattern[T]) checkNoNot() bool {
	if p.quant.consuming == notFollow || p.quant.consuming == notNext {
		p.fail("option not applicable to a NOT stage")
		return false
	}
	return true
}

func (p *Pattern[T]) checkSingle() bool {
	if !p.quant.has(propSingle) {
		p.fail("a quantifier was already applied")
		return false
	}
	return true
}

func (p *Pattern[T]) checkPrevNotGreedy() {
	if p.prev != nil && p.prev.quant.has(propGreedy) {
		p.fail("an optional stage cannot follow a greedy stage")
	}
}

// Times makes the stage match exactly n events.
func (p *Pattern[T]) Times(n int) *Pattern[T] {
	if !p.checkNoNot() || !p.checkSingle() {
		return p
	}
	if n < 1 {
		p.fail("Times(%d): need at least 1", n)
		return p
	}
	p.quant.props = propTimes
	p.from, p.to = n, n
	return p
}

// TimesRange makes the stage match from to to events; from 0 makes it
// optional.
func (p *Pattern[T]) TimesRange(from, to int) *Pattern[T] {
	if !p.checkNoNot() || !p.checkSingle() {
		return p
	}
	if from < 0 || to < 1 || from > to {
		p.fail("TimesRange(%d, %d): need 0 <= from <= to and to >= 1", from, to)
		return p
	}
	p.quant.props = propTimes
	if from == 0 {
		// As Flink's times(0, n): optional, without Optional's check
		// for a greedy stage before.
		p.quant.props |= propOptional
		from = 1
	}
	p.from, p.to = from, to
	return p
}

// TimesOrMore makes the stage match n or more events.
func (p *Pattern[T]) TimesOrMore(n int) *Pattern[T] {
	if !p.checkNoNot() || !p.checkSingle() {
		return p
	}
	if n < 1 {
		p.fail("TimesOrMore(%d): need at least 1", n)
		return p
	}
	p.quant.props = propLooping
	p.from, p.to = n, n
	return p
}

// OneOrMore makes the stage match one or more events.
func (p *Pattern[T]) OneOrMore() *Pattern[T] { return p.TimesOrMore(1) }

// Optional lets matches skip the stage.
func (p *Pattern[T]) Optional() *Pattern[T] {
	p.checkPrevNotGreedy()
	switch {
	case p.quant.has(propOptional):
		p.fail("optional already applied")
	case p.quant.consuming == notFollow || p.quant.consuming == notNext:
		p.fail("a NOT stage cannot be optional")
	default:
		p.quant.props |= propOptional
	}
	return p
}

// Greedy makes a looping or times stage take as many events as it can.
// A greedy group (or alternation) stage starts another iteration rather
// than leave the loop whenever its first stage takes the event; it must
// be Consecutive.
func (p *Pattern[T]) Greedy() *Pattern[T] {
	if !p.checkNoNot() {
		return p
	}
	switch {
	case p.quant.inner == skipTillAny:
		p.fail("greedy is not applicable with AllowCombinations")
	case p.quant.has(propSingle):
		p.fail("greedy is not applicable to a single-event stage")
	default:
		p.quant.props |= propGreedy
	}
	return p
}

// Consecutive makes the events of a looping or times stage follow each
// other strictly.
func (p *Pattern[T]) Consecutive() *Pattern[T] {
	switch {
	case !p.quant.has(propLooping) && !p.quant.has(propTimes):
		p.fail("consecutive is only applicable to looping or times stages")
	case p.quant.inner == skipTillAny:
		p.fail("either AllowCombinations or Consecutive, not both")
	case p.quant.inner == strict:
		p.fail("consecutive already applied")
	default:
		p.quant.inner = strict
	}
	return p
}

// AllowCombinations lets the events of a looping or times stage skip
// matching events too (non-deterministic relaxed contiguity inside).
func (p *Pattern[T]) AllowCombinations() *Pattern[T] {
	switch {
	case p.quant.has(propSingle):
		p.fail("AllowCombinations is only applicable to looping or times stages")
	case p.quant.inner == strict:
		p.fail("either AllowCombinations or Consecutive, not both")
	case p.quant.inner == skipTillAny:
		p.fail("AllowCombinations already applied")
	default:
		p.quant.inner = skipTillAny
	}
	return p
}

// Within bounds a match in event time: its last event is less than d
// after its first (a partial match times out once time reaches first+d).
// With several Within in a sequence the smallest counts.
func (p *Pattern[T]) Within(d time.Duration) *Pattern[T] {
	if d <= 0 {
		p.fail("Within(%v): need a positive duration", d)
		return p
	}
	p.window = d
	return p
}

// Name is the stage's name.
func (p *Pattern[T]) Name() string { return p.name }
