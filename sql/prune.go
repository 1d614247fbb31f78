package sql

import (
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// pruneWindowInput returns the window spec with an input Calc that
// computes only the columns the window aggregation reads (its group keys,
// its aggregates' arguments and filters, the time column); the others stay
// NULL in the same layout, so the aggregation's compiled expressions read
// the same indices. Over a projecting scan this also keeps the scan from
// generating the unread columns (q11 reads bid.bidder and dateTime of the
// bid view's seven columns). It applies when the input is a Calc directly
// over a rel that is not a Calc (the pruned Calc replaces it one for one);
// else it returns w.
func pruneWindowInput(w *windowSpec, keys []parser.Expr, selects []parser.Expr, ec *exprCompiler) *windowSpec {
	in := w.input
	if in.calc == nil || in.calc.input.calc != nil || w.kind == "CUMULATE" {
		return w
	}
	used := make([]bool, len(in.sc.cols))
	used[w.tsCol] = true
	ok := true
	mark := func(e parser.Expr) {
		walkExpr(e, func(x parser.Expr) bool {
			if id, isID := x.(*parser.Ident); isID {
				idx, _, err := ec.resolve(id)
				if err != nil {
					ok = false
					return false
				}
				used[idx] = true
			}
			return true
		})
	}
	for _, k := range keys {
		mark(k)
	}
	for _, e := range selects {
		walkExpr(e, func(x parser.Expr) bool {
			if c, isCall := x.(*parser.Call); isCall && c.Over == nil && aggregateNames[c.Name] {
				mark(c)
				return false
			}
			return true
		})
	}
	if !ok {
		return w
	}
	pr := &projection{names: in.sc.schema().Names()}
	pruned := false
	for i, c := range in.sc.cols {
		if used[i] {
			pr.exprs = append(pr.exprs, in.calc.exprs[i])
			continue
		}
		pr.exprs = append(pr.exprs, konst(types.NullValue, c.t))
		pruned = true
	}
	if !pruned {
		return w
	}
	r := calcRel(in.calc.input, in.calc.filter, pr, in.op)
	r.sc = in.sc
	out := *w
	out.input = r
	return &out
}
