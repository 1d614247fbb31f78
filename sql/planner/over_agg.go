package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// overSpec is an OVER window of aggregates: partition, the event-time
// order and the frame.
type overSpec struct {
	rows      bool          // ROWS (else RANGE)
	unbounded bool          // UNBOUNDED PRECEDING
	n         int64         // ROWS n PRECEDING
	span      time.Duration // RANGE INTERVAL PRECEDING
	tsCol     int
	// proctime: ordered by a PROCTIME() attribute: each row is computed
	// and emitted when it arrives, its frame the rows that arrived before
	// it (ROWS) or within the interval of its processing time (RANGE)
	proctime bool
}

// planOverAgg plans aggregates OVER (PARTITION BY ... ORDER BY rowtime
// ROWS|RANGE BETWEEN ... PRECEDING AND CURRENT ROW), as Flink's
// OverAggregate: each input row is emitted once, with the aggregates of
// its frame, when the watermark passes its time.
func (p *planner) planOverAgg(s *parser.Select, from *rel) (*rel, error) {
	if from.mode != types.InsertOnly {
		return nil, parser.Errorf(s.Pos, "OVER aggregations over an updating input (%s) are not supported", from.updater)
	}
	var calls []*parser.Call
	idx := map[string]int{}
	var over *parser.Over
	for _, it := range s.Items {
		if it.Expr == nil {
			continue
		}
		var err error
		walkExpr(it.Expr, func(x parser.Expr) bool {
			c, ok := x.(*parser.Call)
			if !ok || c.Over == nil || err != nil {
				return err == nil
			}
			isFn, ferr := overFunctionErr(c) // over_lag.go
			if ferr != nil {
				err = ferr
				return false
			}
			if !isFn && !expr.IsAggregate(c.Name, p.s.cat.functions()) {
				err = expr.ErrAt(c, "%s OVER is not supported (aggregates and ROW_NUMBER are)", c.Name)
				return false
			}
			w := *c.Over
			if over == nil {
				over = &w
			} else if overText(over) != overText(&w) {
				err = expr.ErrAt(c, "all OVER windows of a SELECT must be the same")
				return false
			}
			k := parser.ExprString(c)
			if _, seen := idx[k]; !seen {
				idx[k] = len(calls)
				calls = append(calls, c)
			}
			return false
		})
		if err != nil {
			return nil, err
		}
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: from.sc, What: "OVER"}
	if len(over.OrderBy) != 1 || over.OrderBy[0].Desc {
		return nil, parser.Errorf(over.Pos, "an OVER window must be ordered by one time attribute, ascending")
	}
	spec := &overSpec{}
	var err error
	if spec.tsCol, spec.proctime, err = windowTimeAttr(over.OrderBy[0].Expr, from.sc, "OVER"); err != nil {
		return nil, err
	}
	f := over.Frame
	if f == nil {
		f = &parser.Frame{Rows: false, Start: parser.Bound{Kind: parser.UnboundedPreceding}, End: parser.Bound{Kind: parser.CurrentRow}}
	}
	if f.End.Kind != parser.CurrentRow {
		return nil, parser.Errorf(over.Pos, "an OVER window must end at CURRENT ROW")
	}
	spec.rows = f.Rows
	switch f.Start.Kind {
	case parser.UnboundedPreceding:
		spec.unbounded = true
	case parser.CurrentRow:
		spec.n = 0
	case parser.Preceding:
		if f.Rows {
			l, ok := f.Start.Offset.(*parser.Literal)
			if !ok || l.Kind != parser.NumberLit {
				return nil, expr.ErrAt(f.Start.Offset, "ROWS n PRECEDING needs a number")
			}
			fmt.Sscan(l.Text, &spec.n)
		} else {
			if spec.span, err = intervalArg(f.Start.Offset, "RANGE ... PRECEDING"); err != nil {
				return nil, err
			}
		}
	default:
		return nil, parser.Errorf(over.Pos, "unsupported OVER frame start")
	}
	var part []expr.EvalFn
	for _, e := range over.PartitionBy {
		ce, err := ec.Compile(e)
		if err != nil {
			return nil, err
		}
		part = append(part, ce.Eval)
	}
	aec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: from.sc, What: "an aggregate's argument"}
	var aggs []*expr.AggCall
	for _, c := range calls {
		plain := *c
		plain.Over = nil
		a, err := expr.CompileAgg(&plain, aec, !spec.unbounded)
		if err != nil {
			return nil, err
		}
		aggs = append(aggs, a)
	}
	layout := expr.NewAggLayout(0, aggs)
	// not a window operator: its output has no window attributes (Flink's)
	out := withoutWindowMarks(&expr.Scope{Cols: append([]expr.Column(nil), from.sc.Cols...)}, 0, len(from.sc.Cols))
	n := len(out.Cols)
	for i, a := range aggs {
		out.Cols = append(out.Cols, expr.Column{Name: fmt.Sprintf("$over%d", i), Type: a.OutT})
	}
	var texts []string
	for _, c := range calls {
		texts = append(texts, parser.ExprString(c))
	}
	op := fmt.Sprintf("OverAggregate(%s, select=[%s])", overText(over), strings.Join(texts, ", "))
	agg := &rel{op: op, sc: out, mode: types.InsertOnly, inputs: []*rel{from}, bounded: from.bounded}
	agg.build = func(b *builder) (*weir.Stream[types.Row], error) {
		in, err := b.stream(from)
		if err != nil {
			return nil, err
		}
		ks := weir.KeyBy(in, func(row types.Row) string { return partitionKeyOf(part, row.Values) })
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &overFn{spec: spec, layout: layout, width: n}
		}, b.uid("over-agg")), nil
	}
	subst := func(e parser.Expr) (expr.Expr, bool, error) {
		if c, ok := e.(*parser.Call); ok && c.Over != nil {
			i := idx[parser.ExprString(c)]
			return expr.ColRef(n+i, out.Cols[n+i].Type), true, nil
		}
		return expr.Expr{}, false, nil
	}
	pec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: out, Subst: subst, What: "SELECT"}
	pr, err := expandSelect(s.Items, pec)
	if err != nil {
		return nil, err
	}
	// a star must not expose the aggregates' internal columns
	return calcRel(agg, nil, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])"), nil
}

func overText(o *parser.Over) string {
	c := &parser.Call{Name: "X", Over: o}
	return strings.TrimPrefix(parser.ExprString(c), "X() OVER ")
}

// overFn buffers rows until the watermark passes their time, then emits
// them in time order with their frame's aggregates. State: the rows
// waiting per timestamp, the accumulator and (for bounded frames) the
// rows still inside the frame.
type overFn struct {
	spec    *overSpec
	layout  *expr.AggLayout
	width   int
	pending *weir.MapState[string, int64, types.Row]
	acc     *weir.ValueState[string, types.Row]
	history *weir.ValueState[string, types.Row]
}

func (f *overFn) Open(rc *weir.RuntimeContext[string]) error {
	f.pending = weir.NewMapState[int64, types.Row](rc, "pending")
	f.acc = weir.NewValueState[types.Row](rc, "acc")
	f.history = weir.NewValueState[types.Row](rc, "history")
	return nil
}

func (f *overFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	ts := in.Values[f.spec.tsCol].I
	if f.spec.proctime {
		// processing time: the row's frame is what arrived before it
		return f.compute(ctx, ts, []types.Value{types.ListValue(in.Values)})
	}
	if wm := ctx.Watermark(); wm.UnixMicro() >= ts && wm.After(time.UnixMicro(-1<<60)) {
		return nil // late, as Flink drops it
	}
	list, ok := f.pending.Get(ts)
	if !ok {
		ctx.RegisterEventTimeTimer(time.UnixMicro(ts))
	}
	list.Values = append(list.Values, types.ListValue(append([]types.Value(nil), in.Values...)))
	f.pending.Put(ts, list)
	return nil
}

func (f *overFn) OnTimer(ctx *weir.KeyedContext[string, types.Row], t time.Time) error {
	ts := t.UnixMicro()
	list, ok := f.pending.Get(ts)
	if !ok {
		return nil
	}
	f.pending.Remove(ts)
	return f.compute(ctx, ts, list.Values)
}

// compute emits the rows of time ts (in arrival order) with their frames'
// aggregates, and keeps the accumulator and the frame's rows.
func (f *overFn) compute(ctx *weir.KeyedContext[string, types.Row], ts int64, rows []types.Value) error {
	list := types.Row{Values: rows}
	st, ok := f.acc.Value()
	acc := st.Values
	if !ok {
		acc = f.layout.Create(nil)
	}
	hist, _ := f.history.Value()
	h := hist.Values
	l := f.layout
	emit := func(row []types.Value) {
		vs := make([]types.Value, f.width+len(l.Calls))
		copy(vs, row)
		for i, c := range l.Calls {
			vs[f.width+i] = l.Result(acc, c)
		}
		ctx.Emit(types.Row{Values: vs})
	}
	sp := f.spec
	switch {
	case sp.rows:
		for _, r := range list.Values {
			row := r.List()
			l.Accumulate(acc, row, 1)
			if !sp.unbounded {
				h = append(h, r)
				for int64(len(h)) > sp.n+1 {
					l.Accumulate(acc, h[0].List(), -1)
					h = h[1:]
				}
			}
			emit(row)
		}
	default: // RANGE: rows of the same time are peers and see each other
		for _, r := range list.Values {
			l.Accumulate(acc, r.List(), 1)
			if !sp.unbounded {
				h = append(h, r)
			}
		}
		if !sp.unbounded {
			lo := ts - sp.span.Microseconds()
			for len(h) > 0 && h[0].List()[sp.tsCol].I < lo {
				l.Accumulate(acc, h[0].List(), -1)
				h = h[1:]
			}
		}
		for _, r := range list.Values {
			emit(r.List())
		}
	}
	f.acc.Update(types.Row{Values: acc})
	if !sp.unbounded {
		f.history.Update(types.Row{Values: append([]types.Value(nil), h...)})
	}
	return nil
}
