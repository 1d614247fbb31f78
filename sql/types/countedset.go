package types

import (
	"cmp"
	"hash/maphash"
	"slices"

	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/keygroup"
)

// The sets' hash tables are internal/hashtable's, keyed state's: open
// addressing with the entries inline, one cache miss a lookup where Go's
// map, a directory of tables of groups, takes several (Nexmark q16's
// COUNT(DISTINCT bidder) of a channel's day: 3x faster lookups).

var strSeed = maphash.MakeSeed()

func hashInt(x int64) uint64 { return keygroup.Mix64(uint64(x)) }

func hashStr(s string) uint64 { return maphash.String(strSeed, s) }

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
	isStr bool
	ints  hashtable.Table[int64, int64]
	strs  hashtable.Table[string, int64]
}

// NewCountedSet returns an empty set of values held in S (strs) or in I.
func NewCountedSet(strs bool) *CountedSet {
	return &CountedSet{isStr: strs}
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
	if s.isStr {
		return addCount(&s.strs, hashStr(v.S), v.S, n)
	}
	return addCount(&s.ints, hashInt(v.I), v.I, n)
}

func addCount[K comparable](t *hashtable.Table[K, int64], h uint64, k K, n int64) bool {
	at := t.Find(h, k)
	switch {
	case at < 0 && n <= 0:
		return false
	case at < 0:
		c, _ := t.Upsert(h, k)
		*c = n
		return true
	}
	c := t.At(at)
	if *c+n <= 0 {
		t.DeleteAt(at)
		return true
	}
	*c += n
	return false
}

// Len is the number of distinct values.
func (s *CountedSet) Len() int { return s.ints.Len() + s.strs.Len() }

// Each calls fn with each value and its count, in no particular order.
func (s *CountedSet) Each(fn func(v Value, n int64)) {
	s.ints.All(func(_ uint64, k int64, n *int64) bool { fn(Value{I: k}, *n); return true })
	s.strs.All(func(_ uint64, k string, n *int64) bool { fn(Value{S: k}, *n); return true })
}

// count returns v's count (0: absent).
func (s *CountedSet) count(v Value) int64 {
	var c *int64
	if s.isStr {
		c = s.strs.Get(hashStr(v.S), v.S)
	} else {
		c = s.ints.Get(hashInt(v.I), v.I)
	}
	if c == nil {
		return 0
	}
	return *c
}

// list returns the set as the sorted list [v0, n0, v1, n1, ...].
func (s *CountedSet) list() []Value {
	type entry[K any] struct {
		k K
		n int64
	}
	l := make([]Value, 0, 2*s.Len())
	if s.isStr {
		es := make([]entry[string], 0, s.strs.Len())
		s.strs.All(func(_ uint64, k string, n *int64) bool { es = append(es, entry[string]{k, *n}); return true })
		slices.SortFunc(es, func(a, b entry[string]) int { return cmp.Compare(a.k, b.k) })
		for _, e := range es {
			l = append(l, Value{S: e.k}, Value{I: e.n})
		}
		return l
	}
	es := make([]entry[int64], 0, s.ints.Len())
	s.ints.All(func(_ uint64, k int64, n *int64) bool { es = append(es, entry[int64]{k, *n}); return true })
	slices.SortFunc(es, func(a, b entry[int64]) int { return cmp.Compare(a.k, b.k) })
	for _, e := range es {
		l = append(l, Value{I: e.k}, Value{I: e.n})
	}
	return l
}

// equal reports whether two sets hold the same values and counts.
func (s *CountedSet) equal(o *CountedSet) bool {
	if s.Len() != o.Len() || s.isStr != o.isStr {
		return false
	}
	eq := true
	s.Each(func(v Value, n int64) { eq = eq && o.count(v) == n })
	return eq
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
	// The fields an Add reads, and the views a Value holds, are in this
	// one object, first: a row's Add of a group the caches have lost
	// (most of q16's ten thousand channels) follows a Value's view to
	// its sets, their table and their sizes; as separate objects those
	// were a cache miss each.
	views4 [4]CountedSetsView // views[i] is &views4[i] when width <= 4
	width  int
	isStr  bool
	lens4  [4]int // lens is lens4[:width] when width <= 4
	// up to 4 sets (the common case): each value's counts inline in its
	// slot, one cache miss an Add
	ints4 hashtable.Table[int64, [4]int64]
	strs4 hashtable.Table[string, [4]int64]
	lens  []int // distinct values of each set
	views []*CountedSetsView
	// more: each value's entry in counts
	ints   hashtable.Table[int64, uint32] // value -> entry
	strs   hashtable.Table[string, uint32]
	counts []int64 // width per entry
	free   []uint32
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
	s := &CountedSets{width: width, isStr: strs, views: make([]*CountedSetsView, width)}
	inline := width <= len(s.lens4)
	if inline {
		s.lens = s.lens4[:width]
	} else {
		s.lens = make([]int, width)
	}
	for i := range s.views {
		var v *CountedSetsView
		if inline {
			v = &s.views4[i]
		} else {
			v = new(CountedSetsView)
		}
		*v = CountedSetsView{Sets: s, Set: i}
		s.views[i] = v
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
	switch {
	case s.width <= 4 && s.isStr:
		return add4(&s.strs4, hashStr(v.S), v.S, mask, n, s.lens4[:s.width])
	case s.width <= 4:
		return add4(&s.ints4, hashInt(v.I), v.I, mask, n, s.lens4[:s.width])
	case s.isStr:
		return addWide(s, &s.strs, hashStr(v.S), v.S, mask, n)
	}
	return addWide(s, &s.ints, hashInt(v.I), v.I, mask, n)
}

// add4 is Add for sets with their counts inline.
func add4[K comparable](t *hashtable.Table[K, [4]int64], h uint64, k K, mask uint64, n int64, lens []int) uint64 {
	if n > 0 {
		// one probe, whether v is new or not (counts only grow: the
		// value stays)
		cs, _ := t.Upsert(h, k)
		changed, live := count(cs[:len(lens)], mask, n, lens)
		if !live { // a mask of none of the sets: nothing to keep
			t.Delete(h, k)
		}
		return changed
	}
	at := t.Find(h, k)
	if at < 0 {
		return 0
	}
	changed, live := count(t.At(at)[:len(lens)], mask, n, lens)
	if !live {
		t.DeleteAt(at)
	}
	return changed
}

// addWide is Add for more than 4 sets: each value's counts in an entry
// of s.counts.
func addWide[K comparable](s *CountedSets, t *hashtable.Table[K, uint32], h uint64, k K, mask uint64, n int64) uint64 {
	var e uint32
	switch p := t.Get(h, k); {
	case p != nil:
		e = *p
	case n <= 0:
		return 0
	default:
		if m := len(s.free); m > 0 {
			e, s.free = s.free[m-1], s.free[:m-1]
		} else {
			e = uint32(len(s.counts) / s.width)
			s.counts = append(s.counts, make([]int64, s.width)...)
		}
		p, _ = t.Upsert(h, k)
		*p = e
	}
	changed, live := count(s.counts[int(e)*s.width:int(e+1)*s.width], mask, n, s.lens)
	if !live {
		t.Delete(h, k)
		s.free = append(s.free, e)
	}
	return changed
}

// count adds n to the counts cs of the sets of mask (lens: the sets'
// sizes) and returns the sets the value appeared in or disappeared from,
// and whether any set still holds it.
func count(cs []int64, mask uint64, n int64, lens []int) (changed uint64, live bool) {
	for i := range cs {
		if mask&(1<<i) != 0 {
			switch c := cs[i]; {
			case c == 0 && n > 0:
				cs[i] = n
				lens[i]++
				changed |= 1 << i
			case c > 0 && c+n <= 0:
				cs[i] = 0
				lens[i]--
				changed |= 1 << i
			case c > 0:
				cs[i] = c + n
			}
		}
		live = live || cs[i] > 0
	}
	return changed, live
}

// Len is the number of distinct values of set i.
func (s *CountedSets) Len(i int) int { return s.lens[i] }

// Len is the number of distinct values of the set.
func (v *CountedSetsView) Len() int { return v.Sets.lens[v.Set] }

// Each calls fn with each value of the set and its count, in no
// particular order.
func (v *CountedSetsView) Each(fn func(v Value, n int64)) {
	s := v.Sets
	s.ints4.All(func(_ uint64, k int64, c *[4]int64) bool {
		if n := c[v.Set]; n > 0 {
			fn(Value{I: k}, n)
		}
		return true
	})
	s.strs4.All(func(_ uint64, k string, c *[4]int64) bool {
		if n := c[v.Set]; n > 0 {
			fn(Value{S: k}, n)
		}
		return true
	})
	s.ints.All(func(_ uint64, k int64, e *uint32) bool {
		if n := s.counts[int(*e)*s.width+v.Set]; n > 0 {
			fn(Value{I: k}, n)
		}
		return true
	})
	s.strs.All(func(_ uint64, k string, e *uint32) bool {
		if n := s.counts[int(*e)*s.width+v.Set]; n > 0 {
			fn(Value{S: k}, n)
		}
		return true
	})
}

// list returns the set as the sorted list [v0, n0, v1, n1, ...].
func (v *CountedSetsView) list() []Value {
	one := NewCountedSet(v.Sets.isStr)
	v.Each(func(x Value, n int64) { one.Add(x, n) })
	return one.list()
}
