package types

import (
	"cmp"
	"slices"
)

// A CountedSet is a multiset of scalar values in a hash table, each value
// with its count: the accumulator of a DISTINCT aggregate over values
// whose equality is that of their bits (integers, booleans, compact
// decimals, dates, times, timestamps, intervals: Value.I; strings and
// bytes: Value.S). It replaces the sorted list [v0, n0, v1, n1, ...] that
// such an accumulator was, whose insertion moved half the list (Nexmark
// q16's COUNT(DISTINCT bidder) of a channel's day).
//
// A Value holds it in X. It encodes as that list, sorted by value, so
// keyed state and savepoints are as they were and stay readable by
// either form; a decoded accumulator is the list again, which
// NewCountedSetOf turns back into a set.
type CountedSet struct {
	ints map[int64]int64
	strs map[string]int64
}

// NewCountedSet returns an empty set of values held in S (strs) or in I.
func NewCountedSet(strs bool) *CountedSet {
	if strs {
		return &CountedSet{strs: map[string]int64{}}
	}
	return &CountedSet{ints: map[int64]int64{}}
}

// NewCountedSetOf returns the set of the list l ([v0, n0, v1, n1, ...],
// as CountedSet encodes and as older state holds).
func NewCountedSetOf(strs bool, l []Value) *CountedSet {
	s := NewCountedSet(strs)
	for i := 0; i+1 < len(l); i += 2 {
		s.Add(l[i], l[i+1].I)
	}
	return s
}

// Add adds n copies of v (n < 0: removes -n); changed reports whether v
// appeared (from 0) or disappeared (to 0). Removing a value that is not
// there does nothing.
func (s *CountedSet) Add(v Value, n int64) (changed bool) {
	if s.strs != nil {
		c, ok := s.strs[v.S]
		return addCount(s.strs, v.S, c, ok, n)
	}
	c, ok := s.ints[v.I]
	return addCount(s.ints, v.I, c, ok, n)
}

func addCount[K comparable](m map[K]int64, k K, c int64, ok bool, n int64) bool {
	switch {
	case !ok && n <= 0:
		return false
	case !ok:
		m[k] = n
		return true
	case c+n <= 0:
		delete(m, k)
		return true
	}
	m[k] = c + n
	return false
}

// Len is the number of distinct values.
func (s *CountedSet) Len() int { return len(s.ints) + len(s.strs) }

// Each calls fn with each value and its count, in no particular order.
func (s *CountedSet) Each(fn func(v Value, n int64)) {
	for k, n := range s.ints {
		fn(Value{I: k}, n)
	}
	for k, n := range s.strs {
		fn(Value{S: k}, n)
	}
}

// list returns the set as the sorted list [v0, n0, v1, n1, ...].
func (s *CountedSet) list() []Value {
	l := make([]Value, 0, 2*s.Len())
	if s.strs != nil {
		keys := make([]string, 0, len(s.strs))
		for k := range s.strs {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			l = append(l, Value{S: k}, Value{I: s.strs[k]})
		}
		return l
	}
	keys := make([]int64, 0, len(s.ints))
	for k := range s.ints {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare[int64])
	for _, k := range keys {
		l = append(l, Value{I: k}, Value{I: s.ints[k]})
	}
	return l
}

// equal reports whether two sets hold the same values and counts.
func (s *CountedSet) equal(o *CountedSet) bool {
	if len(s.ints) != len(o.ints) || len(s.strs) != len(o.strs) || (s.strs == nil) != (o.strs == nil) {
		return false
	}
	for k, n := range s.ints {
		if m, ok := o.ints[k]; !ok || m != n {
			return false
		}
	}
	for k, n := range s.strs {
		if m, ok := o.strs[k]; !ok || m != n {
			return false
		}
	}
	return true
}

// CountedSets are several multisets over values of one column, in one
// hash table with a count per set for each value: the accumulators of
// the DISTINCT aggregates of one argument under different FILTERs
// (COUNT(DISTINCT bidder) FILTER (WHERE price < 10000), ...), so that a
// row costs one lookup however many of them it counts in, as Flink keeps
// one MapView per distinct argument with a count per filter. Each set is
// seen through its View, which a Value holds in X and which encodes as
// that set's list [v0, n0, v1, n1, ...] (as a CountedSet does), so state
// and savepoints do not depend on the sharing.
type CountedSets struct {
	width  int
	ints   map[int64]uint32 // value -> entry
	strs   map[string]uint32
	counts []int64 // width per entry
	free   []uint32
	lens   []int // distinct values of each set
	views  []*CountedSetsView
}

// A CountedSetsView is one set of a CountedSets.
type CountedSetsView struct {
	Sets *CountedSets
	Set  int
}

// NewCountedSetsOf returns width (at most 64) sets of values held in S
// (strs) or in I, set i holding the list lists[i] ([v0, n0, ...], nil:
// empty).
func NewCountedSetsOf(strs bool, width int, lists [][]Value) *CountedSets {
	s := &CountedSets{width: width, lens: make([]int, width), views: make([]*CountedSetsView, width)}
	if strs {
		s.strs = map[string]uint32{}
	} else {
		s.ints = map[int64]uint32{}
	}
	for i := range s.views {
		s.views[i] = &CountedSetsView{Sets: s, Set: i}
	}
	for i, l := range lists {
		for j := 0; j+1 < len(l); j += 2 {
			s.Add(l[j], 1<<i, l[j+1].I)
		}
	}
	return s
}

// View returns set i.
func (s *CountedSets) View(i int) *CountedSetsView { return s.views[i] }

// Add adds n copies of v (n < 0: removes -n) to each set i of mask (bit
// i), and returns the sets v appeared in or disappeared from. A set that
// does not hold v is not changed by a removal.
func (s *CountedSets) Add(v Value, mask uint64, n int64) (changed uint64) {
	var e uint32
	var ok bool
	if s.strs != nil {
		e, ok = s.strs[v.S]
	} else {
		e, ok = s.ints[v.I]
	}
	if !ok {
		if n <= 0 {
			return 0
		}
		if k := len(s.free); k > 0 {
			e, s.free = s.free[k-1], s.free[:k-1]
		} else {
			e = uint32(len(s.counts) / s.width)
			s.counts = append(s.counts, make([]int64, s.width)...)
		}
		if s.strs != nil {
			s.strs[v.S] = e
		} else {
			s.ints[v.I] = e
		}
	}
	cs := s.counts[int(e)*s.width : int(e+1)*s.width]
	live := false
	for i := range cs {
		if mask&(1<<i) != 0 {
			switch c := cs[i]; {
			case c == 0 && n > 0:
				cs[i] = n
				s.lens[i]++
				changed |= 1 << i
			case c > 0 && c+n <= 0:
				cs[i] = 0
				s.lens[i]--
				changed |= 1 << i
			case c > 0:
				cs[i] = c + n
			}
		}
		live = live || cs[i] > 0
	}
	if !live {
		if s.strs != nil {
			delete(s.strs, v.S)
		} else {
			delete(s.ints, v.I)
		}
		s.free = append(s.free, e)
	}
	return changed
}

// Len is the number of distinct values of set i.
func (s *CountedSets) Len(i int) int { return s.lens[i] }

// Len is the number of distinct values of the set.
func (v *CountedSetsView) Len() int { return v.Sets.lens[v.Set] }

// Each calls fn with each value of the set and its count, in no
// particular order.
func (v *CountedSetsView) Each(fn func(v Value, n int64)) {
	s := v.Sets
	for k, e := range s.ints {
		if n := s.counts[int(e)*s.width+v.Set]; n > 0 {
			fn(Value{I: k}, n)
		}
	}
	for k, e := range s.strs {
		if n := s.counts[int(e)*s.width+v.Set]; n > 0 {
			fn(Value{S: k}, n)
		}
	}
}

// list returns the set as the sorted list [v0, n0, v1, n1, ...].
func (v *CountedSetsView) list() []Value {
	one := NewCountedSet(v.Sets.strs != nil)
	v.Each(func(x Value, n int64) { one.Add(x, n) })
	return one.list()
}
