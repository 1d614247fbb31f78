package planner

import (
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// intKey is the key of a window aggregation grouped by one integer
// expression (Nexmark's GROUP BY auction, bidder): the key is the value
// itself, not its encoding (types.Key allocates two strings per record),
// and it hashes as an integer. Null keeps NULL apart from 0.
type intKey struct {
	V    int64
	Null bool
}

// intKeyWindowAgg is windowAggRel's TUMBLE/HOP/SESSION aggregation keyed
// by intKey. The output row is the same: the accumulator holds the key
// values it was created with.
func intKeyWindowAgg(b *builder, s *weir.Stream[types.Row], w *windowSpec, key expr.EvalFn, layout *expr.AggLayout, keyEvals []expr.EvalFn) *weir.Stream[types.Row] {
	ks := weir.KeyBy(s, func(row types.Row) intKey {
		v := key(row.Values)
		return intKey{V: v.I, Null: v.Null}
	})
	agg := rowAgg{layout: layout, keys: keyEvals}
	base := len(keyEvals) + len(layout.Calls)
	res := weir.Aggregate(weir.Window(ks, w.windows(), b.uid("window")), agg, b.uid("window-agg"))
	return weir.Map(res, func(wr weir.WindowResult[intKey, types.Row]) types.Row {
		vs := wr.Value.Values
		start, end := wr.Start.UnixMicro(), wr.End.UnixMicro()
		vs[base], vs[base+1], vs[base+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
		return types.Row{Values: vs}
	}, b.uid("window-result"))
}

// intAcc is the accumulator of an integer-keyed window aggregation whose
// aggregates all fit in an int64 each (compactCalls): COUNT(*), COUNT(x),
// and MIN/MAX of an integer. A value, not a types.Row: no allocation per
// key and window, and no pointers for the collector to scan (Nexmark q5's
// COUNT(*), q7's MAX(price), q11's COUNT(*) per key and window).
type intAcc struct {
	// exported for the checkpoint codec (gob), as window state
	V   [maxCompactCalls]int64
	Set uint8 // MIN/MAX i has a value
}

const maxCompactCalls = 4

// compactCalls reports whether an aggregation's calls fit intAcc.
func compactCalls(l *expr.AggLayout) bool {
	if len(l.Calls) == 0 || len(l.Calls) > maxCompactCalls {
		return false
	}
	for _, c := range l.Calls {
		if c.Distinct || c.Retract {
			return false
		}
		switch c.Kind {
		case expr.AggCountStar, expr.AggCount:
		case expr.AggMin, expr.AggMax:
			if !c.ArgT.IsInteger() || !c.OutT.IsInteger() {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// intAgg is weir's AggregateFunction over intAcc, with the semantics of
// expr.AggLayout.Accumulate, Merge and Result for the calls compactCalls
// accepts.
type intAgg struct{ calls []*expr.AggCall }

func (a intAgg) Create() intAcc { return intAcc{} }

func (a intAgg) Add(acc intAcc, in types.Row) intAcc {
	for i, c := range a.calls {
		if c.Filter != nil {
			if v := c.Filter(in.Values); v.Null || !v.Bool() {
				continue
			}
		}
		if c.Kind == expr.AggCountStar {
			acc.V[i]++
			continue
		}
		v := c.Arg(in.Values)
		if v.Null {
			continue
		}
		switch c.Kind {
		case expr.AggCount:
			acc.V[i]++
		case expr.AggMin:
			if acc.Set&(1<<i) == 0 || v.I < acc.V[i] {
				acc.V[i] = v.I
			}
			acc.Set |= 1 << i
		case expr.AggMax:
			if acc.Set&(1<<i) == 0 || v.I > acc.V[i] {
				acc.V[i] = v.I
			}
			acc.Set |= 1 << i
		}
	}
	return acc
}

func (a intAgg) Merge(x, y intAcc) intAcc {
	for i, c := range a.calls {
		switch c.Kind {
		case expr.AggCountStar, expr.AggCount:
			x.V[i] += y.V[i]
		case expr.AggMin, expr.AggMax:
			if y.Set&(1<<i) == 0 {
				continue
			}
			if x.Set&(1<<i) == 0 || (c.Kind == expr.AggMin && y.V[i] < x.V[i]) || (c.Kind == expr.AggMax && y.V[i] > x.V[i]) {
				x.V[i] = y.V[i]
			}
			x.Set |= 1 << i
		}
	}
	return x
}

func (a intAgg) Result(acc intAcc) intAcc { return acc }

// intAcc1 is intAcc for one aggregate: a smaller hash table entry (the
// window operator's tables grow by copying their entries).
type intAcc1 struct {
	V   int64
	Set bool
}

// intAgg1 is intAgg for one call.
type intAgg1 struct{ a intAgg }

func (a intAgg1) Create() intAcc1 { return intAcc1{} }

func (a intAgg1) Add(acc intAcc1, in types.Row) intAcc1 {
	x := a.a.Add(intAcc{V: [maxCompactCalls]int64{acc.V}, Set: b2u(acc.Set)}, in)
	return intAcc1{V: x.V[0], Set: x.Set != 0}
}

func (a intAgg1) Merge(x, y intAcc1) intAcc1 {
	m := a.a.Merge(intAcc{V: [maxCompactCalls]int64{x.V}, Set: b2u(x.Set)}, intAcc{V: [maxCompactCalls]int64{y.V}, Set: b2u(y.Set)})
	return intAcc1{V: m.V[0], Set: m.Set != 0}
}

func (a intAgg1) Result(acc intAcc1) intAcc1 { return acc }

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// compactIntKeyWindowAgg is intKeyWindowAgg over intAcc (intAcc1 for one
// aggregate); the output row is the same (key, aggregates, window_start,
// window_end, window_time).
func compactIntKeyWindowAgg(b *builder, s *weir.Stream[types.Row], w *windowSpec, key expr.EvalFn, layout *expr.AggLayout) *weir.Stream[types.Row] {
	ks := weir.KeyBy(s, func(row types.Row) intKey {
		v := key(row.Values)
		return intKey{V: v.I, Null: v.Null}
	})
	calls := layout.Calls
	win := weir.Window(ks, w.windows(), b.uid("window"))
	if countStarOnly(calls) {
		// weir's own Count: an int64 per key and window (a smaller hash
		// table entry than intAcc1), and an aligned window's input edge
		// then ships keys only, not the rows (weir's keys-only edge)
		res := weir.Aggregate(win, weir.Count[types.Row](), b.uid("window-agg"))
		return weir.Map(res, func(wr weir.WindowResult[intKey, int64]) types.Row {
			return compactRow(calls, wr.Key, intAcc{V: [maxCompactCalls]int64{wr.Value}}, wr.Start.UnixMilli(), wr.End.UnixMilli())
		}, b.uid("window-result"))
	}
	if len(calls) == 1 {
		res := weir.Aggregate(win, weir.AggregateFunction[types.Row, intAcc1, intAcc1](intAgg1{intAgg{calls: calls}}), b.uid("window-agg"))
		return weir.Map(res, func(wr weir.WindowResult[intKey, intAcc1]) types.Row {
			return compactRow(calls, wr.Key, intAcc{V: [maxCompactCalls]int64{wr.Value.V}, Set: b2u(wr.Value.Set)}, wr.Start.UnixMilli(), wr.End.UnixMilli())
		}, b.uid("window-result"))
	}
	res := weir.Aggregate(win, weir.AggregateFunction[types.Row, intAcc, intAcc](intAgg{calls: calls}), b.uid("window-agg"))
	return weir.Map(res, func(wr weir.WindowResult[intKey, intAcc]) types.Row {
		return compactRow(calls, wr.Key, wr.Value, wr.Start.UnixMilli(), wr.End.UnixMilli())
	}, b.uid("window-result"))
}

// countStarOnly reports whether calls are one COUNT(*) without FILTER:
// weir.Count computes it.
func countStarOnly(calls []*expr.AggCall) bool {
	return len(calls) == 1 && calls[0].Kind == expr.AggCountStar && calls[0].Filter == nil
}

// compactRow is the output row of a window [start, end) (ms) of a compact
// aggregation.
func compactRow(calls []*expr.AggCall, key intKey, acc intAcc, start, end int64) types.Row {
	base := 1 + len(calls)
	vs := make([]types.Value, base+3)
	if key.Null {
		vs[0] = types.NullValue
	} else {
		vs[0] = types.IntValue(key.V)
	}
	for i, c := range calls {
		if (c.Kind == expr.AggMin || c.Kind == expr.AggMax) && acc.Set&(1<<i) == 0 {
			vs[1+i] = types.NullValue
		} else {
			vs[1+i] = types.IntValue(acc.V[i])
		}
	}
	vs[base], vs[base+1], vs[base+2] = types.IntValue(start*1000), types.IntValue(end*1000), types.IntValue((end-1)*1000)
	return types.Row{Values: vs}
}
