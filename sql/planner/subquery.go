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

// Subqueries, as Flink's planner rewrites them into joins:
//
//   - a WHERE conjunct x [NOT] IN (SELECT e ...) or [NOT] EXISTS (SELECT
//     ...) is a semi join (anti join for NOT) of the FROM with the
//     subquery: the FROM's rows that have a match (none). A simple
//     subquery (no GROUP BY, aggregates, DISTINCT, ORDER BY or LIMIT) may
//     read the outer row's columns in its WHERE (a correlated subquery):
//     those conditions become the join's condition. A correlated subquery
//     with them is grouped by its correlation keys too, then joined
//     (subquery_corr.go). x NOT IN keeps SQL's NULL rule: a NULL x, or a
//     NULL among the subquery's values, matches every row, so that
//     x NOT IN (... NULL ...) is never true.
//   - a scalar subquery, (SELECT one column ...) in WHERE or the SELECT
//     list, uncorrelated, is a left join of every row with the subquery's
//     single row (NULL when it has none; more than one fails the job, as in
//     Flink). All rows of the FROM meet the subquery's row in one task. A
//     correlated one is decorrelated as Calcite does (subquery_corr.go).
//   - subqueries in HAVING, or in an aggregation's select list, are
//     planned over the aggregation's output (having.go).
//
// Both are joins over changelogs: when the subquery's result changes, the
// rows it selected are retracted or emitted (or updated, for a scalar).

// subqueryQual qualifies a subquery's columns in the joined row.
const subqueryQual = "$subquery"

// planSubqueries plans the subqueries of s's WHERE and SELECT list over
// from, returning s without them (a copy) and the joined input.
func (p *planner) planSubqueries(s *parser.Select, from *rel) (*parser.Select, *rel, error) {
	has := hasSubquery(s.Where)
	for _, it := range s.Items {
		has = has || hasSubquery(it.Expr)
	}
	if !has {
		return s, from, nil
	}
	cp := *s
	s = &cp
	var err error
	if s.Where != nil {
		var kept []parser.Expr
		for _, c := range splitAnd(s.Where) {
			sq, anti, ok := semiJoinable(c)
			if !ok {
				kept = append(kept, c)
				continue
			}
			if from, err = p.planSemiJoin(from, sq, anti); err != nil {
				return nil, nil, err
			}
		}
		s.Where = andAll(kept)
	}
	// scalar subqueries: each a column of the joined row; IN and EXISTS
	// elsewhere than a WHERE conjunct: a mark join's column
	repl := map[*parser.Subquery]parser.Expr{}
	scalar := func(e parser.Expr) error {
		var err error
		walkExpr(e, func(x parser.Expr) bool {
			sq, ok := x.(*parser.Subquery)
			if !ok || err != nil {
				return err == nil
			}
			if repl[sq] != nil {
				return false
			}
			if sq.Op != "" {
				p.nsub++
				qual := fmt.Sprintf("%s%d", subqueryQual, p.nsub)
				var r *rel
				if r, err = p.planSubqueryJoin(from, sq, false, qual); err == nil {
					from = r
					var m parser.Expr = &parser.Ident{Pos: sq.Pos, Parts: []string{qual, "$m"}}
					if sq.Not {
						m = &parser.Unary{Pos: sq.Pos, Op: "NOT", X: m}
					}
					repl[sq] = m
				}
				return false
			}
			p.nsub++
			qual := fmt.Sprintf("%s%d", subqueryQual, p.nsub)
			var r *rel
			var val parser.Expr
			r, val, err = p.planCorrelatedScalar(from, sq, qual)
			if err == nil && r == nil {
				var col string
				r, col, err = p.planScalarSubquery(from, sq, qual)
				val = &parser.Ident{Pos: sq.Pos, Parts: []string{qual, col}}
			}
			if err == nil {
				from = r
			}
			repl[sq] = val
			return false
		})
		return err
	}
	if err := scalar(s.Where); err != nil {
		return nil, nil, err
	}
	items := make([]parser.SelectItem, len(s.Items))
	for i, it := range s.Items {
		if err := scalar(it.Expr); err != nil {
			return nil, nil, err
		}
		items[i] = it
		if it.Expr != nil {
			items[i].Expr = rewriteSubqueries(it.Expr, repl)
			if _, ok := it.Expr.(*parser.Subquery); ok && it.Alias == "" {
				// named as the subquery, not as the column standing for it
				items[i].Alias = derivedName(it.Expr, i)
			}
		}
	}
	s.Items = items
	if s.Where != nil {
		s.Where = rewriteSubqueries(s.Where, repl)
	}
	return s, from, nil
}

// semiJoinable recognizes x [NOT] IN (SELECT ...), [NOT] EXISTS (...).
func semiJoinable(c parser.Expr) (*parser.Subquery, bool, bool) {
	not := false
	for {
		u, ok := c.(*parser.Unary)
		if !ok || !strings.EqualFold(u.Op, "NOT") {
			break
		}
		not, c = !not, u.X
	}
	sq, ok := c.(*parser.Subquery)
	if !ok || (sq.Op != "IN" && sq.Op != "EXISTS") {
		return nil, false, false
	}
	return sq, not != sq.Not, true
}

func andAll(cs []parser.Expr) parser.Expr {
	if len(cs) == 0 {
		return nil
	}
	e := cs[0]
	for _, c := range cs[1:] {
		e = &parser.Binary{Pos: c.ExprPos(), Op: "AND", L: e, R: c}
	}
	return e
}

// simpleSelect reports whether q is a SELECT whose FROM and WHERE can be
// planned apart from its select list: the form a correlated subquery
// takes.
func simpleSelect(q parser.Query, funcs map[string]expr.Function) (*parser.Select, bool) {
	sel, ok := q.(*parser.Select)
	if !ok || sel.From == nil || sel.Distinct || len(sel.GroupBy) > 0 || sel.Having != nil || len(sel.OrderBy) > 0 || sel.Limit != nil {
		return nil, false
	}
	for _, it := range sel.Items {
		if it.Expr != nil && (hasAggregate(it.Expr, funcs) || hasOver(it.Expr)) {
			return nil, false
		}
	}
	return sel, true
}

// planSemiJoin plans left's rows that have (anti: have no) match in the
// subquery.
func (p *planner) planSemiJoin(left *rel, sq *parser.Subquery, anti bool) (*rel, error) {
	return p.planSubqueryJoin(left, sq, anti, "")
}

// planSubqueryJoin plans a semi or anti join, or, with markQual, a mark
// join: every left row with a BOOLEAN column (markQual.$m) saying whether
// it has a match.
func (p *planner) planSubqueryJoin(left *rel, sq *parser.Subquery, anti bool, markQual string) (*rel, error) {
	funcs := p.s.cat.functions()
	var inner *rel
	var conds []parser.Expr
	var err error
	p.nsub++
	qual := fmt.Sprintf("%s%d", subqueryQual, p.nsub)
	if sel, ok := simpleSelect(sq.Query, funcs); ok {
		// FROM and the local part of WHERE inside; the conditions that
		// read the outer row (correlated) join
		if inner, err = p.planFrom(sel.From); err != nil {
			return nil, err
		}
		var local []parser.Expr
		n := corrNames{inner: &expr.Compiler{Funcs: funcs, Scope: inner.sc}, outer: &expr.Compiler{Funcs: funcs, Scope: left.sc}}
		for _, c := range splitAnd(sel.Where) {
			if n.reads(c)&1 == 0 {
				local = append(local, c)
				continue
			}
			if _, _, err := p.corrCompile(left, inner, sq, c); err != nil {
				return nil, err
			}
			conds = append(conds, c)
		}
		if inner, err = p.planLocal(inner, local, sel.Pos); err != nil {
			return nil, err
		}
		if sq.Op == "IN" {
			if len(sel.Items) != 1 || sel.Items[0].Star {
				return nil, parser.Errorf(sq.Pos, "the subquery of IN must select one column")
			}
			conds = append(conds, inCond(sq, sel.Items[0].Expr, anti))
		}
	} else {
		if r, err := p.planGroupedSubqueryJoin(left, sq, anti, markQual, qual); r != nil || err != nil {
			return r, err
		}
		if inner, err = p.planQuery(sq.Query); err != nil {
			return nil, fmt.Errorf("%w (a subquery with set operations cannot read the outer query's columns, as in Flink)", err)
		}
		inner = requalify(inner, qual)
		if sq.Op == "IN" {
			if len(inner.sc.Cols) != 1 {
				return nil, parser.Errorf(sq.Pos, "the subquery of IN must select one column, not %d", len(inner.sc.Cols))
			}
			conds = append(conds, inCond(sq, &parser.Ident{Pos: sq.Pos, Parts: []string{qual, inner.sc.Cols[0].Name}}, anti))
		}
	}
	return p.semiJoinRel(left, inner, conds, anti, sq, markQual)
}

// corrCompile compiles a condition of a subquery over the joined row
// (left's columns, then inner's) with SQL's scoping: a name resolves in the
// subquery first, then in the outer query; sq.X (IN's operand) is the
// outer query's. sides reports what it read: 1 the outer row, 2 the
// subquery's.
func (p *planner) corrCompile(left, inner *rel, sq *parser.Subquery, e parser.Expr) (expr.Expr, int, error) {
	funcs := p.s.cat.functions()
	nl := len(left.sc.Cols)
	lc := &expr.Compiler{Funcs: funcs, Scope: left.sc}
	ic := &expr.Compiler{Funcs: funcs, Scope: inner.sc}
	sides := 0
	c := &expr.Compiler{Funcs: funcs, Scope: &expr.Scope{Cols: append(append([]expr.Column(nil), left.sc.Cols...), inner.sc.Cols...)}, What: "a subquery's condition"}
	c.Subst = func(x parser.Expr) (expr.Expr, bool, error) {
		if sq.X != nil && x == sq.X {
			ce, err := lc.Compile(sq.X)
			sides |= 1
			return ce, true, err
		}
		id, ok := x.(*parser.Ident)
		if !ok {
			return expr.Expr{}, false, nil
		}
		if idx, rest, err := ic.Resolve(id); err == nil && len(rest) == 0 {
			sides |= 2
			return expr.ColRef(nl+idx, inner.sc.Cols[idx].Type), true, nil
		}
		if idx, rest, err := lc.Resolve(id); err == nil && len(rest) == 0 {
			sides |= 1
			return expr.ColRef(idx, left.sc.Cols[idx].Type), true, nil
		}
		return expr.Expr{}, false, nil
	}
	ce, err := c.Compile(e)
	return ce, sides, err
}

// inCond is x = e, or for NOT IN over nullable values x = e OR x IS NULL
// OR e IS NULL: the anti join's match that makes NOT IN never true when
// x or a value of the subquery is NULL.
func inCond(sq *parser.Subquery, e parser.Expr, anti bool) parser.Expr {
	eq := &parser.Binary{Pos: sq.Pos, Op: "=", L: sq.X, R: e}
	if !anti {
		return eq
	}
	var c parser.Expr = &parser.Binary{Pos: sq.Pos, Op: "OR", L: eq, R: &parser.Is{Pos: sq.Pos, X: sq.X, What: "NULL"}}
	return &parser.Binary{Pos: sq.Pos, Op: "OR", L: c, R: &parser.Is{Pos: sq.Pos, X: e, What: "NULL"}}
}

func (p *planner) semiJoinRel(left, inner *rel, conds []parser.Expr, anti bool, sq *parser.Subquery, markQual string) (*rel, error) {
	nl := len(left.sc.Cols)
	var lkeys, rkeys []expr.Expr
	var inKey []int // which of the keys are IN's x = value
	var keyText []string
	var res *expr.Expr
	var resText []string
	for _, c := range conds {
		c = p.dropNullOrs(left, inner, sq, c)
		if b, ok := c.(*parser.Binary); ok && b.Op == "=" {
			lc, ls, errL := p.corrCompile(left, inner, sq, b.L)
			rc, rs, errR := p.corrCompile(left, inner, sq, b.R)
			if errL == nil && errR == nil && (ls == 1 && rs == 2 || ls == 2 && rs == 1) {
				le, re := b.L, b.R
				if ls == 2 {
					lc, le, re = rc, b.R, b.L
				}
				// the inner key reads the subquery's row alone
				var err error
				rc, err = (&expr.Compiler{Funcs: p.s.cat.functions(), Scope: inner.sc}).Compile(re)
				if ct, ok := expr.CommonType([]types.Type{lc.Type, rc.Type}); ok && err == nil {
					lk, err1 := expr.Cast(lc, ct, le)
					rk, err2 := expr.Cast(rc, ct, re)
					if err1 == nil && err2 == nil {
						if sq.Op == "IN" && b.L == sq.X {
							inKey = append(inKey, len(lkeys))
						}
						lkeys, rkeys = append(lkeys, lk), append(rkeys, rk)
						keyText = append(keyText, parser.ExprString(c))
						continue
					}
				}
			}
		}
		ce, _, err := p.corrCompile(left, inner, sq, c)
		if err != nil {
			return nil, err
		}
		if ce.Type.Kind != types.Boolean {
			return nil, expr.ErrAt(c, "a subquery's condition must be BOOLEAN, not %s", ce.Type)
		}
		if res == nil {
			res = &ce
		} else {
			x := expr.Logic("AND", *res, ce)
			res = &x
		}
		resText = append(resText, parser.ExprString(c))
	}
	kind := "LeftSemiJoin"
	if anti {
		kind = "LeftAntiJoin"
	}
	mark := markQual != ""
	nullAware := false
	if mark {
		kind = "LeftMarkJoin"
		if sq.Op == "IN" {
			// x IN (...) is two-valued only when neither side is NULL;
			// else its mark is three-valued, which needs every row of
			// the subquery (a NULL among them) that the outer row's
			// correlation keys meet in one task
			for _, i := range inKey {
				if !lkeys[i].Type.NotNull || !rkeys[i].Type.NotNull {
					nullAware = true
				}
			}
			if nullAware && (res != nil || len(inKey) == 0) {
				return nil, parser.Errorf(sq.Pos, "IN (SELECT ...) over nullable values with other conditions is supported as a condition of WHERE joined by AND, not here (under OR or in SELECT)")
			}
		}
	}
	op := fmt.Sprintf("Join(joinType=[%s], where=[%s])", kind, strings.Join(append(keyText, resText...), " AND "))
	mode := maxMode(left.mode, inner.mode)
	if anti || mark || inner.mode != types.InsertOnly {
		mode = types.All // a later row of the subquery takes rows back
	}
	if mode == types.Upsert {
		mode = types.All
	}
	updater := mergeUpdater(left, inner)
	if mode == types.All && updater == "" {
		updater = op
	}
	// the output has the left side's columns, qualifiers and all
	sc := withoutWindowMarks(&expr.Scope{Cols: append([]expr.Column(nil), left.sc.Cols...)}, 0, nl)
	for i := range sc.Cols {
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
	}
	if mark {
		sc.Cols = append(sc.Cols, expr.Column{Qual: markQual, Name: "$m", Type: types.Type{Kind: types.Boolean, NotNull: !nullAware}})
	}
	r := &rel{op: op, sc: sc, mode: mode, inputs: []*rel{left, inner}, updater: updater, bounded: allBounded(left, inner)}
	ni := len(inner.sc.Cols)
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, rs, err := b.streams(left, inner)
		if err != nil {
			return nil, err
		}
		var resEval expr.EvalFn
		if res != nil {
			resEval = res.Eval
		}
		lk, rk := evals(lkeys), evals(rkeys)
		if nullAware {
			// keyed by the correlation keys (the subquery's rows an
			// outer row meets), IN's values compared in the key, NULLs
			// included
			var ck, crk, ik, irk []expr.EvalFn
			for i := range lk {
				if slices.Contains(inKey, i) {
					ik, irk = append(ik, lk[i]), append(irk, rk[i])
				} else {
					ck, crk = append(ck, lk[i]), append(crk, rk[i])
				}
			}
			ks := sidesKeyed(b, ls, rs, ck, crk, "semi-join-tag")
			return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
				return &semiJoinFn{nl: nl, nr: ni, mark: true, nullAware: true, lk: ik, rk: irk}
			}, b.uid("semi-join")), nil
		}
		ks := sidesKeyed(b, ls, rs, lk, rk, "semi-join-tag")
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &semiJoinFn{nl: nl, nr: ni, residual: resEval, anti: anti, mark: mark}
		}, b.uid("semi-join")), nil
	}
	return r, nil
}

// dropNullOrs turns NOT IN's x = e OR x IS NULL OR e IS NULL back into
// x = e when neither side can be NULL, so that it keys the join.
func (p *planner) dropNullOrs(left, inner *rel, sq *parser.Subquery, c parser.Expr) parser.Expr {
	b, ok := c.(*parser.Binary)
	if !ok || b.Op != "OR" {
		return c
	}
	l, ok := b.L.(*parser.Binary)
	if !ok || l.Op != "OR" {
		return c
	}
	eq, ok := l.L.(*parser.Binary)
	if !ok || eq.Op != "=" {
		return c
	}
	x, _, errX := p.corrCompile(left, inner, sq, eq.L)
	y, _, errY := p.corrCompile(left, inner, sq, eq.R)
	if errX == nil && errY == nil && x.Type.NotNull && y.Type.NotNull {
		return eq
	}
	return c
}

// semiJoinFn keeps both sides' rows per join key, with their multiplicity
// and (left rows) how many right rows they match; a left row is in the
// output while it matches some right row (semi) or none (anti). Output
// kinds are +I and -D.
type semiJoinFn struct {
	nl, nr   int
	residual expr.EvalFn
	anti     bool
	// mark: every left row is in the output, with a BOOLEAN column after
	// its own: whether it has a match (a mark join: IN or EXISTS where a
	// semi join cannot stand, under OR or in SELECT)
	mark bool
	// nullAware: the mark of x IN (...) over nullable values, three-valued
	// (TRUE on an equal value; else NULL if x is NULL or the subquery has
	// a NULL, while it has rows; else FALSE): lk and rk are the two sides'
	// values, all rows in one key, and counts the subquery's rows and
	// NULLs
	nullAware bool
	lk, rk    []expr.EvalFn
	counts    *weir.ValueState[string, types.Row]
	side      [2]*weir.MapState[string, string, types.Row]
}

func (f *semiJoinFn) Open(rc *weir.RuntimeContext[string]) error {
	f.side[0] = weir.NewMapState[string, types.Row](rc, "left")
	f.side[1] = weir.NewMapState[string, types.Row](rc, "right")
	if f.nullAware {
		f.counts = weir.NewValueState[types.Row](rc, "in-counts")
	}
	return nil
}

// hasNull reports whether a side's IN values have a NULL.
func hasNull(fs []expr.EvalFn, vs []types.Value) bool {
	for _, g := range fs {
		if g(vs).Null {
			return true
		}
	}
	return false
}

// markValue is a left row's mark: n matches, the subquery's total rows
// and rows with a NULL value.
func (f *semiJoinFn) markValue(x []types.Value, n, total, nulls int64) types.Value {
	switch {
	case n > 0:
		return types.BoolValue(true)
	case !f.nullAware || total == 0:
		return types.BoolValue(false)
	case nulls > 0 || hasNull(f.lk, x):
		return types.NullValue
	}
	return types.BoolValue(false)
}

func (f *semiJoinFn) matches(l, r []types.Value) bool {
	if f.nullAware {
		for i := range f.lk {
			a, b := f.lk[i](l), f.rk[i](r)
			if a.Null || b.Null || !a.Equal(b) {
				return false
			}
		}
		return true
	}
	if f.residual == nil {
		return true
	}
	v := f.residual(joinedValues(f.nl, f.nr, l, r))
	return !v.Null && v.Bool()
}

// visible: whether a left row with n matches is in the output.
func (f *semiJoinFn) visible(n int64) bool { return (n > 0) != f.anti }

func (f *semiJoinFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	s, kind := 0, in.Kind
	if kind&rightTag != 0 {
		s, kind = 1, kind&^rightTag
	}
	width := f.nl
	if s == 1 {
		width = f.nr
	}
	x := in.Values[:width]
	xkey := types.Key(x)
	mine := f.side[s]
	acc := !kind.IsRetraction()
	stored, have := mine.Get(xkey)
	if !acc && !have {
		return nil // retracting a row never seen
	}
	sign := int64(1)
	if !acc {
		sign = -1
	}
	var total, nulls int64
	if f.nullAware {
		if c, ok := f.counts.Value(); ok {
			total, nulls = c.Values[0].I, c.Values[1].I
		}
	}
	if s == 0 {
		var n int64
		if have {
			n = stored.Values[width+1].I
		} else {
			for _, y := range f.side[1].All() {
				if f.matches(x, y.Values[:f.nr]) {
					n += y.Values[f.nr].I
				}
			}
		}
		k := types.Insert
		if !acc {
			k = types.Delete
		}
		if f.mark || f.visible(n) {
			f.out(ctx, k, x, f.markValue(x, n, total, nulls), 1)
		}
		f.put(mine, xkey, x, stored, have, sign, n)
		return nil
	}
	// a right row: the left rows it matches may appear or disappear
	if f.nullAware {
		nt, nn := total+sign, nulls
		if hasNull(f.rk, x) {
			nn += sign
		}
		type change struct {
			key string
			row types.Row
		}
		var changed []change
		for k, l := range f.side[0].All() {
			lv := l.Values
			cnt, n := lv[f.nl].I, lv[f.nl+1].I
			nv := n
			if f.matches(lv[:f.nl], x) {
				nv += sign
				row := append([]types.Value(nil), lv...)
				row[f.nl+1].I = nv
				changed = append(changed, change{k, types.Row{Values: row}})
			}
			before, after := f.markValue(lv[:f.nl], n, total, nulls), f.markValue(lv[:f.nl], nv, nt, nn)
			if before.Null != after.Null || before.I != after.I {
				f.out(ctx, types.Delete, lv[:f.nl], before, cnt)
				f.out(ctx, types.Insert, lv[:f.nl], after, cnt)
			}
		}
		for _, c := range changed {
			f.side[0].Put(c.key, c.row)
		}
		f.counts.Update(types.Row{Values: []types.Value{types.IntValue(nt), types.IntValue(nn)}})
		f.put(mine, xkey, x, stored, have, sign, 0)
		return nil
	}
	for k, l := range f.side[0].All() {
		lv := l.Values
		if !f.matches(lv[:f.nl], x) {
			continue
		}
		cnt, n := lv[f.nl].I, lv[f.nl+1].I
		was := f.visible(n)
		nv := append([]types.Value(nil), lv...)
		nv[f.nl+1].I += sign
		f.side[0].Put(k, types.Row{Values: nv})
		if f.mark {
			if (n > 0) != (nv[f.nl+1].I > 0) {
				f.out(ctx, types.Delete, lv[:f.nl], f.markValue(lv[:f.nl], n, 0, 0), cnt)
				f.out(ctx, types.Insert, lv[:f.nl], f.markValue(lv[:f.nl], nv[f.nl+1].I, 0, 0), cnt)
			}
			continue
		}
		if now := f.visible(nv[f.nl+1].I); now != was {
			kd := types.Insert
			if !now {
				kd = types.Delete
			}
			f.out(ctx, kd, lv[:f.nl], types.Value{}, cnt)
		}
	}
	f.put(mine, xkey, x, stored, have, sign, 0)
	return nil
}

// out emits n copies of the left row vs, each its own slice (the
// operator downstream may keep it), with the mark m after it in a mark
// join.
func (f *semiJoinFn) out(ctx *weir.KeyedContext[string, types.Row], k types.RowKind, vs []types.Value, m types.Value, n int64) {
	for range n {
		row := make([]types.Value, len(vs), len(vs)+1)
		copy(row, vs)
		if f.mark {
			row = append(row, m)
		}
		ctx.Emit(types.Row{Kind: k, Values: row})
	}
}

// put changes a stored row's multiplicity by sign (a new row starts with
// n matches), removing it at 0.
func (f *semiJoinFn) put(m *weir.MapState[string, string, types.Row], key string, x []types.Value, stored types.Row, have bool, sign, n int64) {
	if !have {
		if sign < 0 {
			return
		}
		vs := make([]types.Value, len(x)+2)
		copy(vs, x)
		vs[len(x)], vs[len(x)+1] = types.IntValue(1), types.IntValue(n)
		m.Put(key, types.Row{Values: vs})
		return
	}
	c := stored.Values[len(x)].I + sign
	if c <= 0 {
		m.Remove(key)
		return
	}
	vs := append([]types.Value(nil), stored.Values...)
	vs[len(x)].I = c
	m.Put(key, types.Row{Values: vs})
}

// planScalarSubquery joins from with the single row of an uncorrelated
// scalar subquery, as a column qualified by qual; it returns the column's
// name.
func (p *planner) planScalarSubquery(from *rel, sq *parser.Subquery, qual string) (*rel, string, error) {
	inner, err := p.planQuery(sq.Query)
	if err != nil {
		return nil, "", fmt.Errorf("%w (a scalar subquery that reads the outer query's columns is a SELECT of one column with a FROM, without set operations)", err)
	}
	if len(inner.sc.Cols) != 1 {
		return nil, "", parser.Errorf(sq.Pos, "a scalar subquery must select one column, not %d", len(inner.sc.Cols))
	}
	inner = requalify(inner, qual)
	return scalarJoinRel(from, inner, sq, nil, nil, true, "true"), inner.sc.Cols[0].Name, nil
}

// scalarJoinRel left-joins from's rows with a scalar subquery's rows on
// the keys (none: every row with the single row); single makes more than
// one row of the subquery per key fail the job.
func scalarJoinRel(from, inner *rel, sq *parser.Subquery, lkeys, rkeys []expr.Expr, single bool, where string) *rel {
	nl, nr := len(from.sc.Cols), len(inner.sc.Cols)
	sc := &expr.Scope{Cols: append(append([]expr.Column(nil), from.sc.Cols...), inner.sc.Cols...)}
	for i := range sc.Cols {
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
		if i >= nl {
			sc.Cols[i].Type = sc.Cols[i].Type.Nullable()
		}
	}
	sc = withoutWindowMarks(sc, 0, len(sc.Cols))
	op := fmt.Sprintf("Join(joinType=[LeftOuterJoin], where=[%s], scalar=[%s])", where, parser.QueryString(sq.Query))
	updater := mergeUpdater(from, inner)
	if updater == "" {
		updater = op
	}
	r := &rel{op: op, sc: sc, mode: types.All, inputs: []*rel{from, inner}, updater: updater, bounded: allBounded(from, inner)}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, rs, err := b.streams(from, inner)
		if err != nil {
			return nil, err
		}
		lk, rk := evals(lkeys), evals(rkeys)
		if single {
			// one row per key at most: more fails the job
			rs = weir.ProcessWith(weir.KeyBy(rs, func(row types.Row) string { return keyOf(rk, row.Values) }), func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
				return &singleRowFn{}
			}, b.uid("scalar-subquery"), weir.Name("ScalarSubquery"))
		}
		ks := sidesKeyed(b, ls, rs, lk, rk, "scalar-join-tag")
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &joinFn{nl: nl, nr: nr, outer: [2]bool{true, false}}
		}, b.uid("scalar-join")), nil
	}
	return r
}

// singleRowFn passes a scalar subquery's rows on and fails the job when
// more than one is live at once, as Flink does.
type singleRowFn struct {
	live *weir.ValueState[string, int64]
}

func (f *singleRowFn) Open(rc *weir.RuntimeContext[string]) error {
	f.live = weir.NewValueState[int64](rc, "live")
	return nil
}

func (f *singleRowFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	n, _ := f.live.Value()
	if in.Kind.IsRetraction() {
		n--
	} else {
		n++
	}
	if n > 1 {
		return fmt.Errorf("a scalar subquery returned more than one row")
	}
	f.live.Update(n)
	ctx.Emit(in)
	return nil
}

// rewriteSubqueries returns e with the subqueries of repl replaced (a
// copy of the nodes on the way; e itself is not changed).
func rewriteSubqueries(e parser.Expr, repl map[*parser.Subquery]parser.Expr) parser.Expr {
	if e == nil || len(repl) == 0 {
		return e
	}
	return mapExpr(e, func(x parser.Expr) (parser.Expr, bool) {
		sq, ok := x.(*parser.Subquery)
		if !ok {
			return nil, false
		}
		if r, ok := repl[sq]; ok {
			return r, true
		}
		return sq, true
	})
}

// mapExpr returns e with each node for which f says so replaced by what f
// returns (and not descended into); the nodes on the way are copied, e is
// not changed. f is asked before a node's children.
func mapExpr(e parser.Expr, f func(parser.Expr) (parser.Expr, bool)) parser.Expr {
	if e == nil {
		return e
	}
	if x, ok := f(e); ok {
		return x
	}
	r := func(x parser.Expr) parser.Expr { return mapExpr(x, f) }
	switch e := e.(type) {
	case *parser.Unary:
		c := *e
		c.X = r(e.X)
		return &c
	case *parser.Binary:
		c := *e
		c.L, c.R = r(e.L), r(e.R)
		return &c
	case *parser.Call:
		c := *e
		c.Args = make([]parser.Expr, len(e.Args))
		for i, a := range e.Args {
			c.Args[i] = r(a)
		}
		c.Filter = r(e.Filter)
		return &c
	case *parser.Case:
		c := *e
		c.Operand, c.Else = r(e.Operand), r(e.Else)
		c.Whens = make([]parser.When, len(e.Whens))
		for i, w := range e.Whens {
			c.Whens[i] = parser.When{Cond: r(w.Cond), Then: r(w.Then)}
		}
		return &c
	case *parser.Cast:
		c := *e
		c.X = r(e.X)
		return &c
	case *parser.Between:
		c := *e
		c.X, c.Lo, c.Hi = r(e.X), r(e.Lo), r(e.Hi)
		return &c
	case *parser.In:
		c := *e
		c.X = r(e.X)
		c.List = make([]parser.Expr, len(e.List))
		for i, x := range e.List {
			c.List[i] = r(x)
		}
		return &c
	case *parser.Like:
		c := *e
		c.X, c.Pattern = r(e.X), r(e.Pattern)
		return &c
	case *parser.Is:
		c := *e
		c.X, c.From = r(e.X), r(e.From)
		return &c
	case *parser.Index:
		c := *e
		c.X, c.Index = r(e.X), r(e.Index)
		return &c
	case *parser.Field:
		c := *e
		c.X = r(e.X)
		return &c
	case *parser.Extract:
		c := *e
		c.X = r(e.X)
		return &c
	case *parser.Subquery:
		if e.X == nil {
			return e
		}
		c := *e
		c.X = r(e.X)
		return &c
	}
	return e
}
