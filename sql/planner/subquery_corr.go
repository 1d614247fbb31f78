package planner

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Correlated scalar subqueries, decorrelated as Calcite's RelDecorrelator
// (the decorrelator Flink runs) does it. The subquery's WHERE splits into
// local conditions (the subquery's own columns) and correlated ones (they
// read the outer row too).
//
//   - When the correlated conditions are all inner = outer equalities, the
//     subquery is grouped by its side of them and left-joined to the
//     outer rows on them (Calcite finds the correlation's value among the
//     subquery's own columns):
//
//     (SELECT MAX(b.price) FROM bid b WHERE b.auction = a.id)
//     -> LEFT JOIN (SELECT b.auction, MAX(b.price) FROM bid b GROUP BY b.auction) ON a.id = b.auction
//
//   - Otherwise (a non-equality, an OR, a condition on the outer row alone,
//     or the outer row read in an aggregate's argument), the outer rows'
//     distinct values of the columns the subquery reads (Calcite's "value
//     generator") are joined with the subquery's rows on the correlated
//     conditions, grouped by those values, and left-joined to the outer
//     rows on them:
//
//     (SELECT AVG(b.price) FROM bid b WHERE b.auction = p.auction AND b.dateTime < p.dateTime)
//     -> LEFT JOIN (SELECT v.auction, v.dateTime, AVG(b.price)
//     FROM (SELECT DISTINCT auction, dateTime FROM p) v
//     JOIN bid b ON b.auction = v.auction AND b.dateTime < v.dateTime
//     GROUP BY v.auction, v.dateTime) ON p.auction = v.auction AND p.dateTime = v.dateTime
//
// The last join is an equi-join, as Calcite's: an outer row whose
// correlated columns hold a NULL meets no group (its aggregates are NULL,
// its COUNTs 0), even when the subquery's conditions would accept a NULL.
//
// The select list is evaluated over the joined row, as Calcite pulls it
// above the join: an aggregate subquery's COUNTs are 0 where the outer row
// met no group (the "count bug"), its other aggregates NULL, and the outer
// row's columns it reads outside aggregates are the outer row's. A subquery
// without aggregates is NULL where it has no row, and fails the job with
// more than one row per outer value, as Flink's SINGLE_VALUE does.
//
// HAVING without GROUP BY filters the subquery's one group: it is
// evaluated over the joined row too, so an outer row that met no row has
// that group over no rows (HAVING COUNT(*) = 0 holds there). GROUP BY, and
// DISTINCT without aggregates, may give more than one row per outer row:
// see planCorrelatedGroups.
//
// IN and EXISTS over a correlated subquery with aggregates, GROUP BY or
// DISTINCT share the decorrelation (planGroupedSubqueryJoin).

// outerQual qualifies the value generator's columns (the outer row's
// distinct values) inside a decorrelated subquery.
const outerQual = "$outer"

// corrNames resolves a correlated subquery's names with SQL's scoping: a
// name is the subquery's own column first, else the outer query's.
type corrNames struct {
	inner, outer *expr.Compiler
}

// outerCol reports whether id reads the outer row, and its column there
// and field path.
func (n corrNames) outerCol(id *parser.Ident) (int, []string, bool) {
	_, irest, ierr := n.inner.Resolve(id)
	idx, rest, err := n.outer.Resolve(id)
	if ierr == nil && (err != nil || len(rest) >= len(irest)) {
		// a name resolves in the subquery first; but A.id, where the
		// subquery has a column a (read as a field access of it) and
		// the outer query a table A, is the outer table's column, as
		// Calcite resolves table names before fields
		return 0, nil, false
	}
	return idx, rest, err == nil
}

// reads reports which rows e reads: 1 the outer row, 2 the subquery's.
// Nested subqueries are not looked into (a correlation through them is
// refused when they are planned).
func (n corrNames) reads(e parser.Expr) int {
	side := 0
	walkExpr(e, func(x parser.Expr) bool {
		id, ok := x.(*parser.Ident)
		if !ok {
			return true
		}
		if _, _, ok := n.outerCol(id); ok {
			side |= 1
		} else if _, _, err := n.inner.Resolve(id); err == nil {
			side |= 2
		}
		return false
	})
	return side
}

// isAggCall reports whether x is an aggregate call (not an OVER window).
func isAggCall(x parser.Expr, funcs map[string]expr.Function) (*parser.Call, bool) {
	c, ok := x.(*parser.Call)
	return c, ok && c.Over == nil && expr.IsAggregate(c.Name, funcs)
}

// planCorrelatedScalar plans a scalar subquery that reads the outer row
// (see above), returning the joined input and the expression that stands
// for the subquery's value. It returns nil (and no error) for a subquery
// that is not correlated.
func (p *planner) planCorrelatedScalar(from *rel, sq *parser.Subquery, qual string) (*rel, parser.Expr, error) {
	sel, ok := sq.Query.(*parser.Select)
	if !ok || sel.From == nil || len(sel.Items) != 1 || sel.Items[0].Star {
		return nil, nil, nil
	}
	funcs := p.s.cat.functions()
	innerFrom, err := p.planFrom(sel.From)
	if err != nil {
		return nil, nil, err
	}
	n := corrNames{
		inner: &expr.Compiler{Funcs: funcs, Scope: innerFrom.sc},
		outer: &expr.Compiler{Funcs: funcs, Scope: from.sc},
	}
	item := sel.Items[0].Expr
	side := n.reads(sel.Where) | n.reads(item) | n.reads(sel.Having)
	for _, g := range sel.GroupBy {
		side |= n.reads(g)
	}
	if side&1 == 0 {
		return nil, nil, nil
	}
	switch {
	case sel.Limit != nil:
		return nil, nil, errCorrelatedLimit(sq)
	case hasOver(item):
		return nil, nil, parser.Errorf(sq.Pos, "a correlated scalar subquery with OVER is not supported yet")
	case sel.Having != nil && hasSubquery(sel.Having):
		return nil, nil, parser.Errorf(sq.Pos, "a correlated subquery with a subquery in its HAVING is not supported yet")
	case len(sel.GroupBy) > 0 || sel.Distinct && !hasAggregate(item, funcs) && sel.Having == nil:
		return p.planCorrelatedGroups(from, innerFrom, sq, sel, n, qual)
	}

	// the select list (and HAVING): aggregated, or a row's value; where
	// it reads the outer row. Without GROUP BY, an aggregated subquery
	// has one row (DISTINCT changes nothing).
	grouped := hasAggregate(item, funcs) || sel.Having != nil
	aggOuter := false
	var aggs []parser.Expr
	if grouped {
		var bad parser.Expr
		for _, e := range []parser.Expr{item, sel.Having} {
			outside := mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
				if c, ok := isAggCall(x, funcs); ok {
					aggs = append(aggs, c)
					if n.reads(c)&1 != 0 {
						aggOuter = true
					}
					return &parser.Literal{Pos: c.Pos, Kind: parser.NullLit, Text: "NULL"}, true
				}
				return nil, false
			})
			walkExpr(outside, func(x parser.Expr) bool {
				if id, ok := x.(*parser.Ident); ok && bad == nil && n.reads(id) == 2 {
					bad = id
				}
				return bad == nil
			})
		}
		if bad != nil {
			return nil, nil, expr.ErrAt(bad, "expression '%s' is not being grouped", parser.ExprString(bad))
		}
	}
	itemOuter := n.reads(item)&1 != 0
	d, err := p.decorrelate(from, innerFrom, sq, sel, n, aggs, aggOuter)
	if err != nil {
		return nil, nil, err
	}
	inner, keys, rewrite := d.rows, d.keys, d.rewrite

	// the subquery's rows per key: its aggregates, or its row
	aSel := &parser.Select{Pos: sel.Pos}
	for i, k := range keys {
		aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: k, Alias: fmt.Sprintf("$k%d", i)})
	}
	ref := func(name string) parser.Expr { return &parser.Ident{Pos: sq.Pos, Parts: []string{qual, name}} }
	var val parser.Expr
	var agg *rel
	switch {
	case grouped:
		aSel.GroupBy = keys
		byText := map[string]string{}
		pull := func(e parser.Expr) parser.Expr {
			return mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
				c, ok := isAggCall(x, funcs)
				if !ok {
					return nil, false
				}
				text := parser.ExprString(c)
				col, ok := byText[text]
				if !ok {
					col = fmt.Sprintf("$a%d", len(byText))
					byText[text] = col
					aSel.Items = append(aSel.Items, parser.SelectItem{Pos: c.Pos, Expr: rewrite(c), Alias: col})
				}
				if c.Name == "COUNT" {
					// no group: a COUNT of no rows
					return &parser.Call{Pos: c.Pos, Name: "COALESCE", Args: []parser.Expr{ref(col), &parser.Literal{Pos: c.Pos, Kind: parser.NumberLit, Text: "0"}}}, true
				}
				return ref(col), true
			})
		}
		val = pull(item)
		if sel.Having != nil {
			// the one group's HAVING, evaluated over the joined row too:
			// where the outer row met no row, over the aggregates of no
			// rows (HAVING COUNT(*) = 0 holds there)
			val = &parser.Case{Pos: sel.Having.ExprPos(), Whens: []parser.When{{Cond: pull(sel.Having), Then: val}}}
		}
		if agg, err = p.planAggregate(aSel, inner); err != nil {
			return nil, nil, err
		}
	case !itemOuter:
		aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: item, Alias: "$v"})
		val = ref("$v")
	default:
		// the item reads both rows: the subquery's columns it reads come
		// along, and a marker that the outer row met a row
		byText := map[string]string{}
		e := mapExpr(item, func(x parser.Expr) (parser.Expr, bool) {
			id, ok := x.(*parser.Ident)
			if !ok {
				return nil, false
			}
			if n.reads(id) != 2 {
				return id, true
			}
			text := parser.ExprString(id)
			col, ok := byText[text]
			if !ok {
				col = fmt.Sprintf("$c%d", len(byText))
				byText[text] = col
				aSel.Items = append(aSel.Items, parser.SelectItem{Pos: id.Pos, Expr: id, Alias: col})
			}
			return ref(col), true
		})
		aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: &parser.Literal{Pos: sel.Pos, Kind: parser.BoolLit, Text: "TRUE"}, Alias: "$n"})
		val = &parser.Case{Pos: sq.Pos, Whens: []parser.When{{Cond: ref("$n"), Then: e}}}
	}
	if agg == nil {
		ec, input, filter := fused(inner, "SELECT", funcs)
		pr, err := expandSelect(aSel.Items, ec)
		if err != nil {
			return nil, nil, err
		}
		agg = calcRel(input, filter, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])")
	}
	agg = requalify(agg, qual)
	lkeys, rkeys, err := joinBackKeys(n, d, agg)
	if err != nil {
		return nil, nil, err
	}
	return scalarJoinRel(from, agg, sq, lkeys, rkeys, !grouped, "correlated"), val, nil
}

// planCorrelatedGroups plans a correlated scalar subquery with GROUP BY
// (and HAVING), or with DISTINCT and no aggregates: one that may have
// more than one row per outer row. As Calcite's decorrelator does it, the
// correlation keys join its groups: the subquery is grouped by its GROUP
// BY and the keys, HAVING filters those groups, and the select list is
// evaluated per group; DISTINCT groups the keys and the value. The left
// join back checks that an outer value meets one row at most (Flink's
// SINGLE_VALUE over the subquery): more fails the job, none is NULL (a
// COUNT too: there is no group to count in).
//
// The select list, GROUP BY and HAVING are evaluated inside the
// aggregation, so where they read the outer row the value generator
// stands for it (its columns are keys, so grouped), also when the
// correlated conditions are equalities.
func (p *planner) planCorrelatedGroups(from, innerFrom *rel, sq *parser.Subquery, sel *parser.Select, n corrNames, qual string) (*rel, parser.Expr, error) {
	item := sel.Items[0].Expr
	var also []parser.Expr
	for _, e := range append([]parser.Expr{item, sel.Having}, sel.GroupBy...) {
		if e != nil && n.reads(e)&1 != 0 {
			also = append(also, e)
		}
	}
	d, err := p.decorrelate(from, innerFrom, sq, sel, n, also, len(also) > 0)
	if err != nil {
		return nil, nil, err
	}
	aSel := &parser.Select{Pos: sel.Pos}
	for i, k := range d.keys {
		aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: k, Alias: fmt.Sprintf("$k%d", i)})
	}
	aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: d.rewrite(item), Alias: "$v"})
	var rows *rel
	if len(sel.GroupBy) > 0 {
		for _, g := range sel.GroupBy {
			aSel.GroupBy = append(aSel.GroupBy, d.rewrite(g))
		}
		aSel.GroupBy = append(aSel.GroupBy, d.keys...)
		if sel.Having != nil {
			aSel.Having = d.rewrite(sel.Having)
		}
		if rows, err = p.planAggregate(aSel, d.rows); err != nil {
			return nil, nil, err
		}
		if sel.Distinct {
			// DISTINCT over the groups' values: one row per (keys, value)
			rows = requalify(rows, qual)
			dSel := &parser.Select{Pos: sel.Pos, Distinct: true}
			for _, c := range rows.sc.Cols {
				dSel.Items = append(dSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: &parser.Ident{Pos: sel.Pos, Parts: []string{qual, c.Name}}, Alias: c.Name})
			}
			if rows, err = p.planAggregate(dSel, rows); err != nil {
				return nil, nil, err
			}
		}
	} else {
		// DISTINCT without aggregates: grouped by the keys and the value
		aSel.GroupBy = append(append([]parser.Expr(nil), d.keys...), d.rewrite(item))
		if rows, err = p.planAggregate(aSel, d.rows); err != nil {
			return nil, nil, err
		}
	}
	rows = requalify(rows, qual)
	lkeys, rkeys, err := joinBackKeys(n, d, rows)
	if err != nil {
		return nil, nil, err
	}
	val := &parser.Ident{Pos: sq.Pos, Parts: []string{qual, "$v"}}
	return scalarJoinRel(from, rows, sq, lkeys, rkeys, true, "correlated"), val, nil
}

// joinBackKeys compiles the keys of the left join of the outer rows with
// a decorrelated subquery's rows (its first columns, one per key), cast
// to a common type.
func joinBackKeys(n corrNames, d *decorrelated, rows *rel) (lkeys, rkeys []expr.Expr, err error) {
	for i, k := range d.outerKeys {
		lc, err := n.outer.Compile(k)
		if err != nil {
			return nil, nil, err
		}
		rc := expr.ColRef(i, rows.sc.Cols[i].Type)
		at := d.keys[i]
		ct, ok := expr.CommonType([]types.Type{lc.Type, rc.Type})
		if !ok {
			return nil, nil, expr.ErrAt(at, "%s and the subquery's %s do not compare", lc.Type, rc.Type)
		}
		if lc, err = expr.Cast(lc, ct, at); err != nil {
			return nil, nil, err
		}
		if rc, err = expr.Cast(rc, ct, at); err != nil {
			return nil, nil, err
		}
		lkeys, rkeys = append(lkeys, lc), append(rkeys, rc)
	}
	return lkeys, rkeys, nil
}

// errCorrelatedLimit refuses a correlated subquery with LIMIT. A scalar
// one: Calcite does not decorrelate a per-row LIMIT (a Sort with a
// fetch), and Flink fails with "unexpected correlate variable $cor0 in
// the plan". IN and EXISTS: Flink's SubQueryDecorrelator keeps the LIMIT
// over the decorrelated subquery, which limits the rows of all outer rows
// together instead of each one's; weir does not give that answer.
func errCorrelatedLimit(sq *parser.Subquery) error {
	if sq.Op == "" {
		return parser.Errorf(sq.Pos, "a correlated scalar subquery with LIMIT (or FETCH) is not supported: Calcite cannot decorrelate it (Flink: unexpected correlate variable in the plan)")
	}
	return parser.Errorf(sq.Pos, "a correlated %s subquery with LIMIT (or FETCH) is not supported (Flink applies the LIMIT to the rows of all outer rows together, not per row)", sq.Op)
}

// planLocal filters a correlated subquery's rows (from) by its local
// conditions, those that do not read the outer row. They may hold
// subqueries of their own, planned as in a WHERE over from; those cannot
// read the outer row (Calcite leaves such a nested correlation in the
// plan, and Flink fails with "unexpected correlate variable").
func (p *planner) planLocal(from *rel, local []parser.Expr, pos parser.Pos) (*rel, error) {
	w := andAll(local)
	if w == nil {
		return from, nil
	}
	s, r, err := p.planSubqueries(&parser.Select{Pos: pos, Where: w}, from)
	if err != nil {
		if strings.Contains(err.Error(), "not found") {
			err = fmt.Errorf("%w (a subquery nested in a correlated subquery cannot read the outer query's columns)", err)
		}
		return nil, err
	}
	if s.Where != nil {
		return p.where(r, s.Where)
	}
	return r, nil
}

// decorrelated is a correlated subquery's rows, to be grouped or checked
// per value of the outer row: the subquery's FROM filtered by its local
// conditions, joined with the value generator when there is one.
type decorrelated struct {
	rows *rel
	// keys are the subquery's side of the join back to the outer rows,
	// over rows; outerKeys the outer row's side, over the outer rows
	// (names of its columns, for a value generator).
	keys, outerKeys []parser.Expr
	// rewrite turns the outer row's names into the value generator's
	// columns (the identity without a value generator).
	rewrite func(parser.Expr) parser.Expr
}

// decorrelate splits the WHERE of a correlated subquery (sel, over
// innerFrom) into local conditions, which filter its rows, and correlated
// ones. When the correlated conditions are all inner = outer equalities
// (and values is false), they are the keys; else the value generator is
// joined with the rows on them, the generator's columns the keys. Its
// columns are the outer row's columns that the correlated conditions and
// also read.
func (p *planner) decorrelate(from, innerFrom *rel, sq *parser.Subquery, sel *parser.Select, n corrNames, also []parser.Expr, values bool) (*decorrelated, error) {
	funcs := p.s.cat.functions()
	// local conditions filter the subquery's rows (they may hold
	// subqueries of their own, not correlated with the outer row);
	// correlated ones join
	var local, corr []parser.Expr
	for _, c := range splitAnd(sel.Where) {
		if n.reads(c)&1 == 0 {
			local = append(local, c)
			continue
		}
		if hasAggregate(c, funcs) {
			return nil, expr.ErrAt(c, "aggregate functions are not allowed in WHERE")
		}
		if _, _, err := p.corrCompile(from, innerFrom, sq, c); err != nil {
			return nil, err
		}
		corr = append(corr, c)
	}
	rows, err := p.planLocal(innerFrom, local, sel.Pos)
	if err != nil {
		return nil, err
	}
	d := &decorrelated{rows: rows, rewrite: func(e parser.Expr) parser.Expr { return e }}
	// equalities inner = outer: the subquery's own columns stand for the
	// outer row's (no value generator)
	if !values {
		var keys, outerKeys []parser.Expr
		for _, c := range corr {
			b, ok := c.(*parser.Binary)
			if !ok || b.Op != "=" {
				values = true
				break
			}
			switch ls, rs := n.reads(b.L), n.reads(b.R); {
			case ls == 2 && rs == 1:
				keys, outerKeys = append(keys, b.L), append(outerKeys, b.R)
			case ls == 1 && rs == 2:
				keys, outerKeys = append(keys, b.R), append(outerKeys, b.L)
			default:
				values = true
			}
		}
		if !values {
			d.keys, d.outerKeys = keys, outerKeys
			return d, nil
		}
	}
	// the value generator: the outer rows' distinct values of the columns
	// the correlated conditions (and also) read
	var cols []int
	at := map[int]int{}
	note := func(e parser.Expr) {
		walkExpr(e, func(x parser.Expr) bool {
			id, ok := x.(*parser.Ident)
			if !ok {
				return true
			}
			if c, rest, ok := n.outerCol(id); ok {
				if _, seen := at[c]; !seen {
					at[c] = len(cols)
					cols = append(cols, c)
					d.outerKeys = append(d.outerKeys, &parser.Ident{Pos: id.Pos, Parts: id.Parts[:len(id.Parts)-len(rest)]})
				}
			}
			return false
		})
	}
	for _, c := range corr {
		note(c)
	}
	for _, e := range also {
		note(e)
	}
	d.rewrite = func(e parser.Expr) parser.Expr {
		return mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
			id, ok := x.(*parser.Ident)
			if !ok {
				return nil, false
			}
			if c, rest, ok := n.outerCol(id); ok {
				return &parser.Ident{Pos: id.Pos, Parts: append([]string{outerQual, fmt.Sprintf("$o%d", at[c])}, rest...)}, true
			}
			return id, true
		})
	}
	gen, err := p.valueGenerator(from, cols)
	if err != nil {
		return nil, err
	}
	var conds []parser.Expr
	for _, c := range corr {
		conds = append(conds, d.rewrite(c))
	}
	if d.rows, err = p.innerJoinRels(gen, d.rows, conds); err != nil {
		return nil, err
	}
	for k := range cols {
		d.keys = append(d.keys, &parser.Ident{Pos: sq.Pos, Parts: []string{outerQual, fmt.Sprintf("$o%d", k)}})
	}
	return d, nil
}

// planGroupedSubqueryJoin plans x [NOT] IN (SELECT ...) or [NOT] EXISTS
// (SELECT ...) over a subquery with GROUP BY, aggregates, DISTINCT or
// ORDER BY that reads the outer row in its WHERE, as Flink's
// SubQueryDecorrelator plans it: the subquery grouped by the correlation
// keys too (the subquery's side of its equalities, else the value
// generator's columns), then semi- (anti-, mark-) joined to the outer rows
// on the keys (and, for IN, the value). It returns nil (and no error) for
// a subquery that does not read the outer row.
//
// As in Flink, an aggregate without GROUP BY has a row only for the outer
// values that meet some row of the subquery: EXISTS (SELECT COUNT(*) ...
// WHERE corr) is true only where corr holds for some row, and
// x IN (SELECT COUNT(*) ... WHERE corr) is never true for a COUNT of 0.
func (p *planner) planGroupedSubqueryJoin(left *rel, sq *parser.Subquery, anti bool, markQual, qual string) (*rel, error) {
	sel, ok := sq.Query.(*parser.Select)
	if !ok || sel.From == nil {
		return nil, nil
	}
	funcs := p.s.cat.functions()
	innerFrom, err := p.planFrom(sel.From)
	if err != nil {
		return nil, err
	}
	n := corrNames{
		inner: &expr.Compiler{Funcs: funcs, Scope: innerFrom.sc},
		outer: &expr.Compiler{Funcs: funcs, Scope: left.sc},
	}
	elsewhere := n.reads(sel.Having)
	for _, it := range sel.Items {
		elsewhere |= n.reads(it.Expr)
	}
	for _, g := range sel.GroupBy {
		elsewhere |= n.reads(g)
	}
	for _, o := range sel.OrderBy {
		elsewhere |= n.reads(o.Expr)
	}
	switch {
	case n.reads(sel.Where)&1 == 0 && elsewhere&1 == 0:
		return nil, nil
	case elsewhere&1 != 0:
		return nil, parser.Errorf(sq.Pos, "a subquery with GROUP BY, aggregates, DISTINCT or ORDER BY reads the outer query's columns in its WHERE only")
	case sel.Limit != nil:
		return nil, errCorrelatedLimit(sq)
	case sel.Having != nil && hasSubquery(sel.Having):
		return nil, parser.Errorf(sq.Pos, "a correlated subquery with a subquery in its HAVING is not supported yet")
	}
	d, err := p.decorrelate(left, innerFrom, sq, sel, n, nil, false)
	if err != nil {
		return nil, err
	}
	// the subquery per key: keys first, then (IN) its value
	aSel := &parser.Select{Pos: sel.Pos, Having: sel.Having}
	for i, k := range d.keys {
		aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: k, Alias: fmt.Sprintf("$k%d", i)})
	}
	if sq.Op == "IN" {
		if len(sel.Items) != 1 || sel.Items[0].Star {
			return nil, parser.Errorf(sq.Pos, "the subquery of IN must select one column")
		}
		aSel.Items = append(aSel.Items, parser.SelectItem{Pos: sel.Pos, Expr: sel.Items[0].Expr, Alias: "$v"})
	}
	var rows *rel
	switch {
	case len(sel.GroupBy) > 0 || sel.Having != nil || hasAggregateItems(sel.Items, funcs):
		aSel.GroupBy = append(append([]parser.Expr(nil), sel.GroupBy...), d.keys...)
		rows, err = p.planAggregate(aSel, d.rows)
	case sel.Distinct:
		// DISTINCT per key: grouped by the keys and the value
		aSel.GroupBy = append([]parser.Expr(nil), d.keys...)
		if sq.Op == "IN" {
			aSel.GroupBy = append(aSel.GroupBy, sel.Items[0].Expr)
		}
		rows, err = p.planAggregate(aSel, d.rows)
	default:
		// ORDER BY alone: no order to keep in a set of values
		ec, input, filter := fused(d.rows, "SELECT", funcs)
		var pr *projection
		if pr, err = expandSelect(aSel.Items, ec); err == nil {
			rows = calcRel(input, filter, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])")
		}
	}
	if err != nil {
		return nil, err
	}
	rows = requalify(rows, qual)
	ref := func(name string) parser.Expr { return &parser.Ident{Pos: sq.Pos, Parts: []string{qual, name}} }
	var conds []parser.Expr
	for i, k := range d.outerKeys {
		conds = append(conds, &parser.Binary{Pos: k.ExprPos(), Op: "=", L: k, R: ref(fmt.Sprintf("$k%d", i))})
	}
	if sq.Op == "IN" {
		conds = append(conds, inCond(sq, ref("$v"), anti))
	}
	return p.semiJoinRel(left, rows, conds, anti, sq, markQual)
}

// valueGenerator is the distinct values of from's columns cols, as
// $outer.$o0, ...: a group aggregation over the outer rows, keeping one
// entry per distinct value (Calcite's value generator).
func (p *planner) valueGenerator(from *rel, cols []int) (*rel, error) {
	ec, input, filter := fused(from, "a correlated subquery", p.s.cat.functions())
	pr := &projection{}
	sel := &parser.Select{}
	for k, c := range cols {
		name := fmt.Sprintf("$o%d", k)
		pr.names = append(pr.names, name)
		pr.exprs = append(pr.exprs, ec.Column(c))
		id := &parser.Ident{Parts: []string{outerQual, name}}
		sel.Items = append(sel.Items, parser.SelectItem{Expr: id, Alias: name})
		sel.GroupBy = append(sel.GroupBy, id)
	}
	proj := requalify(calcRel(input, filter, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])"), outerQual)
	// plain values: not window or time attributes of the outer rows
	for i := range proj.sc.Cols {
		proj.sc.Cols[i].Win = 0
		proj.sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
	}
	values, err := p.planAggregate(sel, proj)
	if err != nil {
		return nil, err
	}
	return requalify(values, outerQual), nil
}

// innerJoinRels is the inner join of two planned inputs on conds: keyed
// by the equalities between the two sides, the other conditions checked
// on each pair (no equality: one task meets all rows). It is a changelog
// join (joinFn), keeping both sides' rows per key.
func (p *planner) innerJoinRels(left, right *rel, conds []parser.Expr) (*rel, error) {
	funcs := p.s.cat.functions()
	nl := len(left.sc.Cols)
	sc := &expr.Scope{Cols: append(append([]expr.Column(nil), left.sc.Cols...), right.sc.Cols...)}
	for i := range sc.Cols {
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
	}
	sc = withoutWindowMarks(sc, 0, len(sc.Cols))
	ec := &expr.Compiler{Funcs: funcs, Scope: sc, What: "a subquery's condition"}
	lec := &expr.Compiler{Funcs: funcs, Scope: left.sc, What: "a subquery's condition"}
	rec := &expr.Compiler{Funcs: funcs, Scope: right.sc, What: "a subquery's condition"}
	var lkeys, rkeys []expr.Expr
	var keyText []string
	var residual []parser.Expr
	for _, c := range conds {
		if b, ok := c.(*parser.Binary); ok && b.Op == "=" {
			lc, errL := ec.Compile(b.L)
			rc, errR := ec.Compile(b.R)
			if errL == nil && errR == nil {
				le, re := b.L, b.R
				switch ls, rs := sideOf(lc, b.L, ec, nl), sideOf(rc, b.R, ec, nl); {
				case ls == 2 && rs == 1:
					le, re = b.R, b.L
				case ls != 1 || rs != 2:
					le = nil
				}
				if le != nil {
					lk, err := lec.Compile(le)
					if err != nil {
						return nil, err
					}
					rk, err := rec.Compile(re)
					if err != nil {
						return nil, err
					}
					if t, ok := expr.CommonType([]types.Type{lk.Type, rk.Type}); ok {
						if lk, err = expr.Cast(lk, t, le); err != nil {
							return nil, err
						}
						if rk, err = expr.Cast(rk, t, re); err != nil {
							return nil, err
						}
						lkeys, rkeys = append(lkeys, lk), append(rkeys, rk)
						keyText = append(keyText, parser.ExprString(c))
						continue
					}
				}
			}
		}
		residual = append(residual, c)
	}
	res, resText, err := compileConjunction(ec, residual)
	if err != nil {
		return nil, err
	}
	op := fmt.Sprintf("Join(joinType=[INNER], where=[%s])", strings.Join(append(keyText, resText...), " AND "))
	mode := maxMode(left.mode, right.mode)
	if mode == types.Upsert {
		mode = types.All
	}
	r := &rel{op: op, sc: sc, mode: mode, inputs: []*rel{left, right}, updater: mergeUpdater(left, right), bounded: allBounded(left, right)}
	nr := len(right.sc.Cols)
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, rs, err := b.streams(left, right)
		if err != nil {
			return nil, err
		}
		var resEval expr.EvalFn
		if res != nil {
			resEval = res.Eval
		}
		ks := sidesKeyed(b, ls, rs, evals(lkeys), evals(rkeys), "correlate-join-tag")
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &joinFn{nl: nl, nr: nr, residual: resEval}
		}, b.uid("correlate-join")), nil
	}
	return r, nil
}
