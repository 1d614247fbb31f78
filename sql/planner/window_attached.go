package planner

import (
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Window aggregations over window attributes, as Flink's planner plans
// them (its WindowAggregate with a window "attached" to the input): a
// GROUP BY that includes the window_start and window_end columns of a
// window aggregation, window join or window table function output that
// passed through projections (column.win marks them) is itself a window
// aggregation. Flink's Nexmark q5 takes the MAX of per-auction window
// counts grouped by the counts' window_start and window_end:
//
//	SELECT MAX(num), starttime, endtime FROM (
//	  SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
//	  FROM TABLE(HOP(...)) GROUP BY auction, window_start, window_end)
//	GROUP BY starttime, endtime
//
// As a regular group aggregation it is updating (a new MAX retracts the old
// one, and a join over it retracts in turn); as a window aggregation it
// emits one row per group and window, insert-only, when the watermark
// passes the window's end, and frees the window's state then.
//
// The window's rows come from an operator that emits a window's rows
// before it forwards the watermark that ends the window (a window
// aggregation's or window join's timer at end - 1 ms), so none of them is
// late here; rows of a window table function are late when their window
// has ended already, and are dropped, as by any window aggregation.

// attachedWindow is the window of an aggregation over window attributes:
// the indices, among the group keys, of window_start and window_end.
type attachedWindow struct {
	startKey, endKey int
}

// attachedWindowKeys reports whether the group keys include an event-time
// window_start and window_end of from (plain column references).
func attachedWindowKeys(keys []parser.Expr, ec *expr.Compiler, from *rel) *attachedWindow {
	if from.mode != types.InsertOnly {
		return nil
	}
	aw := &attachedWindow{startKey: -1, endKey: -1}
	for i, k := range keys {
		id, ok := k.(*parser.Ident)
		if !ok {
			continue
		}
		idx, rest, err := ec.Resolve(id)
		if err != nil || len(rest) > 0 {
			continue
		}
		switch from.sc.Cols[idx].Win {
		case winStartCol:
			if aw.startKey < 0 {
				aw.startKey = i
			}
		case winEndCol:
			if aw.endKey < 0 {
				aw.endKey = i
			}
		}
	}
	if aw.startKey < 0 || aw.endKey < 0 {
		return nil
	}
	return aw
}

func (aw *attachedWindow) String(keyText []string) string {
	return fmt.Sprintf("attached(win_start=[%s], win_end=[%s])", keyText[aw.startKey], keyText[aw.endKey])
}

// attachedWindowAggRel aggregates in a keyed process function keyed by
// the group keys (window bounds included): one accumulator per group and
// window, emitted and cleared by an event-time timer at the window's last
// millisecond. Its output is the group keys and the aggregates; the window
// keys stay window attributes.
func attachedWindowAggRel(in *rel, keys []expr.Expr, aw *attachedWindow, layout *expr.AggLayout, out *expr.Scope, op string) *rel {
	out.Cols[aw.startKey].Win = winStartCol
	out.Cols[aw.endKey].Win = winEndCol
	keyEvals := evals(keys)
	r := &rel{op: op, sc: out, mode: types.InsertOnly, inputs: []*rel{in}, bounded: in.bounded,
		traits: traits{attachedAgg: &attachedAggInfo{in: in, keys: keys, aw: aw, layout: layout}}}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		ks := weir.KeyBy(s, func(row types.Row) string {
			var buf [4]types.Value
			vs := buf[:0]
			for _, f := range keyEvals {
				vs = append(vs, f(row.Values))
			}
			return types.Key(vs)
		})
		end := keyEvals[aw.endKey]
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &attachedWindowFn{layout: layout, keys: keyEvals, end: end}
		}, b.uid("window-agg-attached")), nil
	}
	return r
}

// attachedAggInfo is what a window aggregation over window attributes
// aggregates: its input, group keys (compiled over the input), window keys
// and calls (for the window-maximum join, join_windowmax.go).
type attachedAggInfo struct {
	in     *rel
	keys   []expr.Expr
	aw     *attachedWindow
	layout *expr.AggLayout
}

type attachedWindowFn struct {
	layout *expr.AggLayout
	keys   []expr.EvalFn
	end    expr.EvalFn
	acc    *weir.ValueState[string, types.Row]
}

func (f *attachedWindowFn) Open(rc *weir.RuntimeContext[string]) error {
	f.acc = weir.NewValueState[types.Row](rc, "acc")
	return nil
}

func (f *attachedWindowFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	end := f.end(in.Values)
	if end.Null {
		return nil // no window: a window_end is never NULL
	}
	// the window fires at its last millisecond, as the window aggregation
	// that made the input
	fire := time.UnixMilli(end.I/1000 - 1)
	if wm := ctx.Watermark(); !wm.IsZero() && wm.UnixMicro() > -1<<62 && !wm.Before(fire) {
		return nil // late: the window has fired
	}
	st, ok := f.acc.Value()
	acc := st.Values
	if !ok {
		keys := make([]types.Value, len(f.keys))
		for i, k := range f.keys {
			keys[i] = k(in.Values)
		}
		acc = f.layout.Create(keys)
		ctx.RegisterEventTimeTimer(fire)
	}
	f.layout.Accumulate(acc, in.Values, 1)
	f.acc.Update(types.Row{Values: acc})
	return nil
}

func (f *attachedWindowFn) OnTimer(ctx *weir.KeyedContext[string, types.Row], _ time.Time) error {
	st, ok := f.acc.Value()
	if !ok {
		return nil
	}
	f.acc.Clear()
	l := f.layout
	vs := make([]types.Value, l.NKeys+len(l.Calls))
	copy(vs, st.Values[:l.NKeys])
	for i, c := range l.Calls {
		vs[l.NKeys+i] = l.Result(st.Values, c)
	}
	ctx.Emit(types.Row{Kind: types.Insert, Values: vs})
	return nil
}
