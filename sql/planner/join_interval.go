package planner

import (
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// intervalBounds recognises the time condition of an interval join among
// a join's non-equi conjuncts: the two inputs' event-time attributes
// related by BETWEEN or by a pair of comparisons, each bound a column of
// the other side plus or minus an interval. It returns weir's bounds (the
// right row's time in [left + lower, left + upper]) and the conjuncts that
// remain.
func intervalBounds(conds []parser.Expr, ec *expr.Compiler, left, right *rel) (lower, upper time.Duration, rest []parser.Expr, ok bool) {
	nl := len(left.sc.Cols)
	isRowtime := func(idx int) bool {
		if idx < nl {
			return left.sc.Cols[idx].Type.TimeAttr == types.RowtimeAttr
		}
		return right.sc.Cols[idx-nl].Type.TimeAttr == types.RowtimeAttr
	}
	// timeCol reads `col` or `col ± INTERVAL`: the column and the offset
	timeCol := func(e parser.Expr) (int, time.Duration, bool) {
		var off time.Duration
		if b, ok := e.(*parser.Binary); ok && (b.Op == "+" || b.Op == "-") {
			iv, ok := b.R.(*parser.IntervalLit)
			if !ok {
				return 0, 0, false
			}
			ms, months, err := expr.IntervalValue(iv)
			if err != nil || months {
				return 0, 0, false
			}
			off = time.Duration(ms) * time.Millisecond
			if b.Op == "-" {
				off = -off
			}
			e = b.L
		}
		id, ok := e.(*parser.Ident)
		if !ok {
			return 0, 0, false
		}
		idx, restParts, err := ec.Resolve(id)
		if err != nil || len(restParts) > 0 || !isRowtime(idx) {
			return 0, 0, false
		}
		return idx, off, true
	}
	var lo, hi *time.Duration // bounds of right.ts - left.ts
	lcol, rcol := -1, -1
	// bound records a.ts OP b.ts + off as a bound of right - left
	bound := func(a int, op string, b int, off time.Duration) bool {
		if (a < nl) == (b < nl) {
			return false
		}
		if a < nl { // left OP right + off  =>  right - left  (flip) -off
			op = map[string]string{"<=": ">=", ">=": "<=", "<": ">", ">": "<"}[op]
			off = -off
			a, b = b, a
		}
		// now a is right, b is left: right OP left + off
		if (lcol >= 0 && lcol != b) || (rcol >= 0 && rcol != a) {
			return false
		}
		lcol, rcol = b, a
		switch op {
		case ">=":
			lo = &off
		case ">":
			v := off + time.Millisecond
			lo = &v
		case "<=":
			hi = &off
		case "<":
			v := off - time.Millisecond
			hi = &v
		default:
			return false
		}
		return true
	}
	for _, c := range conds {
		switch e := c.(type) {
		case *parser.Between:
			if e.Not {
				break
			}
			x, xo, ok1 := timeCol(e.X)
			l, lo2, ok2 := timeCol(e.Lo)
			h, ho, ok3 := timeCol(e.Hi)
			if ok1 && ok2 && ok3 && xo == 0 && l == h {
				save1, save2, s3, s4 := lo, hi, lcol, rcol
				if bound(x, ">=", l, lo2) && bound(x, "<=", h, ho) {
					continue
				}
				lo, hi, lcol, rcol = save1, save2, s3, s4
			}
		case *parser.Binary:
			switch e.Op {
			case ">=", ">", "<=", "<":
				a, ao, ok1 := timeCol(e.L)
				b, bo, ok2 := timeCol(e.R)
				if ok1 && ok2 && ao == 0 {
					save1, save2, s3, s4 := lo, hi, lcol, rcol
					if bound(a, e.Op, b, bo) {
						continue
					}
					lo, hi, lcol, rcol = save1, save2, s3, s4
				}
			}
		}
		rest = append(rest, c)
	}
	if lo == nil || hi == nil || *lo > *hi {
		return 0, 0, conds, false
	}
	return *lo, *hi, rest, true
}

// intervalJoinRel runs an interval join on weir's IntervalJoin (or
// OuterIntervalJoin): state is bounded by the watermark, the result is
// insert-only.
func intervalJoinRel(kind parser.JoinKind, left, right *rel, sc *expr.Scope, lkeys, rkeys []expr.Expr, res *expr.Expr,
	lower, upper time.Duration, op string) *rel {
	r := &rel{op: op, sc: sc, mode: types.InsertOnly, inputs: []*rel{left, right}, bounded: allBounded(left, right)}
	nl, nr := len(left.sc.Cols), len(right.sc.Cols)
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, err := b.stream(left)
		if err != nil {
			return nil, err
		}
		rs, err := b.stream(right)
		if err != nil {
			return nil, err
		}
		lk, rk := evals(lkeys), evals(rkeys)
		lks := weir.KeyBy(ls, func(row types.Row) string { return keyOf(lk, row.Values) })
		rks := weir.KeyBy(rs, func(row types.Row) string { return rightKeyOf(rk, row.Values) })
		concat := func(l, r []types.Value) types.Row {
			return types.Row{Values: joinedValues(nl, nr, l, r)}
		}
		var out *weir.Stream[types.Row]
		if kind == parser.InnerJoin {
			out = weir.IntervalJoin(lks, rks, lower, upper, func(_ string, l, r types.Row) types.Row {
				return concat(l.Values, r.Values)
			}, b.uid("interval-join"))
		} else {
			ok := map[parser.JoinKind]weir.OuterJoinKind{parser.LeftJoin: weir.LeftOuter, parser.RightJoin: weir.RightOuter, parser.FullJoin: weir.FullOuter}[kind]
			out = weir.OuterIntervalJoin(lks, rks, lower, upper, ok, func(_ string, l weir.Opt[types.Row], r weir.Opt[types.Row]) types.Row {
				var lv, rv []types.Value
				if v, has := l.Get(); has {
					lv = v.Values
				}
				if v, has := r.Get(); has {
					rv = v.Values
				}
				return concat(lv, rv)
			}, b.uid("interval-join"))
		}
		if res == nil {
			return out, nil
		}
		f := res.Eval
		return weir.Filter(out, func(row types.Row) bool {
			v := f(row.Values)
			return !v.Null && v.Bool()
		}, b.uid("interval-join-filter")), nil
	}
	return r
}

func intervalOp(kind parser.JoinKind, lower, upper time.Duration, where string) string {
	return fmt.Sprintf("IntervalJoin(joinType=[%s], windowBounds=[right in left + [%s, %s]], where=[%s])", kind, lower, upper, where)
}
