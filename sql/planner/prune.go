package planner

import (
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
)

// narrowWindowInput returns the window spec with an input Calc that
// computes only the columns the window aggregation reads (its group keys,
// its aggregates' arguments and filters, the time column), in a narrower
// row: the aggregation's expressions are then compiled against that row
// (the spec's input scope), so each input row allocates and copies those
// values only (q5 reads auction and dateTime of the bid view's seven
// columns, q11 bidder and dateTime). A processing-time window does not
// read its time column (it reads the job's clock: window_proctime.go), so
// the narrow Calc leaves the PROCTIME() column out, as Flink's Calc leaves
// an unmaterialized proctime attribute null: no clock read per row (q12).
// Over a projecting scan this also
// keeps the scan from generating the unread columns. It applies when the
// input is a Calc directly over a rel that is not a Calc (the narrow Calc
// replaces it); else it returns w. The narrow spec's narrow field maps the
// input's column indices to the narrow row's (-1: not read).
func narrowWindowInput(w *windowSpec, keys []parser.Expr, selects []parser.Expr, funcs map[string]expr.Function) *windowSpec {
	in := w.input
	if in.calc == nil || in.calc.input.calc != nil || w.kind == "CUMULATE" {
		return w
	}
	ec := &expr.Compiler{Scope: in.sc}
	used := make([]bool, len(in.sc.Cols))
	used[w.tsCol] = !w.proctime
	ok := true
	mark := func(e parser.Expr) {
		walkExpr(e, func(x parser.Expr) bool {
			if id, isID := x.(*parser.Ident); isID {
				idx, _, err := ec.Resolve(id)
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
			if c, isCall := x.(*parser.Call); isCall && c.Over == nil && expr.IsAggregate(c.Name, funcs) {
				mark(c)
				return false
			}
			return true
		})
	}
	if !ok {
		return w
	}
	pr := &projection{}
	sc := &expr.Scope{}
	narrow := make([]int, len(in.sc.Cols))
	for i, c := range in.sc.Cols {
		narrow[i] = -1
		if !used[i] {
			continue
		}
		narrow[i] = len(sc.Cols)
		sc.Cols = append(sc.Cols, c)
		pr.names = append(pr.names, c.Name)
		pr.exprs = append(pr.exprs, in.calc.exprs[i])
	}
	if len(sc.Cols) == len(in.sc.Cols) {
		return w
	}
	r := calcRel(in.calc.input, in.calc.filter, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])")
	r.sc = sc
	out := *w
	out.input = r
	out.tsCol = narrow[w.tsCol] // -1 for a processing-time window's
	out.tsName = in.sc.Cols[w.tsCol].Name
	out.ninput = len(sc.Cols)
	out.narrow = narrow
	return &out
}
