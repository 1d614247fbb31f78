package planner

import (
	"fmt"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// UNION (distinct), INTERSECT [ALL] and EXCEPT [ALL] over streams, as
// Flink plans them: an aggregation keyed by the whole row that counts the
// row's copies on each side (retractions subtract) and emits the change
// of the row's multiplicity in the result: +I for a copy that enters it,
// -D for one that leaves. The result updates whatever the inputs: a row
// in an EXCEPT leaves when the right side gets it, an INTERSECT ALL grows
// with the smaller side.

// setOpCount is a row's multiplicity in the result, given its counts on
// the left and on the right.
func setOpCount(op string, all bool, l, r int64) int64 {
	switch {
	case op == "UNION":
		return min(l+r, 1)
	case op == "INTERSECT" && all:
		return max(min(l, r), 0)
	case op == "INTERSECT":
		if l > 0 && r > 0 {
			return 1
		}
		return 0
	case op == "EXCEPT" && all:
		return max(l-r, 0)
	}
	// EXCEPT
	if l > 0 && r <= 0 {
		return 1
	}
	return 0
}

func setOpRel(q *parser.SetOp, sc *expr.Scope, l, r *rel) *rel {
	for i := range sc.Cols {
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr // an aggregation's output is not time-ordered
	}
	op := fmt.Sprintf("%s(all=[%v])", map[string]string{"UNION": "Union", "INTERSECT": "Intersect", "EXCEPT": "Minus"}[q.Op], q.All)
	out := &rel{op: op, sc: sc, mode: types.All, inputs: []*rel{l, r}, bounded: allBounded(l, r)}
	out.updater = op
	n := len(sc.Cols)
	opName, all := q.Op, q.All
	out.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, err := b.stream(l)
		if err != nil {
			return nil, err
		}
		rs, err := b.stream(r)
		if err != nil {
			return nil, err
		}
		tagged := weir.Map(rs, func(row types.Row) types.Row {
			row.Kind |= rightTag
			return row
		}, b.uid("setop-tag"))
		ks := weir.KeyBy(weir.Union(ls, tagged), func(row types.Row) string { return types.Key(row.Values[:n]) })
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &setOpFn{op: opName, all: all, n: n}
		}, b.uid("setop")), nil
	}
	return out
}

// setOpFn keeps, per row, its counts on both sides (a ValueState of two
// BIGINTs).
type setOpFn struct {
	op     string
	all    bool
	n      int
	counts *weir.ValueState[string, types.Row]
}

func (f *setOpFn) Open(rc *weir.RuntimeContext[string]) error {
	f.counts = weir.NewValueState[types.Row](rc, "counts")
	return nil
}

func (f *setOpFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	side := 0
	if in.Kind&rightTag != 0 {
		side = 1
		in.Kind &^= rightTag
	}
	st, ok := f.counts.Value()
	var c [2]int64
	if ok {
		c[0], c[1] = st.Values[0].I, st.Values[1].I
	}
	before := setOpCount(f.op, f.all, c[0], c[1])
	if in.Kind.IsRetraction() {
		c[side]--
	} else {
		c[side]++
	}
	after := setOpCount(f.op, f.all, c[0], c[1])
	if c[0] == 0 && c[1] == 0 {
		f.counts.Clear()
	} else {
		f.counts.Update(types.Row{Values: []types.Value{types.IntValue(c[0]), types.IntValue(c[1])}})
	}
	for ; after > before; before++ {
		ctx.Emit(types.Row{Kind: types.Insert, Values: append([]types.Value(nil), in.Values[:f.n]...)})
	}
	for ; before > after; before-- {
		ctx.Emit(types.Row{Kind: types.Delete, Values: append([]types.Value(nil), in.Values[:f.n]...)})
	}
	return nil
}

// planSetOp plans UNION [ALL], INTERSECT [ALL] and EXCEPT [ALL]: both
// sides cast to their common column types, then setOpRel (UNION ALL is a
// plain union of the streams).
func (p *planner) planSetOp(q *parser.SetOp) (*rel, error) {
	l, err := p.planQuery(q.Left)
	if err != nil {
		return nil, err
	}
	r, err := p.planQuery(q.Right)
	if err != nil {
		return nil, err
	}
	if len(l.sc.Cols) != len(r.sc.Cols) {
		return nil, parser.Errorf(q.Pos, "%s of %d and %d columns", q.Op, len(l.sc.Cols), len(r.sc.Cols))
	}
	sc := &expr.Scope{}
	for i := range l.sc.Cols {
		t, ok := expr.CommonType([]types.Type{l.sc.Cols[i].Type, r.sc.Cols[i].Type})
		if !ok {
			return nil, parser.Errorf(q.Pos, "%s column '%s' has types %s and %s", q.Op, l.sc.Cols[i].Name, l.sc.Cols[i].Type, r.sc.Cols[i].Type)
		}
		if l.sc.Cols[i].Type.TimeAttr == types.RowtimeAttr && r.sc.Cols[i].Type.TimeAttr == types.RowtimeAttr {
			t.TimeAttr = types.RowtimeAttr
		}
		sc.Cols = append(sc.Cols, expr.Column{Name: l.sc.Cols[i].Name, Type: t})
	}
	lc, err := castRel(l, sc)
	if err != nil {
		return nil, err
	}
	rc, err := castRel(r, sc)
	if err != nil {
		return nil, err
	}
	if q.Op != "UNION" || !q.All {
		return setOpRel(q, sc, lc, rc), nil
	}
	return &rel{op: "Union(all=[true])", sc: sc, mode: maxMode(l.mode, r.mode), inputs: []*rel{lc, rc},
		updater: mergeUpdater(l, r), bounded: allBounded(l, r),
		build: func(b *builder) (*weir.Stream[types.Row], error) {
			ls, err := b.stream(lc)
			if err != nil {
				return nil, err
			}
			rs, err := b.stream(rc)
			if err != nil {
				return nil, err
			}
			return weir.Union(ls, rs), nil
		}}, nil
}
