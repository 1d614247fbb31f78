package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
)

// havingQual qualifies the aggregation's columns in a HAVING with
// subqueries (havingSubqueries).
const havingQual = "$having"

// hasSubquery reports whether e holds a subquery.
func hasSubquery(e parser.Expr) bool {
	has := false
	walkExpr(e, func(x parser.Expr) bool {
		if _, ok := x.(*parser.Subquery); ok {
			has = true
		}
		return !has
	})
	return has
}

// havingSubqueries plans a HAVING that holds subqueries as Flink (Calcite)
// does: a filter over the aggregation, where the subqueries join as they
// do in a WHERE. The SELECT becomes
//
//	SELECT $o0 AS n0, ... FROM (
//	  SELECT i0 AS $o0, ..., agg AS $h0, ..., g AS $g0, ...
//	  FROM ... WHERE ... GROUP BY ...) AS $having
//	WHERE having'                -- the aggregates and group keys read from $having
//	ORDER BY ... LIMIT ...
//
// A subquery in the HAVING that reads the outer query's columns (a
// correlated one) is not supported: its names do not resolve.
func (p *planner) havingSubqueries(s *parser.Select) (*parser.Select, error) {
	funcs := p.s.cat.functions()
	inner := *s
	inner.Having, inner.OrderBy, inner.Limit, inner.Distinct = nil, nil, nil, false
	inner.Items = nil
	outer := &parser.Select{Pos: s.Pos, Distinct: s.Distinct, Limit: s.Limit}
	ref := func(pos parser.Pos, name string) parser.Expr {
		return &parser.Ident{Pos: pos, Parts: []string{havingQual, name}}
	}
	byText := map[string]string{} // an expression's text -> its column of $having
	for i, it := range s.Items {
		if it.Star {
			return nil, parser.Errorf(it.Pos, "a subquery in HAVING needs a select list without *")
		}
		col := fmt.Sprintf("$o%d", i)
		inner.Items = append(inner.Items, parser.SelectItem{Pos: it.Pos, Expr: it.Expr, Alias: col})
		name := it.Alias
		if name == "" {
			name = derivedName(it.Expr, i)
		}
		outer.Items = append(outer.Items, parser.SelectItem{Pos: it.Pos, Expr: ref(it.Pos, col), Alias: name})
		byText[parser.ExprString(it.Expr)] = col
	}
	groups := map[string]bool{}
	for _, g := range s.GroupBy {
		groups[parser.ExprString(g)] = true
	}
	n := 0
	var rewrite func(e parser.Expr) parser.Expr
	rewrite = func(e parser.Expr) parser.Expr {
		return mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
			if sq, ok := x.(*parser.Subquery); ok {
				// planned as in a WHERE, over $having; IN's operand reads
				// the aggregation
				if sq.X != nil {
					c := *sq
					c.X = rewrite(sq.X)
					return &c, true
				}
				return sq, true
			}
			text := parser.ExprString(x)
			c, isCall := x.(*parser.Call)
			agg := isCall && c.Over == nil && expr.IsAggregate(c.Name, funcs)
			if !agg && !groups[text] {
				return nil, false
			}
			col, ok := byText[text]
			if !ok {
				col = fmt.Sprintf("$h%d", n)
				n++
				inner.Items = append(inner.Items, parser.SelectItem{Pos: x.ExprPos(), Expr: x, Alias: col})
				byText[text] = col
			}
			return ref(x.ExprPos(), col), true
		})
	}
	outer.Where = rewrite(s.Having)
	for _, o := range s.OrderBy {
		// an output column's name stays as it is; aggregates and group
		// keys read from $having
		if id, ok := o.Expr.(*parser.Ident); ok && len(id.Parts) == 1 && slices.ContainsFunc(outer.Items, func(it parser.SelectItem) bool {
			return strings.EqualFold(it.Alias, id.Parts[0])
		}) {
			outer.OrderBy = append(outer.OrderBy, o)
			continue
		}
		o.Expr = rewrite(o.Expr)
		outer.OrderBy = append(outer.OrderBy, o)
	}
	outer.From = &parser.SubqueryTable{Pos: s.Pos, Query: &inner, Alias: havingQual}
	return outer, nil
}
