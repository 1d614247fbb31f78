package planner

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Processing-time temporal joins against a bounded table that cannot look
// up: `probe [LEFT] JOIN t FOR SYSTEM_TIME AS OF probe.p_time ON ...`
// where p_time is PROCTIME() and t is a bounded, insert-only table without
// a watermark. A 'filesystem' table (Nexmark q13's side input) looks up
// (join_lookup.go), as Flink's filesystem lookup function loads the whole
// file at the first lookup; other bounded tables are joined with streams: the
// table is read as a bounded source, and its rows and the probe rows meet,
// keyed by the join key, in a keyed process function that keeps the
// table's rows in keyed state (so checkpoints, rescaling and restores hold
// as for any keyed operator). A probe row is joined only once the table
// has been read to its end: the table has no watermark until it ends, so
// while the operator's watermark is still the minimum the table may have
// rows on the way, and the probe row waits in keyed state, with an
// event-time timer that the first watermark after the table's end fires.
// After that, probe rows join as they come. If the probe side has no
// watermark either, the probe rows wait until the end of the input.
//
// Where weir differs from Flink: the table is read once (Flink's
// 'lookup.cache.ttl' reloads it); there is no lookup into a table that
// is not bounded (an unbounded table needs an event-time temporal join on
// its primary key, or a lookup connector).

// asOfProctime reports whether the AS OF expression is a processing-time
// attribute of the probe side.
func asOfProctime(e parser.Expr, sc *expr.Scope) bool {
	id, ok := e.(*parser.Ident)
	if !ok {
		return false
	}
	ec := &expr.Compiler{Scope: sc}
	i, rest, err := ec.Resolve(id)
	return err == nil && len(rest) == 0 && sc.Cols[i].Type.TimeAttr == types.ProctimeAttr
}

func (p *planner) planProctimeTemporalJoin(j *parser.Join, ref *parser.TableRef, left, right *rel) (*rel, error) {
	if !right.bounded || right.mode != types.InsertOnly {
		return nil, parser.Errorf(ref.Pos, "a processing-time temporal join (FOR SYSTEM_TIME AS OF %s) needs a bounded, insert-only table such as a 'filesystem' one, read whole as Flink's lookup does; '%s' is not (for a changing table, join FOR SYSTEM_TIME AS OF an event-time attribute)",
			parser.ExprString(ref.AsOf), ref.Name)
	}
	for _, c := range right.sc.Cols {
		if c.Type.TimeAttr == types.RowtimeAttr {
			return nil, parser.Errorf(ref.Pos, "the table '%s' of a processing-time temporal join must not declare a WATERMARK (the join waits for the table's end, which its watermark would hide)", ref.Name)
		}
	}
	nl := len(left.sc.Cols)
	sc := &expr.Scope{Cols: append(append([]expr.Column(nil), left.sc.Cols...), right.sc.Cols...)}
	// probe rows can wait for the table's end: no window attributes
	sc = withoutWindowMarks(sc, 0, len(sc.Cols))
	for i := nl; i < len(sc.Cols); i++ {
		sc.Cols[i].Type = sc.Cols[i].Type.Nullable()
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: sc, What: "a join condition"}
	lec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: left.sc, What: "a join condition"}
	rec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: right.sc, What: "a join condition"}
	var lkeys, rkeys []expr.Expr
	var keyText []string
	var residual []parser.Expr
	for _, c := range splitAnd(j.On) {
		if b, ok := c.(*parser.Binary); ok && b.Op == "=" {
			lk, rk, ok, err := equiKey(b, lec, rec)
			if err != nil {
				return nil, err
			}
			if ok {
				lkeys, rkeys = append(lkeys, lk), append(rkeys, rk)
				keyText = append(keyText, parser.ExprString(c))
				continue
			}
		}
		residual = append(residual, c)
	}
	if len(lkeys) == 0 {
		return nil, parser.Errorf(j.Pos, "a processing-time temporal join needs an equality between the probe side and '%s' in ON", ref.Name)
	}
	if j.Kind == parser.LeftJoin && len(residual) > 0 {
		return nil, parser.Errorf(j.Pos, "a LEFT temporal join takes only key equalities in ON (for now)")
	}
	res, resText, err := compileConjunction(ec, residual)
	if err != nil {
		return nil, err
	}
	keyText = append(keyText, resText...)
	op := fmt.Sprintf("LookupJoin(joinType=[%s], table=[%s], asOf=[%s], where=[%s])", j.Kind, ref.Name,
		parser.ExprString(ref.AsOf), strings.Join(keyText, " AND "))
	out := &rel{op: op, sc: sc, mode: types.InsertOnly, inputs: []*rel{left, right}, bounded: allBounded(left, right)}
	inner := j.Kind == parser.InnerJoin
	nr := len(right.sc.Cols)
	out.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, err := b.stream(left)
		if err != nil {
			return nil, err
		}
		rs, err := b.stream(right)
		if err != nil {
			return nil, err
		}
		lk, rk := evals(lkeys), evals(rkeys)
		probe := weir.Map(ls, func(r types.Row) lookupIn { return lookupIn{Row: r} }, b.uid("lookup-probe"))
		table := weir.Map(rs, func(r types.Row) lookupIn { return lookupIn{Table: true, Row: r} }, b.uid("lookup-table"))
		keyed := weir.KeyBy(weir.Union(table, probe), func(in lookupIn) string {
			fs := lk
			if in.Table {
				fs = rk
			}
			if k, ok := nonNullKey(fs, in.Row.Values); ok {
				return k
			}
			return ""
		})
		var f expr.EvalFn
		if res != nil {
			f = res.Eval
		}
		// joined rows lent to a chained Calc or sink reuse a ring (lend.go)
		rm := b.rowMaker(out, nl+nr)
		return weir.ProcessWith(keyed, func() weir.KeyedProcessFunction[string, lookupIn, types.Row] {
			return &boundedLookupFn{lk: lk, rk: rk, nl: nl, nr: nr, inner: inner, residual: f, out: rm}
		}, b.uid("lookup-join")), nil
	}
	return out, nil
}

// equiKey reads `l = r` as a key equality: one side over the probe, the
// other over the table, cast to a common type.
func equiKey(b *parser.Binary, lec, rec *expr.Compiler) (lk, rk expr.Expr, ok bool, err error) {
	for _, pair := range [2][2]parser.Expr{{b.L, b.R}, {b.R, b.L}} {
		l, errL := lec.Compile(pair[0])
		r, errR := rec.Compile(pair[1])
		if errL != nil || errR != nil {
			continue
		}
		t, same := expr.CommonType([]types.Type{l.Type, r.Type})
		if !same {
			return lk, rk, false, expr.ErrAt(b, "cannot compare %s with %s", l.Type, r.Type)
		}
		if l, err = expr.Cast(l, t, pair[0]); err != nil {
			return lk, rk, false, err
		}
		if r, err = expr.Cast(r, t, pair[1]); err != nil {
			return lk, rk, false, err
		}
		return l, r, true, nil
	}
	return lk, rk, false, nil
}

// nonNullKey is the key of vs; ok is false when a part is NULL (which
// equals nothing).
func nonNullKey(fs []expr.EvalFn, vs []types.Value) (string, bool) {
	var buf [4]types.Value
	k := buf[:0]
	for _, f := range fs {
		v := f(vs)
		if v.Null {
			return "", false
		}
		k = append(k, v)
	}
	return types.Key(k), true
}

// lookupIn is an input of the lookup join: a table row or a probe row.
type lookupIn struct {
	Table bool
	Row   types.Row
}

// tableEnded is the time of the event-time timer that joins the probe rows
// that waited: the first watermark after the table's end passes it.
var tableEnded = time.UnixMilli(math.MinInt64 / 2)

type boundedLookupFn struct {
	lk, rk   []expr.EvalFn
	nl, nr   int
	inner    bool
	residual expr.EvalFn
	rows     *weir.ListState[string, types.Row] // the key's table rows
	waiting  *weir.ListState[string, types.Row] // probe rows that came before the table ended
	// out makes the joined rows (lent from a ring where they may be)
	out rowMaker
}

func (f *boundedLookupFn) Open(rc *weir.RuntimeContext[string]) error {
	f.rows = weir.NewListState[types.Row](rc, "table")
	f.waiting = weir.NewListState[types.Row](rc, "waiting")
	return nil
}

func (f *boundedLookupFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in lookupIn) error {
	if in.Table {
		if _, ok := nonNullKey(f.rk, in.Row.Values); ok {
			f.rows.Add(in.Row)
		}
		return nil
	}
	if ctx.Watermark().UnixMilli() == math.MinInt64 {
		// the table may not have ended: wait for it
		f.waiting.Add(in.Row)
		ctx.RegisterEventTimeTimer(tableEnded)
		return nil
	}
	f.join(ctx, in.Row)
	return nil
}

// OnTimer joins the probe rows that waited: the watermark has moved, so
// the table has ended.
func (f *boundedLookupFn) OnTimer(ctx *weir.KeyedContext[string, types.Row], _ time.Time) error {
	for r := range f.waiting.All() {
		f.join(ctx, r)
	}
	f.waiting.Clear()
	return nil
}

func (f *boundedLookupFn) join(ctx *weir.KeyedContext[string, types.Row], probe types.Row) {
	matched := false
	if _, ok := nonNullKey(f.lk, probe.Values); ok {
		for r := range f.rows.All() {
			vs := f.out.next()
			copy(vs, probe.Values)
			copy(vs[f.nl:], r.Values)
			if f.residual != nil {
				if v := f.residual(vs); v.Null || !v.Bool() {
					continue
				}
			}
			matched = true
			ctx.Emit(types.Row{Values: vs})
		}
	}
	if !matched && !f.inner {
		ctx.Emit(types.Row{Values: joinedValues(f.nl, f.nr, probe.Values, nil)})
	}
}
