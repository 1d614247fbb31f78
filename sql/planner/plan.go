package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// rel is a node of a plan: a relational operator with its output columns,
// its changelog mode and how to build it on a job.
type rel struct {
	// op names the operator as EXPLAIN prints it and as errors name it
	// ("GroupAggregate(groupBy=[a], select=[a, COUNT(*)])").
	op     string
	sc     *expr.Scope
	mode   types.ChangelogMode
	inputs []*rel
	build  func(b *builder) (*weir.Stream[types.Row], error)
	// updater names the operator that made this result updating, for the
	// error of an insert-only sink.
	updater string
	// bounded is set when every source below ends.
	bounded bool
	// traits are what the rule that planned r attached for the rules
	// planned over it to match on.
	traits
	// same is set on a copy of a rel that differs only in its column names
	// (an alias requalifying a view's columns): the copy is the same
	// stream, built once (reuse.go).
	same *rel
}

// traits are the optional facts about a rel's output that a later rule
// matches on; the zero value (most rels) promises nothing. Each comes
// from one rule (a copy of a rel keeps it): win from the window table
// functions (window.go), rank from ROW_NUMBER (over.go), pk and push from
// a table's scan (scan.go), calc from a Calc (calc.go), winAgg from an
// event-time window aggregation, attachedAgg from a window-attached
// aggregation (window_attached.go).
type traits struct {
	// win is set on a window table function's output, so that an
	// aggregation or join over it can use the window operators.
	win *windowSpec
	// rank is set on a ROW_NUMBER() select list that waits for the
	// enclosing query's filter on the row number.
	rank *rankSpec
	// pk holds the columns of a table's primary key (a source only), for
	// temporal joins.
	pk []int
	// calc is set on a Calc: a Calc planned over it fuses with it into one
	// operator over its input.
	calc *calcSpec
	// push is set on the raw scan of a projecting source: its rows hold
	// only what the Calcs over it read (expr/leaf.go).
	push *expr.PushLayout
	// winAgg is set on an event-time window aggregation (windowAggRel):
	// its rows are emitted when the watermark passes their window's end,
	// before that watermark, so no operator after it sees one late.
	winAgg bool
	// attachedAgg is set on a window aggregation over window attributes
	// (window_attached.go).
	attachedAgg *attachedAggInfo
}

// canonical is the rel whose stream r is.
func (r *rel) canonical() *rel {
	for r.same != nil {
		r = r.same
	}
	return r
}

// builder turns rels into streams on one job. Each rel is built once,
// so a table read by two branches of a query is read once... per
// reference of the table in the text (as Flink without source reuse).
type builder struct {
	job      *weir.Job
	settings connector.Settings
	built    map[*rel]*weir.Stream[types.Row]
	n        int
	// reads counts the consumers of each rel's stream; lend holds the
	// flags of operators that may lend their rows (lend.go).
	reads map[*rel]int
	lend  map[*rel]*bool
	// borrowed holds the rels whose stream feeds an operator chained to
	// it that keeps nothing of a row once it returns (a counting window's
	// keys-only edge, which reads each row's key; the local phase of a
	// two-phase aggregation, which folds it): they may lend their rows as
	// to a lending sink (lend.go).
	borrowed map[*rel]bool
	// through maps a rel whose stream is its input's, row for row (a Calc
	// that only filters, or projects nothing), to that input: whoever may
	// be lent the first's rows may be lent the second's (lend.go)
	through map[*rel]*rel
	// ub holds the flags of operators that may leave out -U rows when
	// nothing after them needs them (ub.go).
	ub map[*rel]*bool
	// copying counts, per rel, its consumers that copy what they keep of
	// a row (lend.go's slabs); slab holds the flags of Calcs that may
	// then make their rows in slabs.
	copying map[*rel]int
	slab    map[*rel]*bool
	noSlabs bool // Config.DisableSlabRows
	// pools holds the pools of Calcs' rows, recycling counts the
	// consumers that hand rows back (recycle.go)
	pools     map[*rel]*rowPool
	recycling map[*rel]int
	noRecycle bool // Config.DisableRowRecycling
	noTopOne  bool // Config.DisableTopOneState
	// pebble: the job keeps keyed state in Pebble, so the window
	// aggregations that would keep theirs on the heap run on keyed
	// process functions (window_state.go)
	pebble bool
	// noSlices: Config.DisableSlicedWindows
	noSlices bool
	// ttl: 'table.exec.state.ttl' (Session.stateTTL), 0 for none
	ttl time.Duration
}

// stateOpts are the state options of an operator's keyed state under
// 'table.exec.state.ttl': weir.TTL, or none.
func (b *builder) stateOpts() []weir.StateOption {
	if b.ttl <= 0 {
		return nil
	}
	return []weir.StateOption{weir.TTL(b.ttl)}
}

func (b *builder) stream(r *rel) (*weir.Stream[types.Row], error) {
	r = r.canonical()
	if b.reads == nil {
		b.reads = map[*rel]int{}
	}
	b.reads[r]++
	if s, ok := b.built[r]; ok {
		return s, nil
	}
	s, err := r.build(b)
	if err != nil {
		return nil, err
	}
	b.built[r] = s
	return s, nil
}

// uid gives operators stable names in plan order, so that a job restored
// from a checkpoint of the same statements finds its state.
func (b *builder) uid(kind string) weir.OperatorOption {
	b.n++
	return weir.UID(fmt.Sprintf("sql-%d-%s", b.n, kind))
}

func maxMode(a, b types.ChangelogMode) types.ChangelogMode { return max(a, b) }

func mergeUpdater(rs ...*rel) string {
	for _, r := range rs {
		if r.updater != "" {
			return r.updater
		}
	}
	return ""
}

func allBounded(rs ...*rel) bool {
	for _, r := range rs {
		if !r.bounded {
			return false
		}
	}
	return true
}

// planner plans queries against a session's catalog.
type planner struct {
	s *Session
	// cfg switches the planner's rules (the session's Config).
	cfg Config
	// viewDepth guards against views that refer to themselves.
	viewDepth int
	// nsub numbers the subqueries planned (their columns' qualifiers).
	nsub int
	// ctes are the WITH queries in scope, by lower-case name.
	ctes map[string]*parser.CreateView
	// views are the views planned so far, by normalized name: a view
	// referenced twice is planned once and shared (reuse.go).
	views map[string]*rel
	// reused are the rels planned so far that reuseRel shares, by digest.
	reused map[string]*rel
	// joinWhere is the WHERE over each join planned so far (join_maxprune.go).
	joinWhere map[*parser.Join]parser.Expr
	// joinNeed is what the SELECT over each join reads of its columns
	// (join_prune.go).
	joinNeed map[*parser.Join]*colNeed
}

func (p *planner) planQuery(q parser.Query) (*rel, error) {
	switch q := q.(type) {
	case *parser.Select:
		return p.planSelect(q)
	case *parser.SetOp:
		return p.planSetOp(q)
	case *parser.Values:
		return p.planValues(q)
	case *parser.With:
		saved := p.ctes
		p.ctes = map[string]*parser.CreateView{}
		for k, v := range saved {
			p.ctes[k] = v
		}
		for i, n := range q.Names {
			p.ctes[strings.ToLower(n)] = &parser.CreateView{Pos: q.Pos, Name: n, Columns: q.Columns[i], Query: q.Queries[i]}
		}
		r, err := p.planQuery(q.Body)
		p.ctes = saved
		return r, err
	}
	return nil, fmt.Errorf("unsupported query %T", q)
}

// castRel converts r's columns to the types of sc (names from sc); it
// returns r itself when nothing changes.
func castRel(r *rel, sc *expr.Scope) (*rel, error) {
	same := true
	fns := make([]func(types.Value) types.Value, len(sc.Cols))
	for i, c := range sc.Cols {
		from := r.sc.Cols[i].Type
		if from.Kind == c.Type.Kind && from.Precision == c.Type.Precision && from.Scale == c.Type.Scale {
			continue
		}
		fn, err := expr.CastFn(from, c.Type)
		if err != nil {
			return nil, fmt.Errorf("column '%s': %v", c.Name, err)
		}
		fns[i] = fn
		same = false
	}
	if same {
		return &rel{op: r.op, sc: sc, mode: r.mode, inputs: r.inputs, build: r.build, updater: r.updater, bounded: r.bounded, traits: traits{win: r.win}, same: r.canonical()}, nil
	}
	return &rel{op: "Calc(cast)", sc: sc, mode: r.mode, inputs: []*rel{r}, updater: r.updater, bounded: r.bounded,
		build: func(b *builder) (*weir.Stream[types.Row], error) {
			in, err := b.stream(r)
			if err != nil {
				return nil, err
			}
			return weir.Map(in, func(row types.Row) types.Row {
				vs := make([]types.Value, len(fns))
				for i, fn := range fns {
					if fn == nil {
						vs[i] = row.Values[i]
					} else {
						vs[i] = fn(row.Values[i])
					}
				}
				return types.Row{Kind: row.Kind, Values: vs}
			}, b.uid("cast")), nil
		}}, nil
}

// requalify returns r with its columns qualified by alias (a FROM item's
// name).
func requalify(r *rel, alias string) *rel {
	sc := &expr.Scope{Cols: make([]expr.Column, len(r.sc.Cols))}
	for i, c := range r.sc.Cols {
		c.Qual = alias
		sc.Cols[i] = c
	}
	out := *r
	out.sc = sc
	out.same = r.canonical()
	return &out
}

// renameColumns gives r's columns the names of a view's or an alias's
// column list, one name per column (the caller checks the count).
func renameColumns(r *rel, names []string) *rel {
	sc := &expr.Scope{Cols: append([]expr.Column(nil), r.sc.Cols...)}
	for i := range sc.Cols {
		sc.Cols[i].Name = names[i]
	}
	out := *r
	out.sc = sc
	out.same = r.canonical()
	return &out
}

func (p *planner) planFrom(te parser.TableExpr) (*rel, error) {
	switch t := te.(type) {
	case *parser.TableRef:
		if t.AsOf != nil {
			return nil, parser.Errorf(t.Pos, "FOR SYSTEM_TIME AS OF (temporal joins) is not supported yet")
		}
		r, err := p.planTableName(t.Name, t.Pos)
		if err != nil {
			return nil, err
		}
		alias := t.Alias
		if alias == "" {
			alias = lastPart(t.Name)
		}
		return requalify(r, alias), nil
	case *parser.SubqueryTable:
		r, err := p.planQuery(t.Query)
		if err != nil {
			return nil, err
		}
		if len(t.Columns) > 0 {
			if len(t.Columns) != len(r.sc.Cols) {
				return nil, parser.Errorf(t.Pos, "'%s' names %d columns but its query has %d", t.Alias, len(t.Columns), len(r.sc.Cols))
			}
			r = renameColumns(r, t.Columns)
		}
		return requalify(r, t.Alias), nil
	case *parser.Join:
		return p.planJoin(t)
	case *parser.TableFunc:
		if t.Lateral {
			return nil, parser.Errorf(t.Pos, "%s must follow a table it is joined to (FROM t, LATERAL TABLE(f(t.x)) or FROM t CROSS JOIN UNNEST(t.a))", parser.TableString(t))
		}
		return p.planWindowTVF(t)
	case *parser.MatchRecognize:
		r, err := p.planMatchRecognize(t)
		if err != nil {
			return nil, err
		}
		if t.Alias != "" {
			r = requalify(r, t.Alias)
		}
		return r, nil
	}
	return nil, fmt.Errorf("unsupported FROM item %T", te)
}

func (p *planner) planTableName(name string, pos parser.Pos) (*rel, error) {
	td, v, n := p.s.cat.lookup(name)
	if cte := p.ctes[strings.ToLower(name)]; cte != nil {
		v = &viewDef{ddl: cte, home: p.s.cat.res}
	}
	if v != nil && len(p.ctes) == 0 {
		// a view's plan does not depend on where it is referenced (with no
		// WITH queries in scope to shadow the names it reads)
		if r, ok := p.views[n]; ok {
			return r, nil
		}
	}
	if v != nil {
		if p.viewDepth > 32 {
			return nil, parser.Errorf(pos, "view '%s' refers to itself", name)
		}
		p.viewDepth++
		restore := p.s.cat.within(v.home)
		r, err := p.planQuery(v.ddl.Query)
		restore()
		p.viewDepth--
		if err != nil {
			return nil, err
		}
		if len(v.ddl.Columns) > 0 {
			if len(v.ddl.Columns) != len(r.sc.Cols) {
				return nil, parser.Errorf(v.ddl.Pos, "view '%s' names %d columns but its query has %d", name, len(v.ddl.Columns), len(r.sc.Cols))
			}
			r = renameColumns(r, v.ddl.Columns)
		}
		if len(p.ctes) == 0 {
			if p.views == nil {
				p.views = map[string]*rel{}
			}
			p.views[n] = r
		}
		return r, nil
	}
	if td == nil {
		return nil, parser.Errorf(pos, "table or view '%s' not found (known: %s)", name, strings.Join(p.s.cat.names(name), ", "))
	}
	// a table read twice by a query is read once (Flink's source reuse)
	if r, ok := p.views["\x00table "+n]; ok {
		return r, nil
	}
	r, err := p.sourceRel(td, pos)
	if err == nil {
		if p.views == nil {
			p.views = map[string]*rel{}
		}
		p.views["\x00table "+n] = r
	}
	return r, err
}

func hasAggregate(e parser.Expr, funcs map[string]expr.Function) bool {
	found := false
	walkExpr(e, func(x parser.Expr) bool {
		if c, ok := x.(*parser.Call); ok && c.Over == nil && expr.IsAggregate(c.Name, funcs) {
			found = true
			return false
		}
		return !found
	})
	return found
}

func hasOver(e parser.Expr) bool {
	found := false
	walkExpr(e, func(x parser.Expr) bool {
		if c, ok := x.(*parser.Call); ok && c.Over != nil {
			found = true
		}
		return !found
	})
	return found
}

// walkExpr calls fn on e and its sub-expressions, depth first; fn returns
// false to skip a node's children.
func walkExpr(e parser.Expr, fn func(parser.Expr) bool) {
	if e == nil || !fn(e) {
		return
	}
	switch e := e.(type) {
	case *parser.Unary:
		walkExpr(e.X, fn)
	case *parser.Binary:
		walkExpr(e.L, fn)
		walkExpr(e.R, fn)
	case *parser.Call:
		for _, a := range e.Args {
			walkExpr(a, fn)
		}
		walkExpr(e.Filter, fn)
	case *parser.Case:
		walkExpr(e.Operand, fn)
		for _, w := range e.Whens {
			walkExpr(w.Cond, fn)
			walkExpr(w.Then, fn)
		}
		walkExpr(e.Else, fn)
	case *parser.Cast:
		walkExpr(e.X, fn)
	case *parser.Between:
		walkExpr(e.X, fn)
		walkExpr(e.Lo, fn)
		walkExpr(e.Hi, fn)
	case *parser.In:
		walkExpr(e.X, fn)
		for _, x := range e.List {
			walkExpr(x, fn)
		}
	case *parser.Like:
		walkExpr(e.X, fn)
		walkExpr(e.Pattern, fn)
	case *parser.Is:
		walkExpr(e.X, fn)
		walkExpr(e.From, fn)
	case *parser.Index:
		walkExpr(e.X, fn)
		walkExpr(e.Index, fn)
	case *parser.Field:
		walkExpr(e.X, fn)
	case *parser.Extract:
		walkExpr(e.X, fn)
	case *parser.NamedArg:
		walkExpr(e.X, fn)
	case *parser.GroupingSets:
		for _, el := range e.Elems {
			for _, x := range el {
				walkExpr(x, fn)
			}
		}
	}
}

func (p *planner) planSelect(s *parser.Select) (*rel, error) {
	if subqueriesOverAggregation(s, p.s.cat.functions()) {
		rs, err := p.havingSubqueries(s)
		if err != nil {
			return nil, err
		}
		r, err := p.planSelect(rs)
		if err != nil && strings.Contains(err.Error(), havingQual+".") {
			err = fmt.Errorf("%w (a subquery over an aggregation reads its own tables, and of the outer query the grouped columns and the aggregation's results)", err)
		}
		return r, err
	}
	if len(s.OrderBy) > 0 || s.Limit != nil {
		return p.planOrderBy(s)
	}
	s = pushWhereIntoJoins(s, p.s.cat.functions())
	p.noteJoinWhere(s)
	if !p.cfg.DisableJoinPrune {
		p.noteJoinNeed(s)
	}
	var from *rel
	var err error
	if s.From == nil {
		from, err = p.planValues(&parser.Values{Pos: s.Pos, Rows: [][]parser.Expr{{&parser.Literal{Pos: s.Pos, Kind: parser.NumberLit, Text: "0"}}}})
		if err != nil {
			return nil, err
		}
		from.sc = &expr.Scope{}
	} else if from, err = p.planFrom(s.From); err != nil {
		return nil, err
	}
	if s, from, err = p.planSubqueries(s, from); err != nil {
		return nil, err
	}
	if s.Where != nil {
		if hasAggregate(s.Where, p.s.cat.functions()) {
			return nil, parser.Errorf(s.Where.ExprPos(), "aggregate functions are not allowed in WHERE (use HAVING)")
		}
		from, err = p.where(from, s.Where)
		if err != nil {
			return nil, err
		}
	}
	agg := len(s.GroupBy) > 0 || s.Having != nil || s.Distinct
	for _, it := range s.Items {
		if it.Expr != nil && (hasAggregate(it.Expr, p.s.cat.functions()) || hasGroupingCall(it.Expr, p.s.cat.functions())) {
			agg = true
		}
	}
	if agg {
		return p.planAggregate(s, from)
	}
	for _, it := range s.Items {
		if it.Expr != nil && hasOver(it.Expr) {
			return p.planOver(s, from)
		}
	}
	ec, input, filter := fused(from, "SELECT", p.s.cat.functions())
	pr, err := expandSelect(s.Items, ec)
	if err != nil {
		return nil, err
	}
	return calcRel(input, filter, pr, "Calc(select=["+strings.Join(pr.names, ", ")+"])"), nil
}

// where plans a WHERE clause. Over a window table function whose filter
// does not read the window columns, the filter runs before the windows are
// assigned, so the window aggregation still sees the TVF.
func (p *planner) where(from *rel, w parser.Expr) (*rel, error) {
	if from.rank != nil {
		ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: from.sc, What: "WHERE"}
		limit, rest := rankLimit(w, ec, from.rank.rnPos)
		if limit >= 1 {
			spec := *from.rank
			spec.limit = limit
			op := fmt.Sprintf("Rank(%s, rankRange=[1..%d])", spec.text, limit)
			if limit == 1 && len(spec.order) == 1 && spec.kind == "ROW_NUMBER" {
				spec.dedup = spec.order[0].timeAttr
				op = fmt.Sprintf("Deduplicate(keep=[%s], %s)", map[bool]string{true: "LastRow", false: "FirstRow"}[spec.keepLast], spec.text)
			}
			ranked := rankRel(&spec, from.sc, op)
			if len(rest) == 0 {
				return ranked, nil
			}
			var cond parser.Expr = rest[0]
			for _, c := range rest[1:] {
				cond = &parser.Binary{Pos: c.ExprPos(), Op: "AND", L: cond, R: c}
			}
			return p.where(ranked, cond)
		}
	}
	if from.win != nil {
		in := from.win.input
		ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: in.sc, What: "WHERE"}
		if cond, err := ec.Compile(w); err == nil {
			if cond.Type.Kind != types.Boolean {
				return nil, expr.ErrAt(w, "WHERE needs a BOOLEAN condition, not %s", cond.Type)
			}
			filtered := calcRel(in, &cond, nil, "Calc(where=["+parser.ExprString(w)+"])")
			spec := *from.win
			spec.input = filtered
			return p.windowTVFRel(&spec, from.sc), nil
		}
	}
	ec, input, inner := fused(from, "WHERE", p.s.cat.functions())
	cond, err := ec.Compile(w)
	if err != nil {
		return nil, err
	}
	if cond.Type.Kind != types.Boolean && cond.Type.Kind != types.Null {
		return nil, expr.ErrAt(w, "WHERE needs a BOOLEAN condition, not %s", cond.Type)
	}
	desc := "Calc(where=[" + parser.ExprString(w) + "])"
	if from.calc == nil {
		return calcRel(from, &cond, nil, desc), nil
	}
	// one Calc: the lower filter, this one, then the lower projection
	if inner != nil {
		deps := expr.MergeDeps(*inner, cond)
		cond = expr.Logic("AND", *inner, cond)
		cond.Deps = deps
	}
	pr := &projection{names: from.sc.Schema().Names()}
	for i := range from.sc.Cols {
		pr.exprs = append(pr.exprs, ec.Column(i))
	}
	out := calcRel(input, &cond, pr, desc)
	// the columns keep their qualifiers: FROM (...) C WHERE ... GROUP BY
	// C.x reads them (calcRel names the columns only)
	for i := range out.sc.Cols {
		out.sc.Cols[i].Qual = from.sc.Cols[i].Qual
	}
	return out, nil
}
