package cep

import (
	"errors"
	"fmt"
	"strconv"
)

// The compiler turns a pattern sequence into Flink's NFA: the same states
// and TAKE / IGNORE / PROCEED edges that Flink's NFACompiler builds,
// traversing the sequence from its last stage to its first. Keeping the
// graph identical (down to the order of edges) is what makes the matches
// identical, including Flink's corner cases of greedy, optional and NOT
// stages.

type stateKind uint8

const (
	kindNormal stateKind = iota
	kindStart
	kindFinal
	kindStop    // reaching it discards the partial match (a NOT stage matched)
	kindPending // notFollowedBy at the end: a match once the window passes
)

type action uint8

const (
	actTake action = iota
	actIgnore
	actProceed
)

type edge[T any] struct {
	act      action
	from, to int32
	cond     cond[T] // nil: always
}

type nstate[T any] struct {
	name   string // unique within the NFA
	stage  int32  // index of the stage name, for the shared buffer
	kind   stateKind
	greedy bool
	edges  []edge[T]
}

// nfa is a compiled pattern, shared read-only by every key and subtask.
type nfa[T any] struct {
	states []nstate[T]
	start  int32
	window int64 // ms; 0: none
	skip   skipStrategy
	stages []string // stage names by index
	// altPath, by stage index: the alternations the stage is inside, the
	// outermost first, and which alternative; nil when the pattern has no
	// alternation (see prefer)
	altPath [][]altStep
	hasAlt  bool
	// inert, when not nil, reports events that cannot change any partial
	// match (see inertFilter).
	inert func(*T) bool
}

const endStateName = "$endState$"

// altStep is one alternation a stage is inside and the alternative (0:
// the first, preferred) it is in.
type altStep struct{ id, branch int32 }

type notCond[T any] struct {
	c    cond[T]
	name string
}

type compiler[T any] struct {
	n           *nfa[T]
	used        map[string]bool
	stageIdx    map[string]int32
	stop        map[string]int32
	curGroup    *Pattern[T]
	alts        int32 // alternations registered
	firstOfLoop map[*Pattern[T]]bool
	cur         *Pattern[T]
	following   *Pattern[T]
	followTake  cond[T]
}

// compile builds the NFA of the sequence ending at last.
func compile[T any](last *Pattern[T]) (*nfa[T], error) {
	if last == nil {
		return nil, errors.New("cep: nil pattern")
	}
	if err := collectErrors(last); err != nil {
		return nil, err
	}
	c := &compiler[T]{
		n:           &nfa[T]{skip: last.first().skip},
		used:        map[string]bool{},
		stageIdx:    map[string]int32{},
		stop:        map[string]int32{},
		firstOfLoop: map[*Pattern[T]]bool{},
		cur:         last,
	}
	names := map[string]bool{endStateName: true}
	if err := checkNames(last, names); err != nil {
		return nil, err
	}
	if s := c.n.skip; s.kind == skipToFirst || s.kind == skipToLast {
		// Flink wants a stage of the top-level sequence; weir takes
		// stages inside groups and alternations too.
		if !hasStage(last, s) {
			return nil, fmt.Errorf("cep: %v: no stage %q in the pattern", s, s.stage)
		}
	}
	// Stage indices in pattern order: ties between matches are broken by
	// them (see cmpMatch).
	c.registerStages(last, nil)
	c.n.hasAlt = c.alts > 0
	c.n.window = minWindow(last)
	if last.quant.consuming == notFollow && c.n.window == 0 {
		return nil, fmt.Errorf("cep: stage %q: NotFollowedBy as the last stage needs Within", last.name)
	}
	sink := c.createState(endStateName, kindFinal, false)
	sink = c.createMiddleStates(sink)
	start := c.convertPattern(sink)
	c.n.states[start].kind = kindStart
	c.n.start = start
	c.n.inert = inertFilter(last)
	return c.n, nil
}

// inertFilter returns, for patterns where it is exact, a test of events
// that cannot change any partial match: a sequence of single, required
// stages joined by FollowedBy or FollowedByAny with plain conditions, no
// NOT stage, no Until. There an event that meets no stage's condition
// makes every partial match ignore it and stay in its state (a self
// IGNORE edge), and the start state skip it, so feeding it to the NFA is
// the identity: Detect drops it on arrival without touching state, as
// the lazy and pre-filtering NFAs of the CEP literature do. Dropping it
// only changes when time-driven output (timeouts) is emitted, never what.
func inertFilter[T any](last *Pattern[T]) func(*T) bool {
	var conds []cond[T]
	for p := last; p != nil; p = p.prev {
		if p.group != nil || p.until != nil || p.iter || p.cond == nil || !p.quant.has(propSingle) || p.quant.has(propOptional) {
			return nil
		}
		if p.prev != nil && p.quant.consuming != skipTillNext && p.quant.consuming != skipTillAny {
			return nil
		}
		conds = append(conds, p.cond)
	}
	return func(ev *T) bool {
		for _, c := range conds {
			if c(ev, nil) {
				return false
			}
		}
		return true
	}
}

func (c *compiler[T]) registerStages(p *Pattern[T], path []altStep) {
	if p == nil {
		return
	}
	c.registerStages(p.prev, path)
	if p.group != nil {
		if p.alts == nil {
			c.registerStages(p.group, path)
			return
		}
		id := c.alts
		c.alts++
		for i, a := range p.alts {
			c.registerStages(a, append(path[:len(path):len(path)], altStep{id, int32(i)}))
		}
		return
	}
	i := c.stage(p.name)
	for int(i) >= len(c.n.altPath) {
		c.n.altPath = append(c.n.altPath, nil)
	}
	c.n.altPath[i] = path
}

// hasStage reports whether the sequence ending at p has the skip
// strategy's stage, in groups and alternations too.
func hasStage[T any](p *Pattern[T], s skipStrategy) bool {
	for ; p != nil; p = p.prev {
		for _, a := range p.alternatives() {
			if hasStage(a, s) {
				return true
			}
		}
		if p.group == nil && s.names(p.name) {
			return true
		}
	}
	return false
}

func collectErrors[T any](p *Pattern[T]) error {
	var errs []error
	for ; p != nil; p = p.prev {
		if p.err != nil {
			errs = append(errs, p.err)
		}
		if p.group != nil && p.quant.has(propGreedy) && p.quant.inner != strict {
			errs = append(errs, fmt.Errorf("cep: stage %q: a greedy group must be Consecutive", p.name))
		}
		for _, a := range p.alternatives() {
			if err := collectErrors(a); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func checkNames[T any](p *Pattern[T], seen map[string]bool) error {
	for ; p != nil; p = p.prev {
		if p.group != nil {
			for _, a := range p.alternatives() {
				if err := checkNames(a, seen); err != nil {
					return err
				}
			}
			continue
		}
		if seen[p.name] {
			return fmt.Errorf("cep: duplicate stage name %q", p.name)
		}
		seen[p.name] = true
	}
	return nil
}

// minWindow is the smallest Within of the sequence, groups included (ms).
// Flink takes the minimum too, but decides whether a trailing
// notFollowedBy waits for the window before it has looked at the earlier
// stages' windows; weir uses the minimum from the start, so Within may be
// given on any stage.
func minWindow[T any](p *Pattern[T]) int64 {
	var w int64
	for ; p != nil; p = p.prev {
		if p.window > 0 && (w == 0 || p.window.Milliseconds() < w) {
			w = max(p.window.Milliseconds(), 1)
		}
		for _, a := range p.alternatives() {
			if g := minWindow(a); g > 0 && (w == 0 || g < w) {
				w = g
			}
		}
	}
	return w
}

func (c *compiler[T]) stage(name string) int32 {
	if i, ok := c.stageIdx[name]; ok {
		return i
	}
	i := int32(len(c.n.stages))
	c.n.stages = append(c.n.stages, name)
	c.stageIdx[name] = i
	return i
}

func (c *compiler[T]) createState(name string, kind stateKind, greedy bool) int32 {
	unique := name
	for i := 0; c.used[unique]; i++ {
		unique = name + ":" + strconv.Itoa(i)
	}
	c.used[unique] = true
	c.n.states = append(c.n.states, nstate[T]{name: unique, stage: c.stage(name), kind: kind, greedy: greedy})
	return int32(len(c.n.states) - 1)
}

func (c *compiler[T]) add(from int32, act action, to int32, cd cond[T]) {
	s := &c.n.states[from]
	s.edges = append(s.edges, edge[T]{act: act, from: from, to: to, cond: cd})
}

func (c *compiler[T]) isFinal(s int32) bool { return c.n.states[s].kind == kindFinal }

// notConditions are the NOT stages that still apply before the current
// stage: those reached backwards through optional stages.
func (c *compiler[T]) notConditions() []notCond[T] {
	var out []notCond[T]
	for p := c.cur; p.prev != nil && (p.prev.quant.has(propOptional) || p.prev.quant.consuming == notFollow); {
		p = p.prev
		if p.quant.consuming == notFollow {
			out = append(out, notCond[T]{c.takeCond(p), p.name})
		}
	}
	return out
}

func (c *compiler[T]) createMiddleStates(sink int32) int32 {
	last := sink
	for c.cur.prev != nil {
		switch c.cur.quant.consuming {
		case notFollow:
			// In the middle a NOT stage is only edge conditions of its
			// neighbours; at the end it is a pending state that becomes a
			// match once the window has passed.
			if c.n.window > 0 && c.isFinal(last) {
				pending := c.createState(c.cur.name, kindPending, false)
				nc := c.takeCond(c.cur)
				stop := c.createStop(nc, c.cur.name)
				c.add(pending, actProceed, stop, nc)
				c.add(pending, actIgnore, pending, not(nc))
				last = pending
			}
		case notNext:
			nn := c.createState(c.cur.name, kindNormal, false)
			nc := c.takeCond(c.cur)
			stop := c.createStop(nc, c.cur.name)
			if c.isFinal(last) {
				// an IGNORE, so that the match completes on the next event
				c.add(nn, actIgnore, last, not(nc))
			} else {
				c.add(nn, actProceed, last, not(nc))
			}
			c.add(nn, actProceed, stop, nc)
			last = nn
		default:
			last = c.convertPattern(last)
		}
		c.following = c.cur
		c.cur = c.cur.prev
	}
	return last
}

func (c *compiler[T]) convertPattern(sink int32) int32 {
	var last int32
	q := c.cur.quant
	switch {
	case q.has(propLooping):
		c.setFirstOfLoop(false)
		s := c.copyWithoutTransitiveNots(sink)
		looping := c.createLooping(s)
		c.setFirstOfLoop(true)
		last = c.createTimesState(looping, sink)
	case q.has(propTimes):
		last = c.createTimesState(sink, sink)
	default:
		last = c.createSingletonState(sink, sink, c.takeCond(c.cur), c.ignoreCond(c.cur), c.isOptional(c.cur))
	}
	c.addStopStates(last)
	return last
}

func (c *compiler[T]) createStop(nc cond[T], name string) int32 {
	if s, ok := c.stop[name]; ok {
		return s
	}
	s := c.createState(name, kindStop, false)
	c.add(s, actTake, s, nc)
	c.stop[name] = s
	return s
}

// copyWithoutTransitiveNots copies sink without the NOT edges of the NOT
// stages before an optional stage: taking an event in the optional stage
// ends them (Flink's example: a, notFollowedBy b, optional c, d matches
// "a c b d" but not "a b d").
func (c *compiler[T]) copyWithoutTransitiveNots(sink int32) int32 {
	nots := c.notConditions()
	if len(nots) == 0 || !c.cur.quant.has(propOptional) {
		return sink
	}
	src := c.n.states[sink]
	cp := c.createState(c.n.stages[src.stage], src.kind, src.greedy)
	for _, e := range src.edges {
		if e.act == actProceed {
			target := e.to
			remove := false
			if c.n.states[target].kind == kindStop {
				for _, nc := range nots {
					if c.n.stages[c.n.states[target].stage] == nc.name {
						remove = true
					}
				}
			} else {
				target = c.copyWithoutTransitiveNots(target)
			}
			if !remove {
				c.add(cp, actProceed, target, e.cond)
			}
			continue
		}
		target := e.to
		if e.to == e.from {
			target = cp
		}
		c.add(cp, e.act, target, e.cond)
	}
	return cp
}

func (c *compiler[T]) addStopStates(s int32) {
	for _, nc := range c.notConditions() {
		stop := c.createStop(nc.c, nc.name)
		c.add(s, actProceed, stop, nc.c)
	}
}

func (c *compiler[T]) addStopStateToLooping(s int32) {
	if c.following != nil && c.following.quant.consuming == notFollow {
		nc := c.takeCond(c.following)
		stop := c.createStop(nc, c.following.name)
		c.add(s, actProceed, stop, nc)
	}
}

// createTimesState builds the states of a times or looping stage: the
// optional states beyond from, the mandatory ones, and the head.
func (c *compiler[T]) createTimesState(sink, proceed int32) int32 {
	last := sink
	c.setFirstOfLoop(false)
	p := c.cur
	innerIgnore := extendWithUntil(c.innerIgnoreCond(p), p.until, false)
	take := extendWithUntil(c.takeCond(p), p.until, true)
	for i := p.from; i < p.to; i++ {
		last = c.createSingletonState(last, proceed, take, innerIgnore, true)
		c.addStopStateToLooping(last)
	}
	for i := 0; i < p.from-1; i++ {
		last = c.createSingletonState(last, -1, take, innerIgnore, false)
		c.addStopStateToLooping(last)
	}
	c.setFirstOfLoop(true)
	return c.createSingletonState(last, proceed, take, c.ignoreCond(p), p.quant.has(propOptional))
}

func (c *compiler[T]) setFirstOfLoop(v bool) {
	if c.cur.group != nil {
		c.firstOfLoop[c.cur] = v
	}
}

func (c *compiler[T]) groupFirstOfLoop() bool {
	if v, ok := c.firstOfLoop[c.curGroup]; ok {
		return v
	}
	return true
}

func (c *compiler[T]) headOfGroup(p *Pattern[T]) bool { return c.curGroup != nil && p.prev == nil }

func (c *compiler[T]) isOptional(p *Pattern[T]) bool {
	if c.headOfGroup(p) {
		return c.groupFirstOfLoop() && c.curGroup.quant.has(propOptional)
	}
	return p.quant.has(propOptional)
}

func (c *compiler[T]) createSingletonState(sink, proceed int32, take, ignore cond[T], optional bool) int32 {
	p := c.cur
	if p.group != nil {
		return c.createGroupState(p, sink, proceed, optional)
	}
	greedy := p.quant.has(propGreedy)
	st := c.createState(p.name, kindNormal, greedy)
	s := c.copyWithoutTransitiveNots(sink)
	c.add(st, actTake, s, take)

	proceedCond := c.trueCond()
	if optional && !c.headOfGroup(p) {
		if greedy {
			proceedCond = greedyCond(proceedCond, take, ignore, c.followTake)
		}
		c.add(st, actProceed, proceed, proceedCond)
	}
	if ignore != nil {
		ig := st
		if optional {
			// A second state without the PROCEED edge, so that a partial
			// match that skipped events does not branch again.
			ig = c.createState(p.name, kindNormal, greedy)
			c.add(ig, actTake, s, take)
			c.add(ig, actIgnore, ig, ignore)
			c.addStopStates(ig)
			if greedy {
				c.add(ig, actProceed, proceed, proceedCond)
			}
		}
		c.add(st, actIgnore, ig, ignore)
	}
	c.followTake = followingTake(c.followTake, take, optional)
	return st
}

// groupStates builds the states of one iteration of group (or
// alternation) stage g ending in sink, and returns its head and the
// condition of the events its first stages take. An alternation's head is
// a state that proceeds to the head of each alternative.
func (c *compiler[T]) groupStates(g *Pattern[T], sink int32) (int32, cond[T]) {
	following := c.following
	alts := g.alternatives()
	if len(alts) == 1 {
		c.curGroup, c.cur, c.followTake = g, alts[0], nil
		last := c.createMiddleStates(sink)
		return c.convertPattern(last), c.followTake
	}
	heads := make([]int32, len(alts))
	var take cond[T]
	for i, a := range alts {
		c.curGroup, c.cur, c.followTake, c.following = g, a, nil, following
		last := c.createMiddleStates(sink)
		heads[i] = c.convertPattern(last)
		take = followingTake(take, c.followTake, true)
	}
	branch := c.createState(g.name, kindNormal, false)
	// decisionGraph pops PROCEED targets from a stack: the first
	// alternative's edges come first when its PROCEED is added last
	for i := len(heads) - 1; i >= 0; i-- {
		c.add(branch, actProceed, heads[i], c.trueCond())
	}
	return branch, take
}

// groupExitCond is the condition of a group stage's PROCEED past it: any
// event, or, for a greedy group, one that cannot start another iteration.
func (c *compiler[T]) groupExitCond(g *Pattern[T], take cond[T]) cond[T] {
	cd := c.trueCond()
	if g.quant.has(propGreedy) && take != nil {
		cd = and(cd, not(take))
	}
	return cd
}

func (c *compiler[T]) createGroupState(g *Pattern[T], sink, proceed int32, optional bool) int32 {
	oldCur, oldFollowing, oldGroup, oldFT := c.cur, c.following, c.curGroup, c.followTake
	last, take := c.groupStates(g, sink)
	c.cur, c.following, c.curGroup = oldCur, oldFollowing, oldGroup
	if optional {
		c.add(last, actProceed, proceed, c.groupExitCond(g, take))
	}
	c.followTake = followingTake(oldFT, take, optional)
	return last
}

func (c *compiler[T]) createLoopingGroupState(g *Pattern[T], sink int32) int32 {
	proceedCond := c.trueCond()
	oldCur, oldFollowing, oldGroup, oldFT := c.cur, c.following, c.curGroup, c.followTake
	dummy := c.createState(c.cur.name, kindNormal, c.cur.quant.has(propGreedy))
	last, take := c.groupStates(g, dummy)
	c.cur, c.following, c.curGroup = oldCur, oldFollowing, oldGroup
	c.add(last, actProceed, sink, c.groupExitCond(g, take))
	c.add(dummy, actProceed, last, proceedCond)
	c.followTake = followingTake(oldFT, take, true)
	return last
}

func (c *compiler[T]) createLooping(sink int32) int32 {
	p := c.cur
	if p.group != nil {
		return c.createLoopingGroupState(p, sink)
	}
	ignore := extendWithUntil(c.innerIgnoreCond(p), p.until, false)
	take := extendWithUntil(c.takeCond(p), p.until, true)
	greedy := p.quant.has(propGreedy)
	proceedCond := c.trueCond()
	if greedy {
		proceedCond = greedyCond(proceedCond, take, ignore, c.followTake)
	}
	loop := c.createState(p.name, kindNormal, greedy)
	c.add(loop, actProceed, sink, proceedCond)
	c.add(loop, actTake, loop, take)
	c.addStopStateToLooping(loop)
	if ignore != nil {
		ig := c.createState(p.name, kindNormal, greedy)
		c.add(ig, actTake, loop, take)
		c.add(ig, actIgnore, ig, ignore)
		c.add(loop, actIgnore, ig, ignore)
		if greedy {
			c.add(ig, actProceed, sink, proceedCond)
		}
		c.addStopStateToLooping(ig)
	}
	c.followTake = followingTake(c.followTake, take, true)
	return loop
}

func extendWithUntil[T any](cd, until cond[T], isTake bool) cond[T] {
	switch {
	case until != nil && cd != nil:
		return and(not(until), cd)
	case until != nil && isTake:
		return not(until)
	}
	return cd
}

// greedyCond: proceed only if the event cannot stay in the loop but the
// following stage takes it, or if the loop can neither take nor ignore it.
func greedyCond[T any](cd, take, ignore, following cond[T]) cond[T] {
	g := and(cd, not(take))
	if following != nil {
		g = and(g, following)
	}
	if ignore != nil {
		return or(g, not(or(take, ignore)))
	}
	return or(g, not(take))
}

func followingTake[T any](ft, take cond[T], optional bool) cond[T] {
	if optional && ft != nil {
		return or(take, ft)
	}
	return take
}

func (c *compiler[T]) ignoreFor(p *Pattern[T], strategy consuming) cond[T] {
	var ig cond[T]
	switch strategy {
	case skipTillNext:
		ig = not(condOf(p))
	case skipTillAny:
		ig = trueCond[T]()
	}
	if c.curGroup != nil && c.curGroup.until != nil {
		ig = extendWithUntil(ig, c.curGroup.until, false)
	}
	return ig
}

func (c *compiler[T]) innerIgnoreCond(p *Pattern[T]) cond[T] {
	s := p.quant.inner
	if c.headOfGroup(p) {
		s = c.curGroup.quant.inner
	}
	return c.ignoreFor(p, s)
}

func (c *compiler[T]) ignoreCond(p *Pattern[T]) cond[T] {
	s := p.quant.consuming
	if c.headOfGroup(p) {
		if c.groupFirstOfLoop() {
			s = c.curGroup.quant.consuming
		} else {
			s = c.curGroup.quant.inner
		}
	}
	return c.ignoreFor(p, s)
}

func condOf[T any](p *Pattern[T]) cond[T] {
	if p.cond == nil {
		return trueCond[T]()
	}
	return p.cond
}

func (c *compiler[T]) takeCond(p *Pattern[T]) cond[T] {
	cd := condOf(p)
	if c.curGroup != nil && c.curGroup.until != nil {
		cd = extendWithUntil(cd, c.curGroup.until, true)
	}
	return cd
}

func (c *compiler[T]) trueCond() cond[T] {
	cd := trueCond[T]()
	if c.curGroup != nil && c.curGroup.until != nil {
		cd = extendWithUntil(cd, c.curGroup.until, true)
	}
	return cd
}
