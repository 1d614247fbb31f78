package planner

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// A group aggregation's DISTINCT sets in keyed map state, when the job's
// keyed state is in Pebble.
//
// On the heap a group's accumulator holds its DISTINCT aggregates' sets
// and changes them in place. In Pebble the accumulator is encoded on
// every change of its group: with its sets, a row cost time in proportion
// to its group's distinct values (Nexmark q15, the distinct bidders and
// auctions of a day, did not finish 400 K events in 80 minutes). There,
// as Flink keeps each distinct aggregate's values in a MapView backed by
// MapState (DistinctAggCodeGen), the sets are a map state of the
// operator, "distinct": an entry per group, unit and value
// (expr.DistinctUnit: the COUNT(DISTINCT x) calls over one column under
// different FILTERs are one unit) holding the value's count in each set
// of the unit, read and written one at a time. The accumulator keeps
// their sizes and the other aggregates, a few integers.
//
// Both backends give the same rows: the sizes are what the heap's sets
// count, a value whose counts all fall to 0 is removed, and a group that
// empties takes its entries with it. Savepoints move between the
// backends: on Pebble, an accumulator restored from the heap still holds
// its sets and moves them into the map when first read
// (expr.AggLayout.Externalize); on the heap, where the operator creates
// the map state too but leaves it empty, an accumulator restored from
// Pebble holds only sizes, and takes its values out of the map when first
// read (internalize). Telling the two apart costs the heap's rows a test
// of one slot per unit (expr.AggLayout.SizesOnly).

// distinctKey is a map entry's key: the unit and the value (Value.I, or
// Value.S for strings).
type distinctKey struct {
	U uint8
	I int64
	S string
}

// maxDistinctUnits is the most units a map of distinctKey tells apart.
const maxDistinctUnits = 256

// distinctState is the current group's DISTINCT sets in map state: an
// expr.DistinctStore.
type distinctState struct {
	m     *weir.MapState[string, distinctKey, []int64]
	units []expr.DistinctUnit
}

// storesDistinct reports whether a group aggregation of layout keeps its
// DISTINCT sets in map state (distinctState): on Pebble, when it has any.
func (b *builder) storesDistinct(layout *expr.AggLayout) bool {
	n := len(layout.DistinctUnits())
	return b.pebble && n > 0 && n <= maxDistinctUnits
}

func newDistinctState(rc *weir.RuntimeContext[string], layout *expr.AggLayout, opts ...weir.StateOption) *distinctState {
	return &distinctState{m: weir.NewMapState[distinctKey, []int64](rc, "distinct", opts...), units: layout.DistinctUnits()}
}

// Add implements expr.DistinctStore: the entry's counts change as a
// types.CountedSets' do.
func (d *distinctState) Add(u int, v types.Value, mask uint64, n int64) (changed uint64) {
	k := distinctKey{U: uint8(u)}
	if d.units[u].Strs {
		k.S = v.S
	} else {
		k.I = v.I
	}
	cs, had := d.m.Get(k)
	if !had {
		if n <= 0 {
			return 0 // removing a value that is not there
		}
		cs = make([]int64, d.units[u].Width)
	}
	live, dirty := false, false
	for i := range cs {
		if mask&(1<<i) != 0 {
			switch c := cs[i]; {
			case c == 0 && n > 0:
				cs[i] = n
				changed |= 1 << i
				dirty = true
			case c > 0 && c+n <= 0:
				cs[i] = 0
				changed |= 1 << i
				dirty = true
			case c > 0:
				cs[i] = c + n
				dirty = true
			}
		}
		live = live || cs[i] > 0
	}
	switch {
	case live && dirty:
		d.m.Put(k, cs)
	case !live && had:
		d.m.Remove(k)
	}
	return changed
}

// internalize returns acc, which holds only the sizes of its DISTINCT
// sets (SizesOnly: restored on the heap from a savepoint taken on
// Pebble), with its sets taken out of the map state, and removes the
// group's entries.
func (d *distinctState) internalize(layout *expr.AggLayout, acc []types.Value) []types.Value {
	acc = append([]types.Value(nil), acc...) // not the caller's scratch: it will hold the sets
	layout.Internalize(acc, func(fn func(u int, v types.Value, counts []int64)) {
		for k, cs := range d.m.All() {
			u := int(k.U)
			if u >= len(d.units) {
				continue
			}
			v := types.Value{I: k.I}
			if d.units[u].Strs {
				v = types.Value{S: k.S}
			}
			fn(u, v, cs)
		}
	})
	d.m.Clear()
	return acc
}
