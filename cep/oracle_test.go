package cep

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// The oracle: Flink's CEP semantics stated directly over one key's events
// in event-time order, by enumerating every subsequence and assignment of
// its events to stages (not through an NFA). It covers single, times,
// times-range, looping and optional stages with strict, relaxed and
// non-deterministic relaxed contiguity between and inside stages, NOT
// stages between two single stages and at the end, Within, and the skip
// strategies applied to the complete set of matches in emission order.

type ev struct {
	ID   int // unique over the input
	Key  int
	TS   int64 // ms
	Mask uint8 // bit b set: the event meets the condition of letter b
}

type oStage struct {
	name     string
	bit      uint8
	cons     consuming // towards the previous stage
	inner    consuming // within the stage
	min, max int       // max < 0: unbounded
	optional bool
	// A NOT stage between the previous stage and this one.
	notKind consuming // 0 (strict): none; notNext or notFollow
	notBit  uint8
	notName string
}

type oPattern struct {
	stages     []oStage
	endNot     consuming // notNext or notFollow after the last stage; 0: none
	endNotBit  uint8
	endNotName string
	window     int64
	skip       skipStrategy
}

func (s oStage) meets(e ev) bool { return e.Mask&(1<<s.bit) != 0 }

// taken is one event of a match: its position in the key's events and its
// stage.
type taken struct{ pos, stage int }

// oracle returns the matches of one key's ordered events, in Flink's
// emission order under the pattern's skip strategy.
func (p oPattern) oracle(evs []ev) [][]taken {
	var all [][]taken
	var cur []taken
	n := len(p.stages)
	meetsNot := func(bit uint8, e ev) bool { return e.Mask&(1<<bit) != 0 }
	// gapOK: may the events strictly between positions a and b be skipped
	// under strategy c with condition of stage st?
	gapOK := func(a, b int, c consuming, st oStage) bool {
		switch c {
		case strict:
			return b == a+1
		case skipTillNext:
			for i := a + 1; i < b; i++ {
				if st.meets(evs[i]) {
					return false
				}
			}
		}
		return true
	}
	complete := func() {
		first, last := cur[0], cur[len(cur)-1]
		t0 := evs[first.pos].TS
		if p.window > 0 && evs[last.pos].TS-t0 >= p.window {
			return
		}
		switch p.endNot {
		case notNext:
			q := last.pos + 1
			if q >= len(evs) || meetsNot(p.endNotBit, evs[q]) {
				return
			}
			if p.window > 0 && evs[q].TS-t0 >= p.window {
				return
			}
		case notFollow:
			for q := last.pos + 1; q < len(evs) && evs[q].TS < t0+p.window; q++ {
				if meetsNot(p.endNotBit, evs[q]) {
					return
				}
			}
		}
		all = append(all, slices.Clone(cur))
	}
	var dfs func(s, c, pos int, dead bool)
	dfs = func(s, c, pos int, dead bool) {
		// complete here?
		if c >= p.stages[s].min {
			rest := true
			for t := s + 1; t < n; t++ {
				rest = rest && p.stages[t].optional
			}
			if rest && (p.endNot == 0 || s == n-1) {
				complete()
			}
		}
		if dead {
			return
		}
		for q := pos + 1; q < len(evs); q++ {
			if p.window > 0 && evs[q].TS-evs[cur[0].pos].TS >= p.window {
				break
			}
			e := evs[q]
			// same stage
			st := p.stages[s]
			if (st.max < 0 || c < st.max) && st.meets(e) && gapOK(pos, q, st.inner, st) {
				cur = append(cur, taken{q, s})
				dfs(s, c+1, q, false)
				cur = cur[:len(cur)-1]
			}
			if c < st.min {
				continue
			}
			for t := s + 1; t < n; t++ {
				nt := p.stages[t]
				if nt.meets(e) && gapOK(pos, q, nt.cons, nt) && p.notOK(nt, evs, pos, q) {
					// An event that meets a notFollowedBy's condition ends
					// the partial match, but in Flink's code a match it
					// completes is still emitted (the final state is
					// collected before the stop state discards the rest).
					dead := nt.notKind == notFollow && e.Mask&(1<<nt.notBit) != 0
					cur = append(cur, taken{q, t})
					dfs(t, 1, q, dead)
					cur = cur[:len(cur)-1]
				}
				if !nt.optional {
					break
				}
			}
		}
	}
	for q := range evs {
		for t := 0; t < n; t++ {
			if p.stages[t].meets(evs[q]) {
				cur = append(cur[:0], taken{q, t})
				dfs(t, 1, q, false)
			}
			if !p.stages[t].optional {
				break
			}
		}
	}
	return p.applySkip(all, evs)
}

// notOK checks the NOT stage before stage nt between positions a (the
// previous stage's event) and b (nt's first event).
func (p oPattern) notOK(nt oStage, evs []ev, a, b int) bool {
	bit := nt.notBit
	switch nt.notKind {
	case notNext:
		return evs[a+1].Mask&(1<<bit) == 0
	case notFollow:
		for i := a + 1; i < b; i++ {
			if evs[i].Mask&(1<<bit) != 0 {
				return false
			}
		}
	}
	return true
}

// applySkip orders the matches as Flink emits them (first event, then
// completing event, then events in order) and applies the skip strategy:
// an emitted match discards the later ones its strategy prunes.
func (p oPattern) applySkip(all [][]taken, evs []ev) [][]taken {
	key := func(m []taken) []int {
		k := []int{m[0].pos, m[len(m)-1].pos}
		if p.endNot == notNext {
			k[1] = m[len(m)-1].pos + 1 // completes on the next event
		}
		if p.endNot == notFollow {
			k[1] = 1 << 30 // completes when time passes the window
		}
		for _, t := range m {
			k = append(k, t.pos, t.stage)
		}
		return k
	}
	slices.SortStableFunc(all, func(a, b []taken) int { return slices.Compare(key(a), key(b)) })
	if p.skip.kind == noSkip {
		return all
	}
	var out [][]taken
	for len(all) > 0 {
		m := all[0]
		all = all[1:]
		out = append(out, m)
		prune, strictLess := -1, false
		switch p.skip.kind {
		case skipToNext:
			prune = m[0].pos
		case skipPastLast:
			prune = m[len(m)-1].pos
		case skipToFirst, skipToLast:
			strictLess = true
			for _, t := range m {
				if p.stages[t.stage].name == p.skip.stage {
					if prune < 0 || p.skip.kind == skipToLast {
						prune = t.pos
					}
				}
			}
		}
		if prune < 0 {
			continue
		}
		all = slices.DeleteFunc(all, func(o []taken) bool {
			return o[0].pos < prune || (!strictLess && o[0].pos == prune)
		})
	}
	return out
}

// build turns the oracle's pattern into a cep.Pattern.
func (p oPattern) build() *Pattern[ev] {
	var pat *Pattern[ev]
	opt := Option{p.skip}
	for i, s := range p.stages {
		cond := func(e ev) bool { return e.Mask&(1<<s.bit) != 0 }
		if s.notKind != 0 {
			nb := s.notBit
			nc := func(e ev) bool { return e.Mask&(1<<nb) != 0 }
			if s.notKind == notNext {
				pat = pat.NotNext(s.notName).Where(nc)
			} else {
				pat = pat.NotFollowedBy(s.notName).Where(nc)
			}
		}
		switch {
		case i == 0:
			pat = Begin[ev](s.name, opt)
		case s.cons == strict:
			pat = pat.Next(s.name)
		case s.cons == skipTillNext:
			pat = pat.FollowedBy(s.name)
		default:
			pat = pat.FollowedByAny(s.name)
		}
		pat.Where(cond)
		switch {
		case s.max < 0:
			pat.TimesOrMore(s.min)
		case s.min == 1 && s.max == 1:
		case s.min == s.max:
			pat.Times(s.min)
		default:
			pat.TimesRange(s.min, s.max)
		}
		if s.max != 1 {
			switch s.inner {
			case strict:
				pat.Consecutive()
			case skipTillAny:
				pat.AllowCombinations()
			}
		}
		if s.optional {
			pat.Optional()
		}
	}
	if p.endNot != 0 {
		nb := p.endNotBit
		nc := func(e ev) bool { return e.Mask&(1<<nb) != 0 }
		if p.endNot == notNext {
			pat = pat.NotNext(p.endNotName).Where(nc)
		} else {
			pat = pat.NotFollowedBy(p.endNotName).Where(nc)
		}
	}
	if p.window > 0 {
		pat.Within(time.Duration(p.window) * time.Millisecond)
	}
	return pat
}

func (p oPattern) String() string {
	var b strings.Builder
	for i, s := range p.stages {
		if s.notKind != 0 {
			fmt.Fprintf(&b, " %v(%s:bit%d)", s.notKind, s.notName, s.notBit)
		}
		if i > 0 {
			fmt.Fprintf(&b, " %v", s.cons)
		}
		fmt.Fprintf(&b, " %s:bit%d{%d,%d inner=%v opt=%v}", s.name, s.bit, s.min, s.max, s.inner, s.optional)
	}
	if p.endNot != 0 {
		fmt.Fprintf(&b, " %v(%s:bit%d)", p.endNot, p.endNotName, p.endNotBit)
	}
	fmt.Fprintf(&b, " within=%d skip=%v", p.window, p.skip)
	return b.String()
}

func (c consuming) String() string {
	return [...]string{"next", "followedBy", "followedByAny", "notFollowedBy", "notNext"}[c]
}

// randPattern draws a pattern the oracle covers.
func randPattern(rng *rand.Rand) oPattern {
	var p oPattern
	n := 1 + rng.IntN(3)
	names := []string{"a", "b", "c"}
	for i := 0; i < n; i++ {
		s := oStage{name: names[i], bit: uint8(rng.IntN(3)), cons: consuming(rng.IntN(3)), inner: skipTillNext, min: 1, max: 1}
		if i == 0 {
			s.cons = strict
		}
		switch rng.IntN(6) {
		case 0:
			s.min = 2 + rng.IntN(2)
			s.max = s.min
		case 1:
			s.min = 1 + rng.IntN(2)
			s.max = s.min + 1 + rng.IntN(2)
		case 2:
			s.max = -1
		case 3:
			s.min, s.max = 2, -1
		}
		if s.max != 1 {
			s.inner = consuming(rng.IntN(3))
		}
		if rng.IntN(4) == 0 {
			s.optional = true
		}
		p.stages = append(p.stages, s)
	}
	if rng.IntN(3) == 0 {
		p.window = int64(2 + rng.IntN(8))
	}
	// A NOT stage between two single stages, or at the end after one.
	if rng.IntN(3) == 0 {
		i := rng.IntN(n + 1)
		single := func(j int) bool {
			return j >= 0 && j < n && p.stages[j].min == 1 && p.stages[j].max == 1 && !p.stages[j].optional
		}
		kind := notNext
		if rng.IntN(2) == 0 {
			kind = notFollow
		}
		bit := uint8(rng.IntN(3))
		switch {
		case i == n && single(n-1):
			if kind == notFollow && p.window == 0 {
				p.window = int64(2 + rng.IntN(8))
			}
			p.endNot, p.endNotBit, p.endNotName = kind, bit, "not"
		case i > 0 && i < n && single(i-1) && !p.stages[i].optional:
			p.stages[i].notKind, p.stages[i].notBit, p.stages[i].notName = kind, bit, "not"
		}
	}
	switch rng.IntN(5) {
	case 1:
		p.skip = skipStrategy{kind: skipToNext}
	case 2:
		p.skip = skipStrategy{kind: skipPastLast}
	case 3:
		p.skip = skipStrategy{kind: skipToFirst, stage: p.stages[rng.IntN(n)].name}
	case 4:
		p.skip = skipStrategy{kind: skipToLast, stage: p.stages[rng.IntN(n)].name}
	}
	// Under a skip strategy a match waits while a partial match that began
	// earlier is alive; without Within such a partial match lives forever
	// and the match is never emitted (as in Flink, which does not flush at
	// the end of input). The oracle gives the matches emitted once every
	// partial match has ended, so skip strategies get a window
	// (TestSkipWaitsForEarlierPartialMatch covers the case without one).
	if p.skip.kind != noSkip && p.window == 0 {
		p.window = int64(3 + rng.IntN(8))
	}
	return p
}

// randEvents draws keyed events with bounded disorder: timestamps grow by
// 0..2 ms per event, and arrival swaps neighbours within the bound.
func randEvents(rng *rand.Rand, keys, perKey int, disorder int64) []ev {
	var evs []ev
	var ts int64 = 1000
	id := 0
	for i := 0; i < keys*perKey; i++ {
		ts += int64(rng.IntN(3))
		evs = append(evs, ev{ID: id, Key: rng.IntN(keys), TS: ts, Mask: uint8(rng.IntN(8))})
		id++
	}
	// Bounded disorder: move events back by less than disorder ms.
	for i := range evs {
		j := i
		for j > 0 && evs[j-1].TS < evs[i].TS && evs[i].TS-evs[j-1].TS < disorder && rng.IntN(3) == 0 {
			j--
		}
		if j < i {
			e := evs[i]
			copy(evs[j+1:i+1], evs[j:i])
			evs[j] = e
		}
	}
	return evs
}

// byKeyInOrder splits events per key in event-time order, ties in arrival
// order: what the NFA sees.
func byKeyInOrder(evs []ev) map[int][]ev {
	out := map[int][]ev{}
	for _, e := range evs {
		out[e.Key] = append(out[e.Key], e)
	}
	for k, l := range out {
		slices.SortStableFunc(l, func(a, b ev) int { return cmpInt(a.TS, b.TS) })
		out[k] = l
	}
	return out
}
