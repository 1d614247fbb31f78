package cep

import (
	"slices"
	"time"
)

// Match is a complete match: the events each stage took, in event-time
// order. Stages that took no event (optional ones, NOT stages) are absent.
type Match[T any] map[string][]T

// Step is one event of a match and the stage that took it.
type Step[T any] struct {
	Stage string
	Event T
}

// compState is one partial match (Flink's ComputationState): the NFA
// state it is in and the shared-buffer node of the last event it took.
// It is plain data, 40 bytes, so that a key's partial matches are one
// slice and a snapshot is a copy.
type compState struct {
	State   int32
	Node    int32 // last taken event in the shared buffer; -1: none
	StartTS int64 // timestamp of the first event (ms)
	StartID int64 // id of the first event; -1: the start state
	PrevTS  int64
}

// before orders partial matches by their first event, the start state
// last (Flink's COMPUTATION_STATE_COMPARATOR).
func (a compState) before(b compState) bool {
	if a.StartID < 0 {
		return false
	}
	return b.StartID < 0 || a.StartID <= b.StartID
}

// sharedBuffer holds the events of a key's partial matches once each,
// however many partial matches took them (Flink's SharedBuffer). A node is
// one taken event (event, stage) linked to the node of the event taken
// before it; partial matches that share a prefix share its nodes. Nodes
// and events are reference counted and their slots reused, so the buffer
// holds exactly what live partial matches reach.
type sharedBuffer[T any] struct {
	Events   []sbEvent[T]
	Nodes    []sbNode
	FreeEv   []int32
	FreeNode []int32
}

type sbEvent[T any] struct {
	Ev  T
	TS  int64
	ID  int64
	Ref int32
}

type sbNode struct {
	Event int32
	Stage int32
	Prev  int32
	Ref   int32
}

func (b *sharedBuffer[T]) addEvent(ev *T, ts, id int64) int32 {
	e := sbEvent[T]{Ev: *ev, TS: ts, ID: id, Ref: 1}
	if n := len(b.FreeEv); n > 0 {
		i := b.FreeEv[n-1]
		b.FreeEv = b.FreeEv[:n-1]
		b.Events[i] = e
		return i
	}
	b.Events = append(b.Events, e)
	return int32(len(b.Events) - 1)
}

func (b *sharedBuffer[T]) releaseEvent(i int32) {
	e := &b.Events[i]
	if e.Ref--; e.Ref <= 0 {
		var zero sbEvent[T]
		*e = zero
		b.FreeEv = append(b.FreeEv, i)
	}
}

func (b *sharedBuffer[T]) addNode(ev, stage, prev int32) int32 {
	nd := sbNode{Event: ev, Stage: stage, Prev: prev}
	b.Events[ev].Ref++
	if prev >= 0 {
		b.Nodes[prev].Ref++
	}
	if n := len(b.FreeNode); n > 0 {
		i := b.FreeNode[n-1]
		b.FreeNode = b.FreeNode[:n-1]
		b.Nodes[i] = nd
		return i
	}
	b.Nodes = append(b.Nodes, nd)
	return int32(len(b.Nodes) - 1)
}

func (b *sharedBuffer[T]) retain(n int32) {
	if n >= 0 {
		b.Nodes[n].Ref++
	}
}

// release drops one reference to node n, freeing it (and, in turn, what
// only it referenced) at zero.
func (b *sharedBuffer[T]) release(n int32) {
	for n >= 0 {
		nd := &b.Nodes[n]
		if nd.Ref--; nd.Ref > 0 {
			return
		}
		prev, ev := nd.Prev, nd.Event
		*nd = sbNode{}
		b.FreeNode = append(b.FreeNode, n)
		b.releaseEvent(ev)
		n = prev
	}
}

// live is the number of nodes in use (for tests of state size).
func (b *sharedBuffer[T]) live() int { return len(b.Nodes) - len(b.FreeNode) }

// nfaState is one pattern's automaton for one key: its partial matches
// (the start state is implicit: it is always there). Plain data with
// exported fields, so that snapshots encode it; an idle pattern costs two
// nil slices.
type nfaState struct {
	Partial   []compState // ordered by first event
	Completed []compState // skip strategies: matches waiting for earlier partial matches
}

// keyState is everything Detect keeps for one key: the events waiting for
// the watermark, the shared buffer of every pattern's partial matches
// (an event is stored once for all patterns and partial matches), and an
// automaton per pattern.
type keyState[T any] struct {
	Pend  []pendingEvent[T] // arrival order
	Timer int64             // registered event-time timer (ms); noTimer: none
	Seq   int64             // id of the next event fed to the automata
	Buf   sharedBuffer[T]
	NFA   []nfaState
	// gen counts the reuses of this struct for another key (detectFn.
	// recycle), so that the sweep's wakes of the old key are seen stale.
	gen uint32
}

// feed is the event being fed to a key's automata, shared by the runners
// of all patterns so that the event is stored once.
type feed[T any] struct {
	buf   *sharedBuffer[T]
	curEv int32 // the event in buf; -1: not stored yet
	curID int64
}

type pendingEvent[T any] struct {
	TS int64
	Ev T
}

const noTimer = -1 << 63

// Context is what an iterative condition sees of the partial match it
// would extend.
type Context[T any] struct {
	buf   *sharedBuffer[T]
	nfa   *nfa[T]
	node  int32
	ts    int64
	stage []T
	steps []Step[T]
}

// Steps returns the events of this partial match so far, in the order
// they were taken, each with its stage. The slice is valid during the
// call of the condition only.
func (c *Context[T]) Steps() []Step[T] {
	out := c.steps[:0]
	for n := c.node; n >= 0; n = c.buf.Nodes[n].Prev {
		nd := &c.buf.Nodes[n]
		out = append(out, Step[T]{Stage: c.nfa.stages[nd.Stage], Event: c.buf.Events[nd.Event].Ev})
	}
	slices.Reverse(out)
	c.steps = out
	return out
}

// EventsForPattern returns the events the stage name has taken so far in
// this partial match, in order. The slice is valid during the call of the
// condition only.
func (c *Context[T]) EventsForPattern(name string) []T {
	out := c.stage[:0]
	for n := c.node; n >= 0; n = c.buf.Nodes[n].Prev {
		nd := &c.buf.Nodes[n]
		if c.nfa.stages[nd.Stage] == name {
			out = append(out, c.buf.Events[nd.Event].Ev)
		}
	}
	slices.Reverse(out)
	c.stage = out
	return out
}

// Timestamp is the event time of the event being tested.
func (c *Context[T]) Timestamp() time.Time { return time.UnixMilli(c.ts).UTC() }

// runner feeds one key's events to the NFA. One runner per subtask: it
// holds scratch space reused across events and keys.
type runner[T any] struct {
	nfa  *nfa[T]
	ks   *nfaState
	feed *feed[T]
	ctx  Context[T]
	next []compState
	cand []compState // new partial matches
	pot  []compState // new complete matches
	edge []edge[T]
	stk  []int32
	ida  [][2]int64
	idb  [][2]int64
	cnt  []int // materialize: events per stage

	timeouts bool

	onMatch   func(m Match[T])
	onSteps   func(s []Step[T]) // replaces onMatch when set
	onTimeout func(m Match[T], at int64)
}

func newRunner[T any](n *nfa[T], f *feed[T]) *runner[T] {
	return &runner[T]{nfa: n, feed: f}
}

func (r *runner[T]) buf() *sharedBuffer[T] { return r.feed.buf }

func (r *runner[T]) startState() compState {
	return compState{State: r.nfa.start, Node: -1, StartTS: -1, StartID: -1}
}

// idle reports whether the automaton holds nothing but the start state.
func idle(ns *nfaState) bool { return len(ns.Partial) == 0 && len(ns.Completed) == 0 }

// process feeds one event, in event-time order, to the key's NFA.
// The caller (feed) assigns the event its id and releases it afterwards.
func (r *runner[T]) process(ks *nfaState, ev *T, ts int64) {
	r.ks = ks
	cand := r.cand[:0]
	pot := r.pot[:0]
	for i := 0; i <= len(ks.Partial); i++ {
		cs := r.startState()
		if i < len(ks.Partial) {
			cs = ks.Partial[i]
		}
		r.next = r.computeNext(cs, ev, ts, r.next[:0])
		keep := len(cand)
		discard := false
		for _, n := range r.next {
			switch r.nfa.states[n.State].kind {
			case kindFinal:
				pot = append(pot, n)
			case kindStop:
				discard = true
				r.buf().release(n.Node)
			default:
				cand = append(cand, n)
			}
		}
		if discard {
			// A NOT stage matched: the whole branch dies.
			for _, n := range cand[keep:] {
				r.buf().release(n.Node)
			}
			cand = cand[:keep]
		}
	}
	r.cand, r.pot = cand, pot
	r.settle(ks, pot)
}

// settle installs r.cand as the key's partial matches after handing the
// complete matches pot to the skip strategy.
func (r *runner[T]) settle(ks *nfaState, pot []compState) {
	if len(pot) > 0 || len(ks.Completed) > 0 {
		r.emitMatches(ks, pot)
	}
	// Swap rather than copy: the old slice becomes the next scratch.
	if len(r.cand) == 0 {
		// Leave an idle pattern nothing to store.
		r.cand, ks.Partial = ks.Partial[:0], nil
		return
	}
	ks.Partial, r.cand = r.cand, ks.Partial[:0]
}

// advanceTime drops the partial matches that time reaching ts has timed
// out (Flink's FIRST_AND_LAST window: ts - first >= window); those waiting
// in a trailing notFollowedBy become matches.
func (r *runner[T]) advanceTime(ks *nfaState, ts int64) {
	w := r.nfa.window
	if w <= 0 {
		return
	}
	// Partial matches are ordered by first event: when the earliest has
	// not timed out, none has.
	if len(ks.Partial) == 0 || ts-ks.Partial[0].StartTS < w {
		return
	}
	r.ks = ks
	cand := r.cand[:0]
	pot := r.pot[:0]
	for _, cs := range ks.Partial {
		if ts-cs.StartTS < w {
			cand = append(cand, cs)
			continue
		}
		if r.nfa.states[cs.State].kind == kindPending {
			pot = append(pot, cs)
			continue
		}
		if r.timeouts && r.onTimeout != nil {
			r.onTimeout(r.materialize(cs.Node), cs.StartTS+w)
		}
		r.buf().release(cs.Node)
	}
	r.cand, r.pot = cand, pot
	r.settle(ks, pot)
}

// emitMatches emits complete matches in the order of their first events.
// With a skip strategy, a match waits while an earlier partial match is
// alive (it might complete and prune it), and each emitted match prunes
// the partial and complete matches its strategy discards.
func (r *runner[T]) emitMatches(ks *nfaState, pot []compState) {
	if len(pot) > 1 {
		slices.SortStableFunc(pot, r.cmpMatch)
	}
	if len(pot) > 0 {
		ks.Completed = mergeByStart(ks.Completed, pot)
	}
	skip := r.nfa.skip
	for len(ks.Completed) > 0 {
		m := ks.Completed[0]
		if skip.kind != noSkip && len(r.cand) > 0 && !m.before(r.cand[0]) {
			break
		}
		if skip.kind != noSkip && r.nfa.hasAlt {
			if m = r.preferred(ks.Completed); r.waitsForPreferred(m) {
				break
			}
		}
		ks.Completed = ks.Completed[1:]
		if skip.kind != noSkip {
			if id, ok := r.pruningID(m); ok {
				r.cand = r.prune(r.cand, id, skip.kind)
				ks.Completed = r.prune(ks.Completed, id, skip.kind)
			}
			if r.nfa.hasAlt {
				// one match per first event, as in SQL: the other
				// alternatives' matches from it are discarded too
				// (SkipToFirst/SkipToLast to the first event keeps them)
				r.cand = r.dropStart(r.cand, m.StartID)
				ks.Completed = r.dropStart(ks.Completed, m.StartID)
			}
		}
		switch {
		case r.onSteps != nil:
			r.onSteps(r.steps(m.Node))
		case r.onMatch != nil:
			r.onMatch(r.materialize(m.Node))
		}
		r.buf().release(m.Node)
	}
	if len(ks.Completed) == 0 {
		ks.Completed = nil
	}
}

// preferred moves to the front the most preferred of the complete matches
// with the same first event as completed[0] (see prefer) and returns it.
func (r *runner[T]) preferred(completed []compState) compState {
	best := 0
	for j := 1; j < len(completed) && completed[j].StartID == completed[0].StartID; j++ {
		if r.prefer(completed[j], completed[best]) < 0 {
			best = j
		}
	}
	if best > 0 {
		m := completed[best]
		copy(completed[1:best+1], completed[:best])
		completed[0] = m
	}
	return completed[0]
}

// waitsForPreferred reports whether a partial match with the same first
// event as complete match m is preferred to it: m waits for it to end.
func (r *runner[T]) waitsForPreferred(m compState) bool {
	for _, cs := range r.cand {
		if cs.StartID == m.StartID && r.prefer(cs, m) < 0 {
			return true
		}
	}
	return false
}

// prefer compares two partial or complete matches with the same first
// event by SQL's preference among alternatives: at the first event where
// their stages differ, the one in the earlier alternative of the
// innermost alternation holding both is preferred (-1: a). 0 when no
// alternation tells them apart (one a prefix of the other, or a loop
// against its exit).
func (r *runner[T]) prefer(a, b compState) int {
	r.ida = r.chain(a.Node, r.ida[:0])
	r.idb = r.chain(b.Node, r.idb[:0])
	for i := 0; i < len(r.ida) && i < len(r.idb); i++ {
		x, y := r.ida[i], r.idb[i]
		if x[0] != y[0] {
			return 0
		}
		if x[1] != y[1] {
			return r.nfa.altCmp(int32(x[1]), int32(y[1]))
		}
	}
	return 0
}

// altCmp compares stages s and t by the alternatives they are in: -1
// when s is in an earlier alternative of the first alternation where
// their paths part.
func (n *nfa[T]) altCmp(s, t int32) int {
	if int(s) >= len(n.altPath) || int(t) >= len(n.altPath) {
		return 0
	}
	p, q := n.altPath[s], n.altPath[t]
	for k := 0; k < len(p) && k < len(q); k++ {
		if p[k].id != q[k].id {
			return 0
		}
		if p[k].branch != q[k].branch {
			return cmpInt(int64(p[k].branch), int64(q[k].branch))
		}
	}
	return 0
}

// steps lists a node chain's events and stages, first event first.
func (r *runner[T]) steps(n int32) []Step[T] {
	b := r.buf()
	k := 0
	for x := n; x >= 0; x = b.Nodes[x].Prev {
		k++
	}
	out := make([]Step[T], k)
	for x := n; x >= 0; x = b.Nodes[x].Prev {
		k--
		out[k] = Step[T]{Stage: r.nfa.stages[b.Nodes[x].Stage], Event: b.Events[b.Nodes[x].Event].Ev}
	}
	return out
}

// cmpMatch orders complete matches of one event by first event, then by
// their events (id, stage) from the first on. Flink leaves the order of
// matches with the same first event to its priority queue's heap; weir
// makes it deterministic, which decides which of them a skip strategy
// keeps.
func (r *runner[T]) cmpMatch(a, b compState) int {
	if a.StartID != b.StartID {
		if a.before(b) {
			return -1
		}
		return 1
	}
	r.ida = r.chain(a.Node, r.ida[:0])
	r.idb = r.chain(b.Node, r.idb[:0])
	for i := 0; i < len(r.ida) && i < len(r.idb); i++ {
		x, y := r.ida[i], r.idb[i]
		if x[0] != y[0] {
			return cmpInt(x[0], y[0])
		}
		if x[1] != y[1] {
			return cmpInt(x[1], y[1])
		}
	}
	return cmpInt(int64(len(r.ida)), int64(len(r.idb)))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chain lists the (event id, stage) pairs of a node chain, first event
// first.
func (r *runner[T]) chain(n int32, out [][2]int64) [][2]int64 {
	b := r.buf()
	for ; n >= 0; n = b.Nodes[n].Prev {
		out = append(out, [2]int64{b.Events[b.Nodes[n].Event].ID, int64(b.Nodes[n].Stage)})
	}
	slices.Reverse(out)
	return out
}

// mergeByStart merges b into a, both ordered by first event; on equal
// first events a's come first.
func mergeByStart(a, b []compState) []compState {
	if len(a) == 0 {
		return append(a, b...)
	}
	out := make([]compState, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].before(b[j]) {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// pruningID is the event id a match prunes from (Flink's getPruningId).
func (r *runner[T]) pruningID(m compState) (int64, bool) {
	b := r.buf()
	skip := r.nfa.skip
	var id int64 = -1
	found := false
	for n := m.Node; n >= 0; n = b.Nodes[n].Prev {
		nd := &b.Nodes[n]
		eid := b.Events[nd.Event].ID
		switch skip.kind {
		case skipToNext: // the first event
			id, found = eid, true
		case skipPastLast: // the last event
			if !found {
				id, found = eid, true
			}
		case skipToFirst: // the stage's first event: the last one seen walking back
			if skip.names(r.nfa.stages[nd.Stage]) {
				id, found = eid, true
			}
		case skipToLast: // the stage's last event
			if !found && skip.names(r.nfa.stages[nd.Stage]) {
				id, found = eid, true
			}
		}
	}
	return id, found
}

// dropStart removes the states whose first event is id.
func (r *runner[T]) dropStart(states []compState, id int64) []compState {
	out := states[:0]
	for _, cs := range states {
		if cs.StartID == id {
			r.buf().release(cs.Node)
			continue
		}
		out = append(out, cs)
	}
	return out
}

// prune removes the states the skip strategy discards: those whose first
// event is at or before id (before, for SkipToFirst and SkipToLast).
func (r *runner[T]) prune(states []compState, id int64, kind skipKind) []compState {
	out := states[:0]
	for _, cs := range states {
		drop := cs.StartID >= 0 && (cs.StartID < id || (cs.StartID == id && kind != skipToFirst && kind != skipToLast))
		if drop {
			r.buf().release(cs.Node)
			continue
		}
		out = append(out, cs)
	}
	return out
}

// materialize builds the match a node chain ends: one map and one slice
// for all its events, each stage a part of the slice capped at its end
// (appending to one stage's events cannot overwrite another's).
func (r *runner[T]) materialize(n int32) Match[T] {
	b := r.buf()
	cnt := r.cnt[:0]
	for range r.nfa.stages {
		cnt = append(cnt, 0)
	}
	total := 0
	for x := n; x >= 0; x = b.Nodes[x].Prev {
		cnt[b.Nodes[x].Stage]++
		total++
	}
	all := make([]T, total)
	stages := 0
	for _, c := range cnt {
		if c > 0 {
			stages++
		}
	}
	m := make(Match[T], stages)
	// Lay the stages out by stage index; each part is filled from its end
	// while walking back, so its events come out in order.
	end := 0
	for i, c := range cnt {
		end += c
		cnt[i] = end // now: one past the next free slot from the end
	}
	for x := n; x >= 0; x = b.Nodes[x].Prev {
		nd := &b.Nodes[x]
		cnt[nd.Stage]--
		all[cnt[nd.Stage]] = b.Events[nd.Event].Ev
	}
	// cnt[i] is now where stage i starts; it ends where the next begins.
	for i, start := range cnt {
		stop := total
		if i+1 < len(cnt) {
			stop = cnt[i+1]
		}
		if stop > start {
			m[r.nfa.stages[i]] = all[start:stop:stop]
		}
	}
	r.cnt = cnt
	return m
}

// computeNext is Flink's computeNextStates: the partial matches that cs
// becomes with event ev.
func (r *runner[T]) computeNext(cs compState, ev *T, ts int64, out []compState) []compState {
	buf := r.buf()
	r.ctx = Context[T]{buf: buf, nfa: r.nfa, node: cs.Node, ts: ts, stage: r.ctx.stage, steps: r.ctx.steps}
	edges := r.decisionGraph(cs.State, ev)
	isStart := r.nfa.states[cs.State].kind == kindStart
	for _, e := range edges {
		switch e.act {
		case actIgnore:
			if !isStart {
				buf.retain(cs.Node)
				out = append(out, compState{State: e.to, Node: cs.Node, StartTS: cs.StartTS, StartID: cs.StartID, PrevTS: cs.PrevTS})
			}
		case actTake:
			f := r.feed
			if f.curEv < 0 {
				// Stored on its first take only, with a reference held
				// until the event is processed (Flink's EventWrapper).
				f.curEv = buf.addEvent(ev, ts, f.curID)
			}
			node := buf.addNode(f.curEv, r.nfa.states[e.from].stage, cs.Node)
			startTS, startID := cs.StartTS, cs.StartID
			if isStart {
				startTS, startID = ts, f.curID
			}
			buf.retain(node)
			out = append(out, compState{State: e.to, Node: node, StartTS: startTS, StartID: startID, PrevTS: ts})
			if fs := r.finalAfterProceed(e.to, ev); fs >= 0 {
				buf.retain(node)
				out = append(out, compState{State: fs, Node: node, StartTS: startTS, StartID: startID, PrevTS: ts})
			}
		}
	}
	buf.release(cs.Node)
	return out
}

// decisionGraph collects the TAKE and IGNORE edges the event enables from
// state s, following PROCEED edges (in Flink's stack order).
func (r *runner[T]) decisionGraph(s int32, ev *T) []edge[T] {
	out := r.edge[:0]
	stk := append(r.stk[:0], s)
	for len(stk) > 0 {
		cur := stk[len(stk)-1]
		stk = stk[:len(stk)-1]
		for _, e := range r.nfa.states[cur].edges {
			if e.cond != nil && !e.cond(ev, &r.ctx) {
				continue
			}
			if e.act == actProceed {
				stk = append(stk, e.to)
			} else {
				out = append(out, e)
			}
		}
	}
	r.edge, r.stk = out, stk
	return out
}

// finalAfterProceed is the final state reachable from s by PROCEED edges
// the event enables, or -1.
func (r *runner[T]) finalAfterProceed(s int32, ev *T) int32 {
	stk := append(r.stk[:0], s)
	defer func() { r.stk = stk[:0] }()
	for len(stk) > 0 {
		cur := stk[len(stk)-1]
		stk = stk[:len(stk)-1]
		for _, e := range r.nfa.states[cur].edges {
			if e.act != actProceed || (e.cond != nil && !e.cond(ev, &r.ctx)) {
				continue
			}
			if r.nfa.states[e.to].kind == kindFinal {
				return e.to
			}
			stk = append(stk, e.to)
		}
	}
	return -1
}
