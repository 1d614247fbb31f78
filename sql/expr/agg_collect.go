package expr

import (
	"slices"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// COLLECT([ALL | DISTINCT] x) and ARRAY_AGG([ALL | DISTINCT] x [RESPECT
// NULLS | IGNORE NULLS]), as Flink's CollectAggFunction and
// ArrayAggFunction.
//
// COLLECT is the MULTISET of the non-NULL values, empty (not NULL) when
// there are none. Its accumulator is one slot: the multiset as agg.go's
// sorted [v0, n0, v1, n1, ...] (multisetAdd), so a retraction takes one
// copy of the value away.
//
// ARRAY_AGG is the ARRAY of the values in arrival order, NULLs included
// unless IGNORE NULLS (Flink's default is RESPECT NULLS), NULL when there
// are none. Its accumulator is one slot: the values in arrival order; a
// retraction removes the value's earliest occurrence, as Flink's
// list.remove(value) does.
//
// With DISTINCT, agg.go's multiset of distinct values comes first (one more
// slot) and the aggregate sees a value when it appears and when it goes:
// COLLECT(DISTINCT x) holds each value once, ARRAY_AGG(DISTINCT x) the
// values in the order they first appeared.

const (
	aggCollect AggKind = iota + 120
	aggArrayAgg
)

// isCollectAgg reports the kinds of this file and of agg_lag.go.
func isCollectAgg(k AggKind) bool { return k == aggCollect || k == aggArrayAgg || k == aggLag }

func init() {
	AggregateNames["COLLECT"] = true
	AggregateNames["ARRAY_AGG"] = true
}

// compileCollectAgg compiles COLLECT and ARRAY_AGG; ok is false for other
// names.
func compileCollectAgg(a *AggCall, c *parser.Call, ec *Compiler) (*AggCall, bool, error) {
	kind := aggCollect
	switch c.Name {
	case "COLLECT":
		if c.Nulls != "" {
			return nil, true, ErrAt(c, "COLLECT takes no %s NULLS", c.Nulls)
		}
	case "ARRAY_AGG":
		kind = aggArrayAgg
	case "LAG":
		return compileLag(a, c, ec) // agg_lag.go
	default:
		return nil, false, nil
	}
	if c.Star || len(c.Args) != 1 {
		return nil, true, ErrAt(c, "%s takes one argument", c.Name)
	}
	arg, err := ec.Compile(c.Args[0])
	if err != nil {
		return nil, true, err
	}
	a.Kind, a.Arg, a.ArgT, a.ArgCol = kind, arg.Eval, arg.Type, arg.Col
	et := arg.Type
	et.TimeAttr = 0
	cmp := Comparator(arg.Type, arg.Type)
	if kind == aggCollect || a.Distinct {
		if cmp == nil {
			return nil, true, ErrAt(c, "%s of %s is not supported", c.Name, arg.Type)
		}
	}
	if kind == aggCollect {
		et.NotNull = true // COLLECT keeps no NULL
		a.OutT = types.Type{Kind: types.Multiset, Elem: &et, NotNull: true}
		a.cmp = cmp
		return a, true, nil
	}
	a.respectNulls = c.Nulls != "IGNORE"
	if a.respectNulls {
		et.NotNull = false
	}
	a.OutT = types.ArrayOf(et)
	if cmp != nil {
		// the DISTINCT multiset holds a NULL too, before the other values
		a.cmp = func(x, y types.Value) int {
			switch {
			case x.Null && y.Null:
				return 0
			case x.Null:
				return -1
			case y.Null:
				return 1
			}
			return cmp(x, y)
		}
	}
	return a, true, nil
}

// collectSlot is where the aggregate's own slot is (after the multiset of
// distinct values when DISTINCT).
func (a *AggCall) collectSlot() int {
	if a.Distinct {
		return a.slot + 1
	}
	return a.slot
}

func (a *AggCall) collectSlots() int {
	if a.Distinct || a.Kind == aggLag {
		return 2
	}
	return 1
}

// accumulateCollect adds (sign 1) or retracts (sign -1) the value v (NULL
// only for ARRAY_AGG RESPECT NULLS).
func (a *AggCall) accumulateCollect(acc []types.Value, v types.Value, sign int64) {
	s := a.collectSlot()
	switch a.Kind {
	case aggCollect:
		acc[s], _ = multisetAdd(acc[s], v, sign, a.cmp)
		return
	case aggLag:
		a.accumulateLag(acc, v) // never retracted
		return
	}
	l := acc[s].List()
	if sign > 0 {
		acc[s] = types.ListValue(append(l, v))
		return
	}
	if i := indexOf(l, v); i >= 0 {
		acc[s] = types.ListValue(removeAt(l, i, 1))
	}
}

// mergeCollect folds src into dst (session windows, the two-phase
// aggregation's global phase): src's values after dst's.
func (a *AggCall) mergeCollect(dst, src []types.Value) {
	s := a.collectSlot()
	if a.Kind == aggLag {
		return // an OVER aggregation's, which never merges
	}
	if !a.Distinct {
		if a.Kind == aggCollect {
			for _, e := range pairs(src[s]) {
				dst[s], _ = multisetAdd(dst[s], e[0], e[1].I, a.cmp)
			}
			return
		}
		dst[s] = types.ListValue(append(dst[s].List(), src[s].List()...))
		return
	}
	// the values new to dst's distinct multiset are new to the aggregate;
	// ARRAY_AGG's keep src's order
	var fresh []types.Value
	for _, e := range pairs(src[a.slot]) {
		var first bool
		if dst[a.slot], first = multisetAdd(dst[a.slot], e[0], e[1].I, a.cmp); first {
			fresh = append(fresh, e[0])
		}
	}
	if a.Kind == aggCollect {
		for _, v := range fresh {
			dst[s], _ = multisetAdd(dst[s], v, 1, a.cmp)
		}
		return
	}
	l := dst[s].List()
	for _, v := range src[s].List() {
		if indexOf(fresh, v) >= 0 {
			l = append(l, v)
		}
	}
	dst[s] = types.ListValue(l)
}

// resultCollect is the multiset or the array: a copy, as the accumulator
// changes in place.
func (a *AggCall) resultCollect(acc []types.Value) types.Value {
	if a.Kind == aggLag {
		return a.resultLag(acc)
	}
	l := acc[a.collectSlot()].List()
	if a.Kind == aggArrayAgg {
		if len(l) == 0 {
			return types.NullValue
		}
		return types.ListValue(slices.Clone(l))
	}
	n := 0
	for i := 1; i < len(l); i += 2 {
		n += int(l[i].I)
	}
	out := make([]types.Value, 0, n)
	for i := 0; i+1 < len(l); i += 2 {
		for range l[i+1].I {
			out = append(out, l[i])
		}
	}
	return types.ListValue(out)
}
