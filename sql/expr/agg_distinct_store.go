package expr

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/weirstream/weir/sql/types"
)

// DISTINCT sets outside the accumulator.
//
// On the heap an accumulator holds its DISTINCT aggregates' sets of
// values (types.CountedSet, types.CountedSets) and changes them in place.
// A backend that serializes state (Pebble) encodes the whole accumulator
// on every change of its group, sets included: a row cost time in
// proportion to its group's distinct values (Nexmark q15 and q16, one
// group a day, did not finish). As Flink keeps a distinct aggregate's
// values in a MapView backed by MapState, AccumulateWith and MergeWith
// keep them in a DistinctStore, an entry per value read and written one
// at a time, and the accumulator only the sets' sizes (in the slots that
// held the sets, with no X: countedLen reads I).
//
// The sets that go to a store are those of the hashed DISTINCT calls
// (COUNT, SUM, SUM0, AVG over values equal by their bits), numbered in
// units: the COUNT(DISTINCT x) calls of a distinctGroup are one unit of
// as many sets (a value's entry holds its count in each, as
// types.CountedSets does), any other hashed call is a unit of one set.
// DISTINCT over floating point, big decimals and rows, MIN/MAX DISTINCT
// and a user-defined aggregate's DISTINCT keep their sorted lists in the
// accumulator.

// A DistinctStore holds the values of an accumulator's DISTINCT units
// (the current group's, for a store in keyed state).
type DistinctStore interface {
	// Add adds n copies of v (n < 0: removes -n) to each set i of mask
	// (bit i) of unit u, and returns the sets v appeared in (n > 0) or
	// disappeared from (n < 0). A set that does not hold v is not changed
	// by a removal.
	Add(u int, v types.Value, mask uint64, n int64) (changed uint64)
}

// A DistinctUnit is a set of DISTINCT sets over one argument whose
// values a DistinctStore keeps together.
type DistinctUnit struct {
	Width int  // sets (1 to 64)
	Strs  bool // the values are in Value.S, else in Value.I
}

// DistinctUnits returns the layout's units, unit u at index u: none when
// it has no hashed DISTINCT call.
func (l *AggLayout) DistinctUnits() []DistinctUnit { return l.units }

// numberUnits gives each hashed DISTINCT call its unit.
func (l *AggLayout) numberUnits() {
	l.units, l.unitCalls, l.unitFirst = nil, nil, nil
	for _, c := range l.Calls {
		c.unit = -1
	}
	for _, c := range l.Calls {
		if !c.hashed || !c.Distinct || c.unit >= 0 {
			continue
		}
		u := len(l.units)
		l.unitFirst = append(l.unitFirst, len(l.unitCalls))
		if g := c.group; g != nil {
			g.unit = u
			for _, gc := range g.calls {
				gc.unit = u
				l.unitCalls = append(l.unitCalls, gc)
			}
			l.units = append(l.units, DistinctUnit{Width: len(g.calls), Strs: g.strs})
			continue
		}
		c.unit = u
		l.unitCalls = append(l.unitCalls, c)
		l.units = append(l.units, DistinctUnit{Width: 1, Strs: c.hashStrs})
	}
}

// setMask is the bit of c's set in its unit.
func (c *AggCall) setMask() uint64 {
	if c.group != nil {
		return 1 << c.groupIdx
	}
	return 1
}

// addTo is distinctAdd into ds.
func (c *AggCall) addTo(ds DistinctStore, acc []types.Value, v types.Value, n int64) (first bool) {
	if ds.Add(c.unit, v, c.setMask(), n) == 0 {
		return false
	}
	acc[c.slot].I += sizeDelta(n)
	return true
}

// addTo is add into ds.
func (g *distinctGroup) addTo(ds DistinctStore, acc []types.Value, v types.Value, mask uint64, n int64) {
	d := sizeDelta(n)
	for changed := ds.Add(g.unit, v, mask, n); changed != 0; changed &= changed - 1 {
		acc[g.calls[bits.TrailingZeros64(changed)].slot].I += d
	}
}

// sizeDelta is the change of a set's size when a value appears (n > 0)
// or disappears.
func sizeDelta(n int64) int64 {
	if n > 0 {
		return 1
	}
	return -1
}

// mergeTo is Merge of c's partial in src into dst, whose set is in ds: a
// value new to dst's set adds to the size (and to the sum of a SUM or
// AVG, as the heap's Merge sums the merged set again: the same sum, as
// the values' arithmetic is exact).
func (c *AggCall) mergeTo(ds DistinctStore, dst, src []types.Value) {
	mask := c.setMask()
	eachCounted(src[c.slot], func(v types.Value, n int64) {
		if ds.Add(c.unit, v, mask, n) == 0 {
			return
		}
		d := sizeDelta(n)
		dst[c.slot].I += d
		if c.Kind == aggSum || c.Kind == aggSum0 || c.Kind == aggAvg {
			ss := c.sumSlot()
			dst[ss] = addNum(dst[ss], c.toS(v), c.sumT, d)
			dst[ss+1].I += d
		}
	})
}

// Externalize moves into ds the sets that acc holds itself (an
// accumulator written by the heap's Accumulate: restored from a
// savepoint taken on the heap, or a local phase's partial), leaving
// their sizes, so that acc is one for AccumulateWith. ds must hold
// nothing of acc's group yet.
func (l *AggLayout) Externalize(acc []types.Value, ds DistinctStore) {
	for _, c := range l.unitCalls {
		set := acc[c.slot]
		if set.X == nil {
			continue
		}
		mask := c.setMask()
		eachCounted(set, func(v types.Value, n int64) { ds.Add(c.unit, v, mask, n) })
		acc[c.slot] = types.IntValue(int64(countedLen(set)))
	}
}

// HoldsDistinct reports whether any DISTINCT unit of acc (AccumulateWith's)
// has a value: whether a store may hold entries of acc's group.
func (l *AggLayout) HoldsDistinct(acc []types.Value) bool {
	for _, c := range l.unitCalls {
		if acc[c.slot].I != 0 || acc[c.slot].X != nil {
			return true
		}
	}
	return false
}

// SizesOnly reports whether acc holds sizes of sets it does not hold
// (an accumulator of AccumulateWith) where Accumulate keeps them. An
// accumulator of Accumulate holds a unit's sets in all its calls' slots
// (X) from the unit's first value on, so a first call's slot with an X
// answers for its unit: one test a unit.
func (l *AggLayout) SizesOnly(acc []types.Value) bool {
	for u, k := range l.unitFirst {
		if acc[l.unitCalls[k].slot].X != nil {
			continue
		}
		for _, c := range l.unitCalls[k:] {
			if c.unit != u {
				break
			}
			if acc[c.slot].I != 0 {
				return true
			}
		}
	}
	return false
}

// Internalize gives back to acc, an accumulator of AccumulateWith whose
// sets are in a store (restored from a savepoint taken on Pebble onto the
// heap), its sets as Accumulate keeps them: each calls fn once for every
// entry of the store's group, its unit, value and count in each set of
// the unit.
func (l *AggLayout) Internalize(acc []types.Value, each func(fn func(u int, v types.Value, counts []int64))) {
	first := l.unitFirst
	lists := make([][]types.Value, len(l.unitCalls))
	each(func(u int, v types.Value, counts []int64) {
		if u < 0 || u >= len(first) {
			return
		}
		for i, n := range counts {
			if k := first[u] + i; n > 0 && k < len(lists) && l.unitCalls[k].unit == u {
				lists[k] = append(lists[k], v, types.IntValue(n))
			}
		}
	})
	for k, c := range l.unitCalls {
		acc[c.slot] = types.ListValue(sortedPairs(lists[k], c.hashStrs))
	}
}

// sortedPairs sorts the list [v0, n0, v1, n1, ...] by value, as a set
// encodes (types.CountedSet).
func sortedPairs(l []types.Value, strs bool) []types.Value {
	ps := make([][2]types.Value, 0, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		ps = append(ps, [2]types.Value{l[i], l[i+1]})
	}
	slices.SortFunc(ps, func(a, b [2]types.Value) int {
		if strs {
			return cmp.Compare(a[0].S, b[0].S)
		}
		return cmp.Compare(a[0].I, b[0].I)
	})
	out := make([]types.Value, 0, len(l))
	for _, p := range ps {
		out = append(out, p[0], p[1])
	}
	return out
}
