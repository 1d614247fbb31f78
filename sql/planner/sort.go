package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// ORDER BY and LIMIT on streams, as Flink allows them:
//
//   - ORDER BY an event-time attribute ascending (then any columns): a
//     temporal sort. Rows wait in state until the watermark passes their
//     time and leave in time order (ties by the further keys), so the
//     result is insert-only and still ordered by its time attribute; a
//     row behind the watermark is late and dropped. With LIMIT n the first
//     n rows in that order are emitted and the rest dropped.
//   - ORDER BY other columns with LIMIT n: a Top-N over the whole stream
//     (updating), as Flink's SortLimit.
//   - LIMIT n alone: the first n rows to arrive, insert-only.
//
// ORDER BY other columns without LIMIT is a planning error, as in Flink.
func (p *planner) planOrderBy(s *parser.Select) (*rel, error) {
	inner := *s
	inner.OrderBy, inner.Limit = nil, nil
	r, err := p.planSelect(&inner)
	if err != nil {
		return nil, err
	}
	// ORDER BY items that are not output columns are added to the select
	// list for the sort and projected away after it
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: r.sc}
	var extra []parser.SelectItem
	order := append([]parser.OrderItem(nil), s.OrderBy...)
	for i, o := range order {
		if _, err := ec.Compile(o.Expr); err == nil {
			continue
		}
		name := fmt.Sprintf("$order%d", i)
		extra = append(extra, parser.SelectItem{Pos: o.Expr.ExprPos(), Expr: o.Expr, Alias: name})
		order[i].Expr = &parser.Ident{Pos: o.Expr.ExprPos(), Parts: []string{name}}
	}
	if len(extra) == 0 || s.Distinct || len(s.GroupBy) > 0 {
		return p.planSort(s, r, s.OrderBy)
	}
	wide := inner
	wide.Items = append(append([]parser.SelectItem(nil), s.Items...), extra...)
	w, err := p.planSelect(&wide)
	if err != nil {
		return nil, err
	}
	ws := *s
	ws.OrderBy = order
	sorted, err := p.planSort(&ws, w, s.OrderBy)
	if err != nil {
		return nil, err
	}
	pr := &projection{}
	for i := range r.sc.Cols {
		pr.names = append(pr.names, r.sc.Cols[i].Name)
		pr.exprs = append(pr.exprs, expr.ColRef(i, sorted.sc.Cols[i].Type))
	}
	return calcRel(sorted, nil, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])"), nil
}

// planSort sorts in by s's ORDER BY; orig are the ORDER BY items as
// written, for messages.
func (p *planner) planSort(s *parser.Select, in *rel, orig []parser.OrderItem) (*rel, error) {
	limit := int64(-1)
	if s.Limit != nil {
		lit, ok := s.Limit.(*parser.Literal)
		n, err := int64(0), error(nil)
		if ok && lit.Kind == parser.NumberLit {
			n, err = strconv.ParseInt(lit.Text, 10, 64)
		}
		if !ok || lit.Kind != parser.NumberLit || err != nil || n < 0 {
			return nil, expr.ErrAt(s.Limit, "LIMIT takes a non-negative integer literal")
		}
		limit = n
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: in.sc, What: "ORDER BY"}
	var keys []orderKey
	var text []string
	timeCol := -1
	for i, o := range s.OrderBy {
		written := orig[i].Expr
		ce, err := ec.Compile(o.Expr)
		if err != nil {
			return nil, err
		}
		cmp := expr.Comparator(ce.Type, ce.Type)
		if cmp == nil {
			return nil, expr.ErrAt(written, "cannot order by %s", ce.Type)
		}
		if i == 0 && ce.Type.TimeAttr == types.RowtimeAttr && ce.Col >= 0 {
			if o.Desc {
				if limit < 0 {
					return nil, expr.ErrAt(written, "a stream can only be sorted by its time attribute ascending ('%s' DESC is not supported without LIMIT, as in Flink)", parser.ExprString(written))
				}
			} else {
				timeCol = ce.Col
			}
		}
		if i == 0 && ce.Type.TimeAttr == types.ProctimeAttr {
			return nil, expr.ErrAt(written, "ORDER BY a processing-time attribute is not supported yet")
		}
		keys = append(keys, orderKey{eval: ce.Eval, cmp: cmp, desc: o.Desc, col: expr.CopySource(ce, false)})
		t := parser.ExprString(written)
		if o.Desc {
			t += " DESC"
		} else {
			t += " ASC"
		}
		text = append(text, t)
	}
	if len(keys) > 0 && timeCol < 0 {
		if limit < 0 {
			return nil, expr.ErrAt(orig[0].Expr, "sorting a stream on '%s', which is not its time attribute ascending, is not supported (as in Flink): ORDER BY the event-time attribute first, or add LIMIT for a Top-N", parser.ExprString(orig[0].Expr))
		}
		if in.mode != types.InsertOnly {
			return nil, parser.Errorf(s.Pos, "ORDER BY ... LIMIT over an updating input is not supported yet (%s updates)", in.updater)
		}
		// a Top-N over the whole stream
		spec := &rankSpec{input: in, order: keys, limit: limit, kind: "ROW_NUMBER", text: "ORDER BY " + strings.Join(text, ", ")}
		for i, c := range in.sc.Cols {
			spec.items = append(spec.items, expr.ColRef(i, c.Type).Eval)
			spec.from = append(spec.from, i)
		}
		sc := withoutWindowMarks(&expr.Scope{Cols: append([]expr.Column(nil), in.sc.Cols...)}, 0, len(in.sc.Cols))
		for i := range sc.Cols {
			sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
		}
		return rankRel(spec, sc, fmt.Sprintf("SortLimit(orderBy=[%s], fetch=[%d])", strings.Join(text, ", "), limit)), nil
	}
	if in.mode != types.InsertOnly {
		return nil, parser.Errorf(s.Pos, "ORDER BY/LIMIT over an updating input is not supported (%s updates)", in.updater)
	}
	op := fmt.Sprintf("Limit(fetch=[%d])", limit)
	if timeCol >= 0 {
		op = fmt.Sprintf("TemporalSort(orderBy=[%s])", strings.Join(text, ", "))
		if limit >= 0 {
			op = fmt.Sprintf("TemporalSort(orderBy=[%s], fetch=[%d])", strings.Join(text, ", "), limit)
		}
	}
	r := &rel{op: op, sc: in.sc, mode: types.InsertOnly, inputs: []*rel{in}, bounded: in.bounded}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		st, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		// one key: the order is global
		ks := weir.KeyBy(st, func(types.Row) string { return "" })
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &sortFn{timeCol: timeCol, keys: keys, limit: limit}
		}, b.uid("sort")), nil
	}
	return r, nil
}

// sortFn is the temporal sort (timeCol >= 0) or the plain LIMIT.
type sortFn struct {
	timeCol int
	keys    []orderKey
	limit   int64
	buf     *weir.MapState[string, string, types.Row] // seq -> row waiting for the watermark
	seq     *weir.ValueState[string, int64]
	emitted *weir.ValueState[string, int64]
}

func (f *sortFn) Open(rc *weir.RuntimeContext[string]) error {
	f.buf = weir.NewMapState[string, types.Row](rc, "rows")
	f.seq = weir.NewValueState[int64](rc, "seq")
	f.emitted = weir.NewValueState[int64](rc, "emitted")
	return nil
}

func (f *sortFn) full() bool {
	n, _ := f.emitted.Value()
	return f.limit >= 0 && n >= f.limit
}

func (f *sortFn) emit(ctx *weir.KeyedContext[string, types.Row], r types.Row) {
	n, _ := f.emitted.Value()
	f.emitted.Update(n + 1)
	ctx.Emit(r)
}

func (f *sortFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	if f.full() {
		return nil
	}
	if f.timeCol < 0 {
		f.emit(ctx, in)
		return nil
	}
	v := in.Values[f.timeCol]
	if v.Null {
		return nil
	}
	at := time.UnixMilli(v.I / 1000)
	if wm := ctx.Watermark(); !wm.IsZero() && wm.UnixMicro() > -1<<62 && !wm.Before(at) {
		return nil // late: rows up to the watermark have left already
	}
	n, _ := f.seq.Value()
	f.seq.Update(n + 1)
	f.buf.Put(fmt.Sprintf("%020d", n), in)
	ctx.RegisterEventTimeTimer(at)
	return nil
}

func (f *sortFn) OnTimer(ctx *weir.KeyedContext[string, types.Row], t time.Time) error {
	type entry struct {
		seq string
		row types.Row
	}
	var due []entry
	for k, r := range f.buf.All() {
		if r.Values[f.timeCol].I/1000 <= t.UnixMilli() {
			due = append(due, entry{k, r})
		}
	}
	sort.Slice(due, func(i, j int) bool {
		a, b := due[i].row.Values, due[j].row.Values
		for _, o := range f.keys {
			x, y := o.eval(a), o.eval(b)
			var c int
			switch {
			case x.Null && y.Null:
			case x.Null:
				c = -1
			case y.Null:
				c = 1
			default:
				c = o.cmp(x, y)
			}
			if o.desc {
				c = -c
			}
			if c != 0 {
				return c < 0
			}
		}
		return due[i].seq < due[j].seq
	})
	for _, e := range due {
		f.buf.Remove(e.seq)
		if !f.full() {
			f.emit(ctx, e.row)
		}
	}
	return nil
}
