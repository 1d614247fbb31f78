package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// calcSpec is a Calc's filter and projection over its input.
type calcSpec struct {
	input  *rel
	filter *expr.Expr
	exprs  []expr.Expr
}

// fused returns a compiler for expressions over r's columns that
// evaluates them on r's input when r is a Calc (so the two Calcs run as
// one operator, with no row in between), the rel to evaluate on, and r's
// own filter to apply first.
func fused(r *rel, what string, funcs map[string]expr.Function) (*expr.Compiler, *rel, *expr.Expr) {
	if r.calc == nil {
		return &expr.Compiler{Funcs: funcs, Scope: r.sc, What: what}, r, nil
	}
	return &expr.Compiler{Funcs: funcs, Scope: r.sc, What: what, Cols: r.calc.exprs}, r.calc.input, r.calc.filter
}

// projection is a compiled select list.
type projection struct {
	names []string
	exprs []expr.Expr
}

// expandSelect compiles a select list against a scope (stars expanded).
func expandSelect(items []parser.SelectItem, ec *expr.Compiler) (*projection, error) {
	pr := &projection{}
	for i, it := range items {
		if it.Star && len(it.StarField) > 0 {
			if err := expandFieldStar(pr, it, ec); err != nil {
				return nil, err
			}
			continue
		}
		if it.Star {
			n := 0
			for j, c := range ec.Scope.Cols {
				if it.StarOf != "" && !strings.EqualFold(c.Qual, it.StarOf) {
					continue
				}
				if strings.HasPrefix(c.Qual, subqueryQual) {
					continue // a scalar subquery's value, joined for its use
				}
				pr.names = append(pr.names, c.Name)
				pr.exprs = append(pr.exprs, ec.Column(j))
				n++
			}
			if n == 0 && it.StarOf != "" {
				// r.*: the fields of a ROW column r
				if err := expandFieldStar(pr, it, ec); err == nil {
					continue
				}
				return nil, parser.Errorf(it.Pos, "unknown table '%s' in %s.*", it.StarOf, it.StarOf)
			}
			continue
		}
		ce, err := ec.Compile(it.Expr)
		if err != nil {
			return nil, err
		}
		name := it.Alias
		if name == "" {
			name = derivedName(it.Expr, i)
		}
		pr.names = append(pr.names, name)
		pr.exprs = append(pr.exprs, ce)
	}
	return pr, nil
}

// expandFieldStar adds the fields of the ROW that it (t.r.* or r.*)
// names to pr, each named as its field (Flink: `SELECT t.r.*` gives the
// columns of r's fields).
func expandFieldStar(pr *projection, it parser.SelectItem, ec *expr.Compiler) error {
	path := append([]string{it.StarOf}, it.StarField...)
	text := strings.Join(path, ".") + ".*"
	row, err := ec.Compile(&parser.Ident{Pos: it.Pos, Parts: path})
	if err != nil {
		return err
	}
	if row.Type.Kind != types.Structured {
		return parser.Errorf(it.Pos, "%s needs a table or a ROW, not %s", text, row.Type)
	}
	for _, f := range row.Type.Fields {
		fe, err := ec.Compile(&parser.Ident{Pos: it.Pos, Parts: append(slices.Clip(path), f.Name)})
		if err != nil {
			return err
		}
		pr.names = append(pr.names, f.Name)
		pr.exprs = append(pr.exprs, fe)
	}
	return nil
}

// derivedName is the column name of an unaliased select item: a column's
// (or field's) name, else EXPR$i as Flink names it.
func derivedName(e parser.Expr, i int) string {
	if id, ok := e.(*parser.Ident); ok {
		return id.Parts[len(id.Parts)-1]
	}
	return fmt.Sprintf("EXPR$%d", i)
}

// calcRel applies a projection (and a filter before it) to r.
func calcRel(r *rel, filter *expr.Expr, pr *projection, desc string) *rel {
	sc := &expr.Scope{}
	identity := pr != nil && len(pr.exprs) == len(r.sc.Cols)
	if pr == nil {
		sc = r.sc
	} else {
		for i, n := range pr.names {
			sc.Cols = append(sc.Cols, expr.Column{Name: n, Type: pr.exprs[i].Type})
			if c := pr.exprs[i].Col; c >= 0 && c < len(r.sc.Cols) {
				sc.Cols[i].Win = r.sc.Cols[c].Win
			}
			if pr.exprs[i].Col != i {
				identity = false
			}
		}
	}
	var evals []expr.EvalFn
	if pr != nil && !identity {
		for _, e := range pr.exprs {
			evals = append(evals, e.Eval)
		}
	}
	out := &rel{op: desc, sc: sc, mode: r.mode, inputs: []*rel{r}, updater: r.updater, bounded: r.bounded}
	spec := &calcSpec{input: r, filter: filter}
	if pr == nil {
		for i, c := range r.sc.Cols {
			spec.exprs = append(spec.exprs, expr.ColRef(i, c.Type))
		}
	} else {
		spec.exprs = pr.exprs
	}
	out.calc = spec
	out.build = func(b *builder) (*weir.Stream[types.Row], error) {
		es := []*expr.Expr{filter} // what the Calc evaluates
		for i := range spec.exprs {
			es = append(es, &spec.exprs[i])
		}
		if r.push != nil {
			if err := r.push.RegisterDeps(es...); err != nil {
				return nil, err
			}
			r.push.AddFilter(filter)
		}
		in, err := b.stream(r)
		if err != nil {
			return nil, err
		}
		// CURRENT_WATERMARK: each row's watermark in a slot after its
		// values (expr/watermark.go)
		wms := expr.Watermarks(es...)
		if len(wms) > 0 {
			width := len(r.sc.Cols)
			if r.push != nil {
				width = len(r.push.Paths)
			}
			for _, w := range wms {
				w.Slot = width
			}
			if evals == nil { // a filter alone: it projects every column
				for _, e := range spec.exprs {
					evals = append(evals, e.Eval)
				}
			}
		}
		switch {
		case filter != nil && evals == nil:
			b.passThrough(out, r)
			f := expr.FilterOf(*filter) // typed: no Value per test (expr/expr_typed.go)
			return weir.Filter(in, func(row types.Row) bool { return f(row.Values) }, b.uid("filter")), nil
		case filter == nil && evals == nil:
			b.passThrough(out, r)
			return in, nil
		}
		var f expr.FilterFn
		if filter != nil {
			f = expr.FilterOf(*filter)
		}
		n := len(evals)
		// plain reads are copied, not evaluated
		from := make([]int, n)
		for i, e := range spec.exprs {
			from[i] = expr.CopySource(e, r.push != nil)
		}
		// rows lent to a sink reuse a ring, one per subtask made on the
		// first lent row; rows that every consumer copies come from slabs
		// (lend.go)
		rm := b.rowMaker(out, n)
		rm.slab = b.slabRowsOf(out)
		rm.pool = b.rowPoolOf(out, n)
		// chained to its input, the Calc keeps nothing of an input row once
		// it has made its own (it copies values): the input may lend its
		// rows (an aggregation's changes, lend.go)
		b.borrow(r)
		// one Calc operator: filter and project in a FlatMap, as Flink's Calc
		calc := func() func(types.Row, func(types.Row)) {
			rm := rm
			return func(row types.Row, emit func(types.Row)) {
				if f != nil && !f(row.Values) {
					return
				}
				vs := rm.next()
				for i, ev := range evals {
					if j := from[i]; j >= 0 {
						vs[i] = row.Values[j]
					} else {
						vs[i] = ev(row.Values)
					}
				}
				emit(types.Row{Kind: row.Kind, Values: vs})
			}
		}
		if len(wms) > 0 {
			return weir.FlatMapWatermarkWith(in, func() func(types.Row, int64, func(types.Row)) {
				fn := calc()
				var withWM []types.Value
				return func(row types.Row, wm int64, emit func(types.Row)) {
					withWM = append(append(withWM[:0], row.Values...), expr.WatermarkValue(wm))
					fn(types.Row{Kind: row.Kind, Values: withWM}, emit)
				}
			}, b.uid("calc")), nil
		}
		return weir.FlatMapWith(in, calc, b.uid("calc")), nil
	}
	return out
}
