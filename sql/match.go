package sql

import (
	"fmt"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
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

// mrEnv is what a navigation reads: the rows of each variable.
type mrEnv struct {
	rows func(v string) []types.Row // v "" is every row of the match
}

type mrSlot func(env *mrEnv) types.Value

// mrCompiler compiles a DEFINE condition or a measure.
type mrCompiler struct {
	in      *scope
	vars    map[string]string // upper-case name -> name as in PATTERN
	define  string            // the variable being defined ("" for MEASURES)
	measure bool
	rowtime int // the input's rowtime column
	slots   []mrSlot
}

func (mc *mrCompiler) varOf(name string) (string, bool) {
	v, ok := mc.vars[strings.ToUpper(name)]
	return v, ok
}

// stripped compiles e against the input row with the pattern variable
// qualifiers removed, and reports the variables it names ("" for a
// column without one).
func (mc *mrCompiler) stripped(e parser.Expr) (cexpr, map[string]bool, error) {
	used := map[string]bool{}
	ec := &exprCompiler{sc: mc.in, what: "a pattern navigation"}
	ec.subst = func(x parser.Expr) (cexpr, bool, error) {
		id, ok := x.(*parser.Ident)
		if !ok {
			if c, ok := x.(*parser.Call); ok && isNavigation(c.Name) {
				return cexpr{}, false, errAt(x, "%s cannot be nested in a pattern navigation or aggregate", c.Name)
			}
			return cexpr{}, false, nil
		}
		if len(id.Parts) >= 2 {
			if v, ok := mc.varOf(id.Parts[0]); ok {
				used[v] = true
				ce, err := (&exprCompiler{sc: mc.in}).compile(&parser.Ident{Pos: id.Pos, Parts: id.Parts[1:]})
				return ce, true, err
			}
		}
		used[""] = true
		return cexpr{}, false, nil
	}
	ce, err := ec.compile(e)
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
		return "", errAt(at, "an argument of a pattern navigation or aggregate must refer to one pattern variable")
	}
	for v := range used {
		return v, nil
	}
	return "", nil
}

func (mc *mrCompiler) slot(t types.Type, fn mrSlot) cexpr {
	i := len(mc.in.cols) + len(mc.slots)
	mc.slots = append(mc.slots, fn)
	return cexpr{t: t, col: -1, eval: func(r []types.Value) types.Value { return r[i] }}
}

func (mc *mrCompiler) subst(e parser.Expr) (cexpr, bool, error) {
	switch x := e.(type) {
	case *parser.Ident:
		if len(x.Parts) < 2 {
			return cexpr{}, false, nil
		}
		v, ok := mc.varOf(x.Parts[0])
		if !ok {
			return cexpr{}, false, nil
		}
		ce, err := (&exprCompiler{sc: mc.in}).compile(&parser.Ident{Pos: x.Pos, Parts: x.Parts[1:]})
		if err != nil {
			return cexpr{}, true, err
		}
		if v == mc.define {
			return ce, true, nil // the row being tested
		}
		// X.col is the last row of X
		ev := ce.eval
		return mc.slot(ce.t.Nullable(), func(env *mrEnv) types.Value {
			rows := env.rows(v)
			if len(rows) == 0 {
				return types.NullValue
			}
			return ev(rows[len(rows)-1].Values)
		}), true, nil
	case *parser.Call:
		if x.Over != nil {
			return cexpr{}, true, errAt(x, "OVER is not allowed in MATCH_RECOGNIZE")
		}
		switch x.Name {
		case "FIRST", "LAST":
			if len(x.Args) < 1 || len(x.Args) > 2 {
				return cexpr{}, true, errAt(x, "%s takes a column and an optional offset", x.Name)
			}
			ce, used, err := mc.stripped(x.Args[0])
			if err != nil {
				return cexpr{}, true, err
			}
			v, err := oneVar(used, x.Args[0])
			if err != nil {
				return cexpr{}, true, err
			}
			off := 0
			if len(x.Args) == 2 {
				lit, ok := x.Args[1].(*parser.Literal)
				if !ok || lit.Kind != parser.NumberLit {
					return cexpr{}, true, errAt(x.Args[1], "the offset of %s must be a non-negative integer literal", x.Name)
				}
				if _, err := fmt.Sscan(lit.Text, &off); err != nil || off < 0 {
					return cexpr{}, true, errAt(x.Args[1], "the offset of %s must be a non-negative integer literal", x.Name)
				}
			}
			ev, first := ce.eval, x.Name == "FIRST"
			return mc.slot(ce.t.Nullable(), func(env *mrEnv) types.Value {
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
				return cexpr{}, true, errAt(x, "MATCH_ROWTIME() is only allowed in MEASURES")
			}
			t := mc.in.cols[mc.rowtime].t
			t.TimeAttr, t.NotNull = types.RowtimeAttr, true
			col := mc.rowtime
			return mc.slot(t, func(env *mrEnv) types.Value {
				rows := env.rows("")
				return rows[len(rows)-1].Values[col]
			}), true, nil
		case "PREV", "NEXT", "MATCH_PROCTIME", "CLASSIFIER", "MATCH_NUMBER", "RUNNING", "FINAL":
			return cexpr{}, true, errAt(x, "%s in MATCH_RECOGNIZE is not supported yet (FIRST, LAST, aggregates and MATCH_ROWTIME are; LAST(X.col, 1) is the row before X's last)", x.Name)
		}
		if !aggregateNames[x.Name] {
			return cexpr{}, false, nil
		}
		if x.Distinct {
			return cexpr{}, true, errAt(x, "DISTINCT aggregates are not supported in MATCH_RECOGNIZE")
		}
		used := map[string]bool{}
		ec := &exprCompiler{sc: mc.in, what: "an aggregate of a pattern variable"}
		ec.subst = func(y parser.Expr) (cexpr, bool, error) {
			if y == parser.Expr(x) {
				return cexpr{}, false, nil
			}
			ce, u, err := mc.stripped(y)
			for k := range u {
				used[k] = true
			}
			return ce, true, err
		}
		call, err := compileAgg(x, ec, false)
		if err != nil {
			return cexpr{}, true, err
		}
		v, err := oneVar(used, x)
		if err != nil {
			return cexpr{}, true, err
		}
		layout := newAggLayout(0, []*aggCall{call})
		return mc.slot(call.outT, func(env *mrEnv) types.Value {
			acc := layout.create(nil)
			for _, r := range env.rows(v) {
				layout.accumulate(acc, r.Values, 1)
			}
			return layout.result(acc, call)
		}), true, nil
	}
	return cexpr{}, false, nil
}

// compile compiles e; it returns the expression over [row..., slots...]
// and the slots to fill.
func (mc *mrCompiler) compile(e parser.Expr) (cexpr, []mrSlot, error) {
	mc.slots = nil
	ec := &exprCompiler{sc: mc.in, subst: mc.subst, what: "MATCH_RECOGNIZE"}
	if mc.define != "" {
		ec.what = "DEFINE"
	}
	ce, err := ec.compile(e)
	return ce, mc.slots, err
}

// evalWith evaluates a compiled expression on cur with its slots filled.
func evalWith(ce cexpr, slots []mrSlot, cur []types.Value, env *mrEnv) types.Value {
	if len(slots) == 0 {
		return ce.eval(cur)
	}
	vs := make([]types.Value, len(cur)+len(slots))
	copy(vs, cur)
	for i, s := range slots {
		vs[len(cur)+i] = s(env)
	}
	return ce.eval(vs)
}

func (p *planner) planMatchRecognize(m *parser.MatchRecognize) (*rel, error) {
	in, err := p.planFrom(m.Input)
	if err != nil {
		return nil, err
	}
	if in.mode != types.InsertOnly {
		return nil, parser.Errorf(m.Pos, "MATCH_RECOGNIZE needs an insert-only input, but %s updates", in.updater)
	}
	if m.AllRows {
		return nil, parser.Errorf(m.AllRowsPos, "ALL ROWS PER MATCH is not supported (Flink supports ONE ROW PER MATCH only)")
	}
	if len(m.OrderBy) == 0 {
		return nil, parser.Errorf(m.Pos, "MATCH_RECOGNIZE needs ORDER BY the input's event-time attribute")
	}
	if len(m.OrderBy) > 1 {
		return nil, errAt(m.OrderBy[1].Expr, "MATCH_RECOGNIZE orders by the event-time attribute only (a secondary order is not supported yet)")
	}
	ob := m.OrderBy[0]
	id, ok := ob.Expr.(*parser.Ident)
	if !ok {
		return nil, errAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by a time attribute column")
	}
	rowtime, rest, err := (&exprCompiler{sc: in.sc}).resolve(id)
	if err != nil {
		return nil, err
	}
	switch {
	case len(rest) > 0:
		return nil, errAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by a time attribute column")
	case in.sc.cols[rowtime].t.TimeAttr == types.ProctimeAttr:
		return nil, errAt(ob.Expr, "MATCH_RECOGNIZE ordered by processing time is not supported yet (order by an event-time attribute)")
	case in.sc.cols[rowtime].t.TimeAttr != types.RowtimeAttr:
		return nil, errAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by a time attribute, and '%s' is not one (declare a WATERMARK for it)", in.sc.cols[rowtime].name)
	case ob.Desc:
		return nil, errAt(ob.Expr, "MATCH_RECOGNIZE must be ordered by the time attribute ascending")
	}
	vars := map[string]string{}
	for _, t := range m.Pattern {
		if _, dup := vars[strings.ToUpper(t.Var)]; dup {
			return nil, parser.Errorf(t.Pos, "pattern variable '%s' appears twice in PATTERN (not supported)", t.Var)
		}
		vars[strings.ToUpper(t.Var)] = t.Var
	}
	defines := map[string]parser.Expr{}
	for _, d := range m.Define {
		v, ok := vars[strings.ToUpper(d.Var)]
		if !ok {
			return nil, parser.Errorf(d.Pos, "DEFINE of '%s', which is not a variable of PATTERN", d.Var)
		}
		if _, dup := defines[v]; dup {
			return nil, parser.Errorf(d.Pos, "'%s' is defined twice", d.Var)
		}
		defines[v] = d.Cond
	}
	// partition keys
	pec := &exprCompiler{sc: in.sc, what: "PARTITION BY"}
	var keys []cexpr
	out := &scope{}
	for i, e := range m.PartitionBy {
		ce, err := pec.compile(e)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ce)
		t := ce.t
		t.TimeAttr = 0
		out.cols = append(out.cols, column{qual: m.Alias, name: derivedName(e, i), t: t})
	}
	// measures over the match, the current row being its last
	type measure struct {
		ce    cexpr
		slots []mrSlot
	}
	var measures []measure
	for _, it := range m.Measures {
		mc := &mrCompiler{in: in.sc, vars: vars, measure: true, rowtime: rowtime}
		ce, slots, err := mc.compile(it.Expr)
		if err != nil {
			return nil, err
		}
		measures = append(measures, measure{ce, slots})
		out.cols = append(out.cols, column{qual: m.Alias, name: it.Alias, t: ce.t})
	}
	// conditions
	type condition struct {
		ce    cexpr
		slots []mrSlot
	}
	conds := map[string]condition{}
	for v, e := range defines {
		mc := &mrCompiler{in: in.sc, vars: vars, define: v, rowtime: rowtime}
		ce, slots, err := mc.compile(e)
		if err != nil {
			return nil, err
		}
		if ce.t.Kind != types.Boolean && ce.t.Kind != types.Null {
			return nil, errAt(e, "the condition of '%s' must be BOOLEAN, not %s", v, ce.t)
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
		v, ok := vars[strings.ToUpper(m.AfterVar)]
		if !ok {
			return nil, parser.Errorf(m.AfterPos, "AFTER MATCH SKIP TO %s '%s': not a variable of PATTERN", m.After, m.AfterVar)
		}
		skipText = "SKIP TO " + m.After + " " + v
		if m.After == "FIRST" {
			skip = cep.SkipToFirst(v)
		} else {
			skip = cep.SkipToLast(v)
		}
	}
	// the pattern's shape is checked here, so that what the engine
	// cannot run is a planning error at its place
	last := len(m.Pattern) - 1
	for i, t := range m.Pattern {
		loop := t.Max != t.Min
		if t.Max == 0 {
			return nil, parser.Errorf(t.Pos, "the quantifier %s of '%s' matches no row", t.Quant, t.Var)
		}
		if i == last && loop && !t.Reluctant && t.Max < 0 {
			return nil, parser.Errorf(t.Pos, "a greedy quantifier on the last variable of a PATTERN is not supported, as in Flink: end the pattern with a single variable or a reluctant quantifier ('%s%s?')", t.Var, t.Quant)
		}
		if t.Reluctant && t.Min == 0 && t.Max == 1 {
			return nil, parser.Errorf(t.Pos, "a reluctant optional variable ('%s??') is not supported, as in Flink", t.Var)
		}
		if i > 0 && t.Min == 0 {
			prev := m.Pattern[i-1]
			if prev.Max != prev.Min && !prev.Reluctant {
				return nil, parser.Errorf(t.Pos, "an optional variable ('%s%s') cannot follow a greedy one ('%s%s') on weir's CEP engine; make '%s' reluctant ('%s%s?')", t.Var, t.Quant, prev.Var, prev.Quant, prev.Var, prev.Var, prev.Quant)
			}
		}
		if i == 0 && t.Min == 0 {
			return nil, parser.Errorf(t.Pos, "the first variable of a PATTERN cannot be optional ('%s%s'), as in Flink", t.Var, t.Quant)
		}
	}
	order := make([]string, len(m.Pattern))
	for i, t := range m.Pattern {
		order[i] = t.Var
	}
	build := func() *cep.Pattern[types.Row] {
		var pat *cep.Pattern[types.Row]
		for i, t := range m.Pattern {
			if i == 0 {
				pat = cep.Begin[types.Row](t.Var, skip)
			} else {
				pat = pat.Next(t.Var)
			}
			switch c, ok := conds[t.Var]; {
			case ok && len(c.slots) == 0:
				// a condition on the current row only: no navigation to set up
				pat = pat.Where(func(r types.Row) bool {
					x := c.ce.eval(r.Values)
					return !x.Null && x.Bool()
				})
			case ok:
				v := t.Var
				pat = pat.WhereIter(func(r types.Row, ctx *cep.Context[types.Row]) bool {
					env := &mrEnv{rows: func(name string) []types.Row {
						if name == "" {
							// the rows so far in pattern order: the variables
							// after v have none yet
							var all []types.Row
							for _, o := range order {
								if o != v {
									all = append(all, ctx.EventsForPattern(o)...)
								}
							}
							all = append(all, ctx.EventsForPattern(v)...)
							return append(all, r)
						}
						rows := ctx.EventsForPattern(name)
						if name == v {
							return append(append([]types.Row(nil), rows...), r)
						}
						return rows
					}}
					x := evalWith(c.ce, c.slots, r.Values, env)
					return !x.Null && x.Bool()
				})
			}
			switch {
			case t.Min == 1 && t.Max == 1:
			case t.Min == 0 && t.Max == 1:
				pat = pat.Optional()
			case t.Max < 0:
				if t.Min <= 1 {
					pat = pat.OneOrMore()
				} else {
					pat = pat.TimesOrMore(t.Min)
				}
				pat = pat.Consecutive()
				if t.Min == 0 {
					pat = pat.Optional()
				}
			case t.Min == t.Max:
				pat = pat.Times(t.Min).Consecutive()
			default:
				pat = pat.TimesRange(t.Min, t.Max).Consecutive()
			}
			if t.Max != t.Min && t.Max != 1 && !t.Reluctant {
				pat = pat.Greedy()
			}
		}
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
	op := fmt.Sprintf("Match(partitionBy=[%s], orderBy=[%s], measures=[%s], rowsPerMatch=[ONE ROW PER MATCH], after=[%s], pattern=[%s]",
		strings.Join(keyText, ", "), in.sc.cols[rowtime].name, strings.Join(measureText, ", "), skipText, parser.PatternString(m.Pattern))
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
		ks := weir.KeyBy(s, func(row types.Row) string { return keyOf(kf, row.Values) })
		return cep.Detect(ks, build(), func(_ string, mt cep.Match[types.Row]) types.Row {
			var all []types.Row
			for _, o := range order {
				all = append(all, mt[o]...)
			}
			env := &mrEnv{rows: func(name string) []types.Row {
				if name == "" {
					return all
				}
				return mt[name]
			}}
			lastRow := all[len(all)-1].Values
			vs := make([]types.Value, 0, len(out.cols))
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
