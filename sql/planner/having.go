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
// do in a WHERE; and so the subqueries of the select list of an
// aggregation (outside aggregate calls), a projection over it. The
// SELECT becomes
//
//	SELECT $o0 AS n0, ... FROM (
//	  SELECT i0 AS $o0, ..., agg AS $h0, ..., g AS $h1, ...
//	  FROM ... WHERE ... GROUP BY ...) AS $having
//	WHERE having'                -- the aggregates and group keys read from $having
//	ORDER BY ... LIMIT ...
//
// A subquery in the HAVING may read the outer query's group keys (a
// correlated one): as in Calcite, where the subquery's correlation
// variable is the aggregation's output row, its names of the FROM's
// grouped columns become the aggregation's columns (the group keys'
// columns of $having), and it is planned as a correlated subquery of a
// WHERE over $having. A name of a column that is not grouped is an
// error, as in Flink. The same holds in the select list.
func (p *planner) havingSubqueries(s *parser.Select) (*parser.Select, error) {
	funcs := p.s.cat.functions()
	// the FROM's scope, for the names of grouped columns (the FROM is
	// planned again with the aggregation)
	var fromNames *expr.Compiler
	if s.From != nil {
		fr, err := p.planFrom(s.From)
		if err != nil {
			return nil, err
		}
		fromNames = &expr.Compiler{Funcs: funcs, Scope: fr.sc}
	}
	inner := *s
	inner.Having, inner.OrderBy, inner.Limit, inner.Distinct = nil, nil, nil, false
	inner.Items = nil
	outer := &parser.Select{Pos: s.Pos, Distinct: s.Distinct, Limit: s.Limit}
	ref := func(pos parser.Pos, name string) parser.Expr {
		return &parser.Ident{Pos: pos, Parts: []string{havingQual, name}}
	}
	byText := map[string]string{} // an expression's text -> its column of $having
	var over []int                // the items with subqueries over the aggregation
	for i, it := range s.Items {
		if it.Star {
			return nil, parser.Errorf(it.Pos, "a subquery over an aggregation (in HAVING or the select list) needs a select list without *")
		}
		name := it.Alias
		if name == "" {
			name = derivedName(it.Expr, i)
		}
		if subqueryOutsideAggregates(it.Expr, funcs) {
			// evaluated over $having (below)
			over = append(over, i)
			outer.Items = append(outer.Items, parser.SelectItem{Pos: it.Pos, Alias: name})
			continue
		}
		col := fmt.Sprintf("$o%d", i)
		inner.Items = append(inner.Items, parser.SelectItem{Pos: it.Pos, Expr: it.Expr, Alias: col})
		outer.Items = append(outer.Items, parser.SelectItem{Pos: it.Pos, Expr: ref(it.Pos, col), Alias: name})
		byText[parser.ExprString(it.Expr)] = col
	}
	groups := map[string]bool{}
	groupCols := map[int]parser.Expr{} // a grouped column of the FROM -> its GROUP BY key
	for _, g := range s.GroupBy {
		groups[parser.ExprString(g)] = true
		if id, ok := g.(*parser.Ident); ok && fromNames != nil {
			if idx, rest, err := fromNames.Resolve(id); err == nil && len(rest) == 0 {
				groupCols[idx] = g
			}
		}
	}
	n := 0
	// keyCol is the column of $having that holds GROUP BY key g
	keyCol := func(g parser.Expr) string {
		text := parser.ExprString(g)
		col, ok := byText[text]
		if !ok {
			col = fmt.Sprintf("$h%d", n)
			n++
			inner.Items = append(inner.Items, parser.SelectItem{Pos: g.ExprPos(), Expr: g, Alias: col})
			byText[text] = col
		}
		return col
	}
	// grouped is the column of $having for a name of a grouped column of
	// the FROM (t.k for GROUP BY k); ok is false for a name of another
	// column of the FROM, and for other names
	grouped := func(id *parser.Ident) (col string, ok, fromCol bool) {
		if fromNames == nil {
			return "", false, false
		}
		idx, rest, err := fromNames.Resolve(id)
		if err != nil || len(rest) > 0 {
			return "", false, false
		}
		g, ok := groupCols[idx]
		if !ok {
			return "", false, true
		}
		return keyCol(g), true, true
	}
	var rewrite func(e parser.Expr) parser.Expr
	var err error
	rewrite = func(e parser.Expr) parser.Expr {
		return mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
			if sq, ok := x.(*parser.Subquery); ok {
				// planned as in a WHERE, over $having; IN's operand reads
				// the aggregation, and so do the subquery's names of
				// grouped columns
				c := *sq
				if sq.X != nil {
					c.X = rewrite(sq.X)
				}
				q, qerr := p.correlateHaving(sq.Query, grouped)
				if qerr != nil && err == nil {
					err = qerr
				}
				c.Query = q
				return &c, true
			}
			if id, ok := x.(*parser.Ident); ok && !groups[parser.ExprString(id)] {
				if col, ok, _ := grouped(id); ok {
					return ref(id.Pos, col), true
				}
			}
			text := parser.ExprString(x)
			c, isCall := x.(*parser.Call)
			agg := isCall && c.Over == nil && expr.IsAggregate(c.Name, funcs)
			if !agg && !groups[text] {
				return nil, false
			}
			return ref(x.ExprPos(), keyCol(x)), true
		})
	}
	outer.Where = rewrite(s.Having)
	for _, i := range over {
		outer.Items[i].Expr = rewrite(s.Items[i].Expr)
	}
	if err != nil {
		return nil, err
	}
	if len(inner.Items) == 0 {
		// every item is evaluated over $having: it still has a row per
		// group
		if len(s.GroupBy) > 0 {
			keyCol(s.GroupBy[0])
		} else {
			inner.Items = append(inner.Items, parser.SelectItem{Pos: s.Pos, Expr: &parser.Call{Pos: s.Pos, Name: "COUNT", Star: true}, Alias: "$h"})
		}
	}
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

// subqueriesOverAggregation reports whether s aggregates and holds
// subqueries that read the aggregation's output: in its HAVING, or in its
// select list outside aggregate calls (subqueries in an aggregate's
// argument are planned over the FROM's rows, before the aggregation).
func subqueriesOverAggregation(s *parser.Select, funcs map[string]expr.Function) bool {
	if s.Having != nil && hasSubquery(s.Having) {
		return true
	}
	if len(s.GroupBy) == 0 && s.Having == nil && !hasAggregateItems(s.Items, funcs) {
		return false
	}
	for _, it := range s.Items {
		if it.Expr != nil && subqueryOutsideAggregates(it.Expr, funcs) {
			return true
		}
	}
	return false
}

// subqueryOutsideAggregates reports whether e holds a subquery that is not
// in an aggregate call's argument.
func subqueryOutsideAggregates(e parser.Expr, funcs map[string]expr.Function) bool {
	has := false
	walkExpr(e, func(x parser.Expr) bool {
		if _, ok := isAggCall(x, funcs); ok {
			return false
		}
		if _, ok := x.(*parser.Subquery); ok {
			has = true
		}
		return !has
	})
	return has
}

// correlateHaving returns q (a subquery of a HAVING) with its names of the
// outer query's grouped columns replaced by the aggregation's columns
// (grouped says which, see havingSubqueries): the names in its WHERE and
// select list that are not its own columns. Its FROM is planned for its
// names (and again when the subquery is). A name of a column of the outer
// FROM that is not grouped is an error.
func (p *planner) correlateHaving(q parser.Query, grouped func(*parser.Ident) (string, bool, bool)) (parser.Query, error) {
	sel, ok := q.(*parser.Select)
	if !ok || sel.From == nil {
		return q, nil
	}
	own, err := p.planFrom(sel.From)
	if err != nil {
		return nil, err
	}
	ic := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: own.sc}
	var bad error
	repl := func(e parser.Expr) parser.Expr {
		return mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
			id, ok := x.(*parser.Ident)
			if !ok {
				return nil, false
			}
			if _, _, err := ic.Resolve(id); err == nil {
				return id, true
			}
			col, ok, fromCol := grouped(id)
			switch {
			case ok:
				return &parser.Ident{Pos: id.Pos, Parts: []string{havingQual, col}}, true
			case fromCol && bad == nil:
				bad = expr.ErrAt(id, "expression '%s' is not being grouped", parser.ExprString(id))
			}
			return id, true
		})
	}
	cp := *sel
	cp.Where = repl(sel.Where)
	cp.Items = make([]parser.SelectItem, len(sel.Items))
	for i, it := range sel.Items {
		cp.Items[i] = it
		if it.Expr != nil {
			cp.Items[i].Expr = repl(it.Expr)
		}
	}
	if bad != nil {
		return nil, bad
	}
	return &cp, nil
}
