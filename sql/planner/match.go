package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// MATCH_RECOGNIZE on weir's CEP engine (package cep), as Flink runs it on
// Flink CEP: each partition's rows, in rowtime order, drive the automaton
// of the PATTERN; a variable is a stage with strict contiguity (Next), its
// DEFINE condition an iterative condition and its quantifier the stage's
// (greedy unless reluctant, consecutive). ONE ROW PER MATCH: the partition
// columns and the MEASURES, insert-only.
//
// Expressions of DEFINE and MEASURES compile once into closures over a
// row laid out as [the current row's columns..., one slot per pattern
// navigation]: `X.col` (the last row of X), FIRST/LAST(X.col [, n]),
// aggregates over X's rows and MATCH_ROWTIME(). A slot is computed from
// the partial match (DEFINE) or the match (MEASURES) when the expression
// runs. In DEFINE the current row is the row being tested (it counts as a
// row of the variable being defined); in MEASURES it is the match's last
// row, so a column without a variable reads the last row, as in Flink.

// mrEnv is what a navigation reads: the rows of the match (so far), in
// order, and the variable of each.
type mrEnv struct {
	all     []types.Row
	labels  []string
	subsets map[string]map[string]bool // SUBSET name -> its variables
	// final is the whole match's rows (ALL ROWS PER MATCH: rows is the
	// running part, up to the current row); nil: rows
	final *mrEnv
	// number is the match's MATCH_NUMBER() (MEASURES)
	number int64
}

// rows returns the rows of variable (or subset) v in the match's order;
// v "" is every row of the match.
func (env *mrEnv) rows(v string) []types.Row {
	if v == "" {
		return env.all
	}
	members := env.subsets[v]
	var out []types.Row
	for i, l := range env.labels {
		if l == v || members[l] {
			out = append(out, env.all[i])
		}
	}
	return out
}

type mrSlot func(env *mrEnv) types.Value

// mrCompiler compiles a DEFINE condition or a measure.
type mrCompiler struct {
	in      *expr.Scope
	vars    map[string]string // upper-case name -> name as in PATTERN
	define  string            // the variable being defined ("" for MEASURES)
	measure bool
	rowtime int // the input's rowtime column
	slots   []mrSlot
	funcs   map[string]expr.Function
	// numbered is set when a measure calls MATCH_NUMBER()
	numbered *bool
}

func (mc *mrCompiler) varOf(name string) (string, bool) {
	v, ok := mc.vars[strings.ToUpper(name)]
	return v, ok
}

// stripped compiles e against the input row with the pattern variable
// qualifiers removed, and reports the variables it names ("" for a
// column without one).
func (mc *mrCompiler) stripped(e parser.Expr) (expr.Expr, map[string]bool, error) {
	used := map[string]bool{}
	ec := &expr.Compiler{Funcs: mc.funcs, Scope: mc.in, What: "a pattern navigation"}
	ec.Subst = func(x parser.Expr) (expr.Expr, bool, error) {
		id, ok := x.(*parser.Ident)
		if !ok {
			if c, ok := x.(*parser.Call); ok && isNavigation(c.Name) {
				return expr.Expr{}, false, expr.ErrAt(x, "%s cannot be nested in a pattern navigation or aggregate", c.Name)
			}
			return expr.Expr{}, false, nil
		}
		if len(id.Parts) >= 2 {
			if v, ok := mc.varOf(id.Parts[0]); ok {
				used[v] = true
				ce, err := (&expr.Compiler{Funcs: mc.funcs, Scope: mc.in}).Compile(&parser.Ident{Pos: id.Pos, Parts: id.Parts[1:]})
				return ce, true, err
			}
		}
		used[""] = true
		return expr.Expr{}, false, nil
	}
	ce, err := ec.Compile(e)
	return ce, used, err
}

func isNavigation(name string) bool {
	switch name {
	case "FIRST", "LAST", "PREV", "NEXT", "MATCH_ROWTIME", "MATCH_PROCTIME", "CLASSIFIER", "MATCH_NUMBER", "RUNNING", "FINAL":
		return true
	}
	return false
}

// oneVar returns the single pattern variable an argument names.
func oneVar(used map[string]bool, at parser.Expr) (string, error) {
	if len(used) > 1 {
		return "", expr.ErrAt(at, "an argument of a pattern navigation or aggregate must refer to one pattern variable")
	}
	for v := range used {
		return v, nil
	}
	return "", nil
}

func (mc *mrCompiler) slot(t types.Type, fn mrSlot) expr.Expr {
	i := len(mc.in.Cols) + len(mc.slots)
	mc.slots = append(mc.slots, fn)
	return expr.Expr{Type: t, Col: -1, Eval: func(r []types.Value) types.Value { return r[i] }}
}

func (mc *mrCompiler) subst(e parser.Expr) (expr.Expr, bool, error) {
	switch x := e.(type) {
	case *parser.Ident:
		if len(x.Parts) < 2 {
			return expr.Expr{}, false, nil
		}
		v, ok := mc.varOf(x.Parts[0])
		if !ok {
			return expr.Expr{}, false, nil
		}
		ce, err := (&expr.Compiler{Funcs: mc.funcs, Scope: mc.in}).Compile(&parser.Ident{Pos: x.Pos, Parts: x.Parts[1:]})
		if err != nil {
			return expr.Expr{}, true, err
		}
		if v == mc.define {
			return ce, true, nil // the row being tested
		}
		// X.col is the last row of X
		ev := ce.Eval
		return mc.slot(ce.Type.Nullable(), func(env *mrEnv) types.Value {
			rows := env.rows(v)
			if len(rows) == 0 {
				return types.NullValue
			}
			return ev(rows[len(rows)-1].Values)
		}), true, nil
	case *parser.Call:
		if x.Over != nil {
			return expr.Expr{}, true, expr.ErrAt(x, "OVER is not allowed in MATCH_RECOGNIZE")
		}
		switch x.Name {
		case "FIRST", "LAST":
			ce, v, off, err := mc.navArgs(x, 0)
			if err != nil {
				return expr.Expr{}, true, err
			}
			ev, first := ce.Eval, x.Name == "FIRST"
			return mc.slot(ce.Type.Nullable(), func(env *mrEnv) types.Value {
				rows := env.rows(v)
				i := len(rows) - 1 - off
				if first {
					i = off
				}
				if i < 0 || i >= len(rows) {
					return types.NullValue
				}
				return ev(rows[i].Values)
			}), true, nil
		case "MATCH_ROWTIME":
			if !mc.measure {
				return expr.Expr{}, true, expr.ErrAt(x, "MATCH_ROWTIME() is only allowed in MEASURES")
			}
			t := mc.in.Cols[mc.rowtime].Type
			t.TimeAttr, t.NotNull = types.RowtimeAttr, true
			col := mc.rowtime
			return mc.slot(t, func(env *mrEnv) types.Value {
				rows := env.rows("")
				return rows[len(rows)-1].Values[col]
			}), true, nil
		case "PREV":
			return mc.prev(x, -1)
		case "NEXT":
			if !mc.measure {
				return expr.Expr{}, true, expr.ErrAt(x, "NEXT is only allowed in MEASURES (a DEFINE condition cannot see rows after the one it tests)")
			}
			return mc.prev(x, 1)
		case "CLASSIFIER":
			if len(x.Args) != 0 {
				return expr.Expr{}, true, expr.ErrAt(x, "CLASSIFIER takes no arguments")
			}
			if mc.define != "" {
				return expr.Const(types.StringValue(mc.define), types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}), true, nil
			}
			// the variable of the match's last row
			return mc.slot(types.Type{Kind: types.Varchar, Length: types.MaxLength}, func(env *mrEnv) types.Value {
				if len(env.labels) == 0 {
					return types.NullValue
				}
				return types.StringValue(env.labels[len(env.labels)-1])
			}), true, nil
		case "MATCH_NUMBER":
			if !mc.measure || len(x.Args) != 0 {
				return expr.Expr{}, true, expr.ErrAt(x, "MATCH_NUMBER() takes no arguments and is only allowed in MEASURES")
			}
			*mc.numbered = true
			return mc.slot(types.Type{Kind: types.BigInt, NotNull: true}, func(env *mrEnv) types.Value {
				return types.IntValue(env.number)
			}), true, nil
		case "RUNNING", "FINAL":
			if len(x.Args) != 1 {
				return expr.Expr{}, true, expr.ErrAt(x, "%s goes before a navigation or an aggregate", x.Name)
			}
			first := len(mc.slots)
			ce, err := (&expr.Compiler{Funcs: mc.funcs, Scope: mc.in, Subst: mc.subst, What: "MEASURES"}).Compile(x.Args[0])
			if err != nil {
				return expr.Expr{}, true, err
			}
			if x.Name == "FINAL" {
				if mc.define != "" {
					return expr.Expr{}, true, expr.ErrAt(x, "FINAL is only allowed in MEASURES")
				}
				// its navigations read the whole match
				for i := first; i < len(mc.slots); i++ {
					s := mc.slots[i]
					mc.slots[i] = func(env *mrEnv) types.Value {
						if env.final != nil {
							return s(env.final)
						}
						return s(env)
					}
				}
			}
			return ce, true, nil
		case "MATCH_PROCTIME":
			return expr.Expr{}, true, expr.ErrAt(x, "%s in MATCH_RECOGNIZE is not supported yet (PREV, NEXT, FIRST, LAST, CLASSIFIER, MATCH_NUMBER, RUNNING, FINAL, aggregates and MATCH_ROWTIME are)", x.Name)
		}
		if !expr.IsAggregate(x.Name, mc.funcs) {
			return expr.Expr{}, false, nil
		}
		if x.Distinct {
			return expr.Expr{}, true, expr.ErrAt(x, "DISTINCT aggregates are not supported in MATCH_RECOGNIZE")
		}
		used := map[string]bool{}
		ec := &expr.Compiler{Funcs: mc.funcs, Scope: mc.in, What: "an aggregate of a pattern variable"}
		ec.Subst = func(y parser.Expr) (expr.Expr, bool, error) {
			if y == parser.Expr(x) {
				return expr.Expr{}, false, nil
			}
			ce, u, err := mc.stripped(y)
			for k := range u {
				used[k] = true
			}
			return ce, true, err
		}
		call, err := expr.CompileAgg(x, ec, false)
		if err != nil {
			return expr.Expr{}, true, err
		}
		v, err := oneVar(used, x)
		if err != nil {
			return expr.Expr{}, true, err
		}
		layout := expr.NewAggLayout(0, []*expr.AggCall{call})
		return mc.slot(call.OutT, func(env *mrEnv) types.Value {
			acc := layout.Create(nil)
			for _, r := range env.rows(v) {
				layout.Accumulate(acc, r.Values, 1)
			}
			return layout.Result(acc, call)
		}), true, nil
	}
	return expr.Expr{}, false, nil
}

// compile compiles e; it returns the expression over [row..., slots...]
// and the slots to fill.
func (mc *mrCompiler) compile(e parser.Expr) (expr.Expr, []mrSlot, error) {
	mc.slots = nil
	ec := &expr.Compiler{Funcs: mc.funcs, Scope: mc.in, Subst: mc.subst, What: "MATCH_RECOGNIZE"}
	if mc.define != "" {
		ec.What = "DEFINE"
	}
	ce, err := ec.Compile(e)
	return ce, mc.slots, err
}

// evalWith evaluates a compiled expression on cur with its slots filled.
func evalWith(ce expr.Expr, slots []mrSlot, cur []types.Value, env *mrEnv) types.Value {
	if len(slots) == 0 {
		return ce.Eval(cur)
	}
	vs := make([]types.Value, len(cur)+len(slots))
	copy(vs, cur)
	for i, s := range slots {
		vs[len(cur)+i] = s(env)
	}
	return ce.Eval(vs)
}

func (p *planner) planMatchRecognize(m *parser.MatchRecognize) (*rel, error) {
	in, err := p.planFrom(m.Input)
	if err != nil {
		return nil, err
	}
	if in.mode != types.InsertOnly {
		return nil, parser.Errorf(m.Pos, "MATCH_RECOGNIZE needs an insert-only input, but %s updates", in.updater)
	}
	if len(m.OrderBy) == 0 {
		return nil, parser.Errorf(m.Pos, "MATCH_RECOGNIZE needs ORDER BY the input's event-time attribute")
	}
	if len(m.OrderBy) > 1 {
		return nil, expr.ErrAt(m.OrderBy[1].Expr, "MATCH_RECOGNIZE orders by the event-time attribute only (a secondary order is not supported yet)")
	}
	ob := m.OrderBy[0]
	id, ok := ob.Expr.(*parser.Ident)
	if !ok {
		return nil, expr.ErrAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by a time attribute column")
	}
	rowtime, rest, err := (&expr.Compiler{Funcs: p.s.cat.functions(), Scope: in.sc}).Resolve(id)
	if err != nil {
		return nil, err
	}
	switch {
	case len(rest) > 0:
		return nil, expr.ErrAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by a time attribute column")
	case in.sc.Cols[rowtime].Type.TimeAttr == types.ProctimeAttr:
		return nil, expr.ErrAt(ob.Expr, "MATCH_RECOGNIZE ordered by processing time is not supported yet (order by an event-time attribute)")
	case in.sc.Cols[rowtime].Type.TimeAttr != types.RowtimeAttr:
		return nil, expr.ErrAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by a time attribute, and '%s' is not one (declare a WATERMARK for it)", in.sc.Cols[rowtime].Name)
	case ob.Desc:
		return nil, expr.ErrAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by the time attribute ascending")
	}
	mp, err := newMRPattern(m.Pattern)
	if err != nil {
		return nil, err
	}
	vars := map[string]string{}
	for k, v := range mp.vars {
		vars[k] = v
	}
	// SUBSET u = (a, b): a union variable, its rows those of a and b in
	// the match's order
	subsets := map[string]map[string]bool{}
	for _, ss := range m.Subsets {
		if _, dup := vars[strings.ToUpper(ss.Name)]; dup {
			return nil, parser.Errorf(ss.Pos, "SUBSET '%s' is already a pattern variable or subset", ss.Name)
		}
		members := map[string]bool{}
		for _, v := range ss.Vars {
			name, ok := vars[strings.ToUpper(v)]
			if !ok || subsets[name] != nil {
				return nil, parser.Errorf(ss.Pos, "'%s' of SUBSET '%s' is not a variable of PATTERN", v, ss.Name)
			}
			members[name] = true
		}
		vars[strings.ToUpper(ss.Name)] = ss.Name
		subsets[ss.Name] = members
	}
	defines := map[string]parser.Expr{}
	for _, d := range m.Define {
		v, ok := vars[strings.ToUpper(d.Var)]
		if !ok || subsets[v] != nil {
			return nil, parser.Errorf(d.Pos, "DEFINE of '%s', which is not a variable of PATTERN", d.Var)
		}
		if _, dup := defines[v]; dup {
			return nil, parser.Errorf(d.Pos, "'%s' is defined twice", d.Var)
		}
		defines[v] = d.Cond
	}
	// partition keys
	pec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: in.sc, What: "PARTITION BY"}
	var keys []expr.Expr
	out := &expr.Scope{}
	for i, e := range m.PartitionBy {
		ce, err := pec.Compile(e)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ce)
		if m.AllRows {
			continue
		}
		t := ce.Type
		t.TimeAttr = 0
		out.Cols = append(out.Cols, expr.Column{Qual: m.Alias, Name: derivedName(e, i), Type: t})
	}
	if m.AllRows {
		// ALL ROWS PER MATCH: each row of the match, all its columns, then
		// the measures as of that row (RUNNING)
		for _, c := range in.sc.Cols {
			c.Qual, c.Win = m.Alias, 0
			c.Type.TimeAttr = 0
			out.Cols = append(out.Cols, c)
		}
	}
	// measures over the match, the current row being its last
	type measure struct {
		ce    expr.Expr
		slots []mrSlot
	}
	var measures []measure
	numbered := false
	for _, it := range m.Measures {
		mc := &mrCompiler{in: in.sc, vars: vars, measure: true, rowtime: rowtime, funcs: p.s.cat.functions(), numbered: &numbered}
		ce, slots, err := mc.compile(it.Expr)
		if err != nil {
			return nil, err
		}
		measures = append(measures, measure{ce, slots})
		out.Cols = append(out.Cols, expr.Column{Qual: m.Alias, Name: it.Alias, Type: ce.Type})
	}
	// conditions
	type condition struct {
		ce    expr.Expr
		slots []mrSlot
	}
	conds := map[string]condition{}
	for v, e := range defines {
		mc := &mrCompiler{in: in.sc, vars: vars, define: v, rowtime: rowtime, funcs: p.s.cat.functions(), numbered: new(bool)}
		ce, slots, err := mc.compile(e)
		if err != nil {
			return nil, err
		}
		if ce.Type.Kind != types.Boolean && ce.Type.Kind != types.Null {
			return nil, expr.ErrAt(e, "the condition of '%s' must be BOOLEAN, not %s", v, ce.Type)
		}
		conds[v] = condition{ce, slots}
	}
	var within time.Duration
	if m.Within != nil {
		if within, err = intervalArg(m.Within, "WITHIN"); err != nil {
			return nil, err
		}
	}
	var skip cep.Option
	skipText := "SKIP TO NEXT ROW"
	switch m.After {
	case "", "NEXT ROW":
		skip = cep.SkipToNext()
	case "PAST LAST ROW":
		skip, skipText = cep.SkipPastLastEvent(), "SKIP PAST LAST ROW"
	case "FIRST", "LAST":
		v, ok := mp.vars[strings.ToUpper(m.AfterVar)]
		if !ok {
			return nil, parser.Errorf(m.AfterPos, "AFTER MATCH SKIP TO %s '%s': not a variable of PATTERN", m.After, m.AfterVar)
		}
		if !mrCovers(mp.seq, v) {
			return nil, parser.Errorf(m.AfterPos, "AFTER MATCH SKIP TO %s '%s': '%s' is not in every alternative of the PATTERN, so a match may have no row to skip to (an error in SQL) — not supported", m.After, v, v)
		}
		skipText = "SKIP TO " + m.After + " " + v
		st := mp.stages[v]
		if m.After == "FIRST" {
			skip = cep.SkipToFirst(st[0], st[1:]...)
		} else {
			skip = cep.SkipToLast(st[0], st[1:]...)
		}
	}
	// the pattern's shape is checked here, so that what the engine
	// cannot run is a planning error at its place
	if err := mp.check(); err != nil {
		return nil, err
	}
	cond := func(pat *cep.Pattern[types.Row], v string) *cep.Pattern[types.Row] {
		c, ok := conds[v]
		switch {
		case !ok:
			return pat
		case len(c.slots) == 0:
			// a condition on the current row only: no navigation to set up
			return pat.Where(func(r types.Row) bool {
				x := c.ce.Eval(r.Values)
				return !x.Null && x.Bool()
			})
		}
		return pat.WhereIter(func(r types.Row, ctx *cep.Context[types.Row]) bool {
			// the rows so far in the match's order, then the row tested
			// as a row of v
			all, labels := mp.mrSteps(ctx.Steps(), 1)
			env := &mrEnv{all: append(all, r), labels: append(labels, v), subsets: subsets}
			x := evalWith(c.ce, c.slots, r.Values, env)
			return !x.Null && x.Bool()
		})
	}
	build := func() *cep.Pattern[types.Row] {
		pat := buildSeq(mp.seq, []cep.Option{skip}, cond)
		if within > 0 {
			pat = pat.Within(within)
		}
		return pat
	}
	var keyText []string
	for _, e := range m.PartitionBy {
		keyText = append(keyText, parser.ExprString(e))
	}
	var measureText []string
	for _, it := range m.Measures {
		measureText = append(measureText, parser.ExprString(it.Expr)+" AS "+it.Alias)
	}
	perMatch := "ONE ROW PER MATCH"
	if m.AllRows {
		perMatch = "ALL ROWS PER MATCH"
	}
	op := fmt.Sprintf("Match(partitionBy=[%s], orderBy=[%s], measures=[%s], rowsPerMatch=[%s], after=[%s], pattern=[%s]",
		strings.Join(keyText, ", "), in.sc.Cols[rowtime].Name, strings.Join(measureText, ", "), perMatch, skipText, parser.PatternString(m.Pattern))
	if within > 0 {
		op += fmt.Sprintf(", within=[%s]", within)
	}
	op += ")"
	r := &rel{op: op, sc: out, mode: types.InsertOnly, inputs: []*rel{in}, bounded: in.bounded}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		kf := evals(keys)
		ks := weir.KeyBy(s, func(row types.Row) string { return partitionKeyOf(kf, row.Values) })
		if m.AllRows {
			matches := detectMatches(ks, build(), mp, numbered, func(n int64, all []types.Row, labels []string) []types.Row {
				outRows := make([]types.Row, len(all))
				final := &mrEnv{number: n, all: all, labels: labels, subsets: subsets}
				for i, r := range all {
					env := &mrEnv{number: n, final: final, all: all[:i+1], labels: labels[:i+1], subsets: subsets}
					vs := make([]types.Value, 0, len(out.Cols))
					vs = append(vs, r.Values...)
					for _, ms := range measures {
						vs = append(vs, evalWith(ms.ce, ms.slots, r.Values, env))
					}
					outRows[i] = types.Row{Values: vs}
				}
				return outRows
			}, b.uid("match-recognize"))
			return weir.FlatMapWith(matches, func() func([]types.Row, func(types.Row)) {
				return func(rows []types.Row, emit func(types.Row)) {
					for _, r := range rows {
						emit(r)
					}
				}
			}, b.uid("match-rows")), nil
		}
		return detectMatches(ks, build(), mp, numbered, func(n int64, all []types.Row, labels []string) types.Row {
			env := &mrEnv{number: n, all: all, labels: labels, subsets: subsets}
			lastRow := all[len(all)-1].Values
			vs := make([]types.Value, 0, len(out.Cols))
			for _, k := range kf {
				vs = append(vs, k(lastRow))
			}
			for _, ms := range measures {
				vs = append(vs, evalWith(ms.ce, ms.slots, lastRow, env))
			}
			return types.Row{Values: vs}
		}, b.uid("match-recognize")), nil
	}
	return r, nil
}

// prev compiles PREV(col [, n]) or PREV(X.col [, n]) (dir -1), NEXT(...)
// (dir 1): the column of the row n (default 1) before (after), in the
// match's order of rows, the current row (a column without a variable:
// the row being tested in DEFINE, the match's last row in MEASURES) or X's
// last row; NULL beyond the match's rows.
func (mc *mrCompiler) prev(x *parser.Call, dir int) (expr.Expr, bool, error) {
	ce, v, off, err := mc.navArgs(x, 1)
	if err != nil {
		return expr.Expr{}, true, err
	}
	if v == mc.define {
		v = "" // the row being tested is the last of the match so far
	}
	ev := ce.Eval
	return mc.slot(ce.Type.Nullable(), func(env *mrEnv) types.Value {
		all := env.rows("")
		at := len(all) - 1
		if v != "" {
			rows := env.rows(v)
			if len(rows) == 0 {
				return types.NullValue
			}
			last := rows[len(rows)-1].Values
			for at >= 0 && !sameRow(all[at].Values, last) {
				at--
			}
		}
		i := at + dir*off
		if at < 0 || i < 0 || i >= len(all) {
			return types.NullValue
		}
		return ev(all[i].Values)
	}), true, nil
}

// sameRow reports whether two rows are the same row (its values' slice).
func sameRow(a, b []types.Value) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// navArgs compiles a navigation's arguments: the column (of one pattern
// variable, or none) and the optional offset (def when absent).
func (mc *mrCompiler) navArgs(x *parser.Call, def int) (expr.Expr, string, int, error) {
	if len(x.Args) < 1 || len(x.Args) > 2 {
		return expr.Expr{}, "", 0, expr.ErrAt(x, "%s takes a column and an optional offset", x.Name)
	}
	ce, used, err := mc.stripped(x.Args[0])
	if err != nil {
		return expr.Expr{}, "", 0, err
	}
	v, err := oneVar(used, x.Args[0])
	if err != nil {
		return expr.Expr{}, "", 0, err
	}
	off, err := navOffset(x, def)
	return ce, v, off, err
}

// navOffset reads a navigation's optional offset argument (def when
// absent): a non-negative integer literal.
func navOffset(x *parser.Call, def int) (int, error) {
	if len(x.Args) < 2 {
		return def, nil
	}
	lit, ok := x.Args[1].(*parser.Literal)
	off := 0
	if ok && lit.Kind == parser.NumberLit {
		_, err := fmt.Sscan(lit.Text, &off)
		ok = err == nil && off >= 0
	}
	if !ok {
		return 0, expr.ErrAt(x.Args[1], "the offset of %s must be a non-negative integer literal", x.Name)
	}
	return off, nil
}

// detectMatches runs the pattern and passes fn each match's rows in order
// with their variables, numbering each partition's matches from 1 when
// numbered (MATCH_NUMBER(), keyed state) and passing 0 otherwise.
func detectMatches[OUT any](ks *weir.KeyedStream[string, types.Row], p *cep.Pattern[types.Row], mp *mrPattern, numbered bool, fn func(n int64, all []types.Row, labels []string) OUT, opts ...weir.OperatorOption) *weir.Stream[OUT] {
	if numbered {
		return cep.DetectStepsNumbered(ks, p, func(_ string, n int64, s []cep.Step[types.Row]) OUT {
			all, labels := mp.mrSteps(s, 0)
			return fn(n, all, labels)
		}, opts...)
	}
	return cep.DetectSteps(ks, p, func(_ string, s []cep.Step[types.Row]) OUT {
		all, labels := mp.mrSteps(s, 0)
		return fn(0, all, labels)
	}, opts...)
}
