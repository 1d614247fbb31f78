package planner

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// planTemporalJoin plans `probe [LEFT] JOIN versioned FOR SYSTEM_TIME AS OF
// probe.rowtime ON probe.k = versioned.pk`: an event-time temporal join on
// weir's TemporalJoin. The versioned table needs a primary key, which the
// equality conditions must cover, and an event-time attribute; the probe
// must be insert-only. The result is insert-only.
func (p *planner) planTemporalJoin(j *parser.Join, ref *parser.TableRef) (*rel, error) {
	if j.Kind != parser.InnerJoin && j.Kind != parser.LeftJoin {
		return nil, parser.Errorf(j.Pos, "a temporal join (FOR SYSTEM_TIME AS OF) must be an inner or LEFT join, not %s", j.Kind)
	}
	left, err := p.planFrom(j.Left)
	if err != nil {
		return nil, err
	}
	plain := *ref
	plain.AsOf = nil
	right, err := p.planFrom(&plain)
	if err != nil {
		return nil, err
	}
	if left.mode != types.InsertOnly {
		return nil, parser.Errorf(j.Pos, "the probe side of a temporal join must be insert-only, but it updates (%s)", left.updater)
	}
	if asOfProctime(ref.AsOf, left.sc) {
		return p.planProctimeTemporalJoin(j, ref, left, right)
	}
	if len(right.pk) == 0 {
		return nil, parser.Errorf(ref.Pos, "the versioned table '%s' of a temporal join needs a PRIMARY KEY", ref.Name)
	}
	hasRowtime := false
	for _, c := range right.sc.Cols {
		if c.Type.TimeAttr == types.RowtimeAttr {
			hasRowtime = true
		}
	}
	if !hasRowtime {
		return nil, parser.Errorf(ref.Pos, "the versioned table '%s' needs an event-time attribute (a WATERMARK), or, if it is bounded, a join FOR SYSTEM_TIME AS OF a PROCTIME() attribute", ref.Name)
	}
	if _, err := timeAttr(ref.AsOf, left.sc, "FOR SYSTEM_TIME AS OF"); err != nil {
		return nil, err
	}
	nl := len(left.sc.Cols)
	sc := &expr.Scope{Cols: append(append([]expr.Column(nil), left.sc.Cols...), right.sc.Cols...)}
	for i := nl; i < len(sc.Cols); i++ {
		sc.Cols[i].Type = sc.Cols[i].Type.Nullable()
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: sc, What: "a join condition"}
	lec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: left.sc, What: "a join condition"}
	var lkeys []expr.Expr
	keyOfCol := map[int]expr.Expr{} // right pk column -> left key expression
	var residual []parser.Expr
	for _, c := range splitAnd(j.On) {
		if b, ok := c.(*parser.Binary); ok && b.Op == "=" {
			l, r := b.L, b.R
			ri := rightCol(r, ec, nl)
			if ri < 0 {
				l, r = r, l
				ri = rightCol(r, ec, nl)
			}
			if ri >= 0 {
				lk, err := lec.Compile(l)
				if err == nil {
					rt := right.sc.Cols[ri].Type
					if lk, err = expr.Cast(lk, rt.Nullable(), l); err != nil {
						return nil, err
					}
					keyOfCol[ri] = lk
					continue
				}
			}
		}
		residual = append(residual, c)
	}
	var names []string
	for _, k := range right.pk {
		lk, ok := keyOfCol[k]
		if !ok {
			return nil, parser.Errorf(j.Pos, "a temporal join must join on the primary key of '%s' (%s)", ref.Name, right.sc.Cols[k].Name)
		}
		lkeys = append(lkeys, lk)
		names = append(names, right.sc.Cols[k].Name)
		delete(keyOfCol, k)
	}
	if len(keyOfCol) > 0 {
		return nil, parser.Errorf(j.Pos, "a temporal join's equalities must be on the primary key of '%s' only (for now)", ref.Name)
	}
	if j.Kind == parser.LeftJoin && len(residual) > 0 {
		return nil, parser.Errorf(j.Pos, "a LEFT temporal join takes only key equalities in ON (for now)")
	}
	var res *expr.Expr
	for _, c := range residual {
		ce, err := ec.Compile(c)
		if err != nil {
			return nil, err
		}
		if res == nil {
			res = &ce
		} else {
			x := expr.Logic("AND", *res, ce)
			res = &x
		}
	}
	pk := right.pk
	op := fmt.Sprintf("TemporalJoin(joinType=[%s], key=[%s], asOf=[%s])", j.Kind, strings.Join(names, ", "), parser.ExprString(ref.AsOf))
	out := &rel{op: op, sc: sc, mode: types.InsertOnly, inputs: []*rel{left, right}, bounded: allBounded(left, right)}
	inner := j.Kind == parser.InnerJoin
	nr := len(right.sc.Cols)
	out.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, rs, err := b.streams(left, right)
		if err != nil {
			return nil, err
		}
		lk := evals(lkeys)
		probe := weir.KeyBy(ls, func(row types.Row) string { return keyOf(lk, row.Values) })
		changes := weir.Map(rs, func(row types.Row) weir.Change[types.Row] {
			return weir.Change[types.Row]{Kind: weir.ChangeKind(row.Kind), Value: row}
		}, b.uid("temporal-versions"))
		versions := weir.KeyBy(changes, func(c weir.Change[types.Row]) string {
			var buf [4]types.Value
			k := buf[:0]
			for _, i := range pk {
				k = append(k, c.Value.Values[i])
			}
			return types.Key(k)
		})
		joined := weir.TemporalJoin(probe, versions, func(_ string, l types.Row, r weir.Opt[types.Row]) types.Row {
			v, ok := r.Get()
			if !ok && inner {
				return types.Row{}
			}
			return types.Row{Values: joinedValues(nl, nr, l.Values, v.Values)}
		}, b.uid("temporal-join"))
		var f expr.EvalFn
		if res != nil {
			f = res.Eval
		}
		return weir.Filter(joined, func(row types.Row) bool {
			if row.Values == nil {
				return false
			}
			if f != nil {
				v := f(row.Values)
				return !v.Null && v.Bool()
			}
			return true
		}, b.uid("temporal-filter")), nil
	}
	return out, nil
}

// rightCol returns the right-side column an expression names (a bare
// column of the versioned table), or -1.
func rightCol(e parser.Expr, ec *expr.Compiler, nl int) int {
	id, ok := e.(*parser.Ident)
	if !ok {
		return -1
	}
	idx, rest, err := ec.Resolve(id)
	if err != nil || len(rest) > 0 || idx < nl {
		return -1
	}
	return idx - nl
}
