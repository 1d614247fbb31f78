package sql

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// evalFn computes a value from a row's values. Expressions compile once,
// at planning, into a tree of evalFns that read fields by index: the hot
// path does no name lookups, parsing or reflection.
type evalFn func(r []types.Value) types.Value

// cexpr is a compiled expression: its type and its evaluation.
type cexpr struct {
	t    types.Type
	eval evalFn
	// konst is set when the expression reads no column (so it can be
	// folded at planning).
	konst bool
	// col is the input column the expression reads when it is a bare
	// column reference, else -1.
	col int
	// deps are the leaves of a projecting scan the expression reads (see
	// pushdown.go); nil when built outside the compiler.
	deps *depSet
	// whole is set on a bare reference to a column of a projecting scan,
	// so that a field access reads the field alone.
	whole *leafRef
	// leaf is set when the expression is a plain read of a projecting
	// scan's leaf (a Calc copies it without calling eval).
	leaf *leafRef
	// ival, pred and filt are typed forms of eval, when the expression
	// has them (expr_typed.go): an integer-layout value as an int64, a
	// BOOLEAN as a truth value, and "is TRUE". Whoever replaces eval
	// clears them.
	ival intFn
	pred predFn
	filt filterFn
}

// column is a column visible to an expression.
type column struct {
	qual string // table name or alias
	name string
	t    types.Type
	// win marks a window TVF's window_start/window_end (winStartCol,
	// winEndCol), kept through projections, for window joins.
	win uint8
}

// scope is the row layout an expression is compiled against.
type scope struct {
	cols []column
}

func (s *scope) schema() types.Schema {
	out := make(types.Schema, len(s.cols))
	for i, c := range s.cols {
		out[i] = types.Field{Name: c.name, Type: c.t}
	}
	return out
}

// exprCompiler compiles expressions against a scope. subst, when set, is
// consulted first for every sub-expression: the planner uses it to map
// GROUP BY expressions, aggregate calls and window properties to the
// columns of an aggregation's output.
type exprCompiler struct {
	sc    *scope
	subst func(e parser.Expr) (cexpr, bool, error)
	// what names the clause, for errors ("WHERE", "SELECT").
	what string
	// cols, when set, are the expressions the scope's columns stand for
	// (a Calc fused into the one below it reads its input's row).
	cols []cexpr
	// deps collects the leaves read by the expression being compiled.
	deps *depSet
}

// column returns the expression of scope column i.
func (c *exprCompiler) column(i int) cexpr {
	if c.cols != nil {
		x := c.cols[i]
		x.t = c.sc.cols[i].t
		return x
	}
	return colRef(i, c.sc.cols[i].t)
}

func errAt(e parser.Expr, format string, args ...any) error {
	return parser.Errorf(e.ExprPos(), format, args...)
}

// resolve finds the column an identifier names: the longest prefix that
// names a column (qualified or not), the rest being field accesses.
func (c *exprCompiler) resolve(id *parser.Ident) (int, []string, error) {
	parts := id.Parts
	if len(parts) >= 2 {
		idx, n := -1, 0
		for i, col := range c.sc.cols {
			if col.qual != "" && strings.EqualFold(col.qual, parts[0]) && strings.EqualFold(col.name, parts[1]) {
				if idx < 0 {
					idx = i
				}
				n++
			}
		}
		if n == 1 {
			return idx, parts[2:], nil
		}
	}
	idx, n := -1, 0
	for i, col := range c.sc.cols {
		if col.name == parts[0] {
			if idx < 0 {
				idx = i
			}
			n++
		}
	}
	if n == 0 {
		for i, col := range c.sc.cols {
			if strings.EqualFold(col.name, parts[0]) {
				if idx < 0 {
					idx = i
				}
				n++
			}
		}
	}
	if n > 1 {
		return 0, nil, errAt(id, "column '%s' is ambiguous", parts[0])
	}
	if n == 0 {
		return 0, nil, errAt(id, "column '%s' not found in any table%s", strings.Join(parts, "."), c.available())
	}
	return idx, parts[1:], nil
}

func (c *exprCompiler) available() string {
	if len(c.sc.cols) == 0 {
		return ""
	}
	names := make([]string, 0, len(c.sc.cols))
	for _, col := range c.sc.cols {
		if col.qual != "" {
			names = append(names, col.qual+"."+col.name)
		} else {
			names = append(names, col.name)
		}
	}
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	return " (available: " + strings.Join(names, ", ") + ")"
}

func fieldAccess(x cexpr, name string, at parser.Expr) (cexpr, error) {
	if x.t.Kind != types.Structured {
		return cexpr{}, errAt(at, "cannot access field '%s' of a value of type %s", name, x.t)
	}
	fi := -1
	for i, f := range x.t.Fields {
		if f.Name == name {
			fi = i
			break
		}
	}
	if fi < 0 {
		for i, f := range x.t.Fields {
			if strings.EqualFold(f.Name, name) {
				fi = i
				break
			}
		}
	}
	if fi < 0 {
		return cexpr{}, errAt(at, "field '%s' not found in %s", name, x.t)
	}
	inner := x.eval
	ft := x.t.Fields[fi].Type
	if !x.t.NotNull {
		ft = ft.Nullable()
	}
	if x.whole != nil {
		return fieldRef(x.whole, fi, ft), nil
	}
	return cexpr{t: ft, col: -1, eval: func(r []types.Value) types.Value {
		v := inner(r)
		l := v.List()
		if v.Null || fi >= len(l) {
			return types.NullValue
		}
		return l[fi]
	}}, nil
}

func colRef(i int, t types.Type) cexpr {
	return withTyped(cexpr{t: t, col: i, eval: func(r []types.Value) types.Value { return r[i] }}, slotInt(i))
}

func konst(v types.Value, t types.Type) cexpr {
	return konstTyped(cexpr{t: t, konst: true, col: -1, eval: func([]types.Value) types.Value { return v }}, v)
}

// compile compiles e.
func (c *exprCompiler) compile(e parser.Expr) (cexpr, error) {
	if c.subst != nil {
		if ce, ok, err := c.subst(e); err != nil || ok {
			return ce, err
		}
	}
	// collect the leaves e reads (its sub-expressions' and columns')
	outer := c.deps
	c.deps = &depSet{}
	ce, err := c.compile1(e)
	d := c.deps
	c.deps = outer
	if err != nil {
		return ce, err
	}
	if ce.konst {
		// fold constants: evaluate once at planning
		v := ce.eval(nil)
		return konst(v, ce.t), nil
	}
	ce.deps, ce.whole = d, nil
	if outer != nil {
		outer.add(d)
	}
	return ce, nil
}

func (c *exprCompiler) compile1(e parser.Expr) (cexpr, error) {
	switch e := e.(type) {
	case *parser.Ident:
		idx, rest, err := c.resolve(e)
		if err != nil {
			return cexpr{}, err
		}
		x := c.column(idx)
		if x.whole != nil && len(rest) > 0 {
			// a field of a projecting scan's ROW: read it alone
			if x, err = fieldAccess(x, rest[0], e); err != nil {
				return cexpr{}, err
			}
			rest = rest[1:]
		}
		c.deps.use(x)
		for _, f := range rest {
			if x, err = fieldAccess(x, f, e); err != nil {
				return cexpr{}, err
			}
		}
		return x, nil
	case *parser.Field:
		x, err := c.compile(e.X)
		if err != nil {
			return cexpr{}, err
		}
		return fieldAccess(x, e.Name, e)
	case *parser.Literal:
		return literal(e)
	case *parser.TypedLiteral:
		switch e.Type {
		case "DATE":
			d, ok := parseDate(e.Text)
			if !ok {
				return cexpr{}, errAt(e, "invalid DATE literal '%s'", e.Text)
			}
			return konst(types.IntValue(d), types.Type{Kind: types.Date, NotNull: true}), nil
		case "TIMESTAMP", "TIMESTAMP_LTZ":
			us, ok := parseTimestamp(e.Text)
			if !ok {
				return cexpr{}, errAt(e, "invalid TIMESTAMP literal '%s'", e.Text)
			}
			k := types.Timestamp
			if e.Type == "TIMESTAMP_LTZ" {
				k = types.TimestampLTZ
			}
			return konst(types.IntValue(us), types.Type{Kind: k, Precision: 3, NotNull: true}), nil
		}
		return cexpr{}, errAt(e, "%s literals are not supported yet", e.Type)
	case *parser.IntervalLit:
		v, months, err := intervalValue(e)
		if err != nil {
			return cexpr{}, err
		}
		return konst(types.IntValue(v), types.Type{Kind: types.Interval, Months: months, NotNull: true}), nil
	case *parser.Unary:
		x, err := c.compile(e.X)
		if err != nil {
			return cexpr{}, err
		}
		switch e.Op {
		case "+":
			return x, nil
		case "NOT":
			if x.t.Kind != types.Boolean && x.t.Kind != types.Null {
				return cexpr{}, errAt(e, "NOT needs a BOOLEAN, not %s", x.t)
			}
			return notExpr(x), nil
		case "-":
			zero := konst(types.IntValue(0), types.Type{Kind: types.Int, NotNull: true})
			return arith("-", zero, x, e)
		}
	case *parser.Binary:
		return c.binary(e)
	case *parser.Call:
		return c.call(e)
	case *parser.Case:
		return c.caseExpr(e)
	case *parser.Cast:
		x, err := c.compile(e.X)
		if err != nil {
			return cexpr{}, err
		}
		if !e.Try {
			return strictCast(x, e)
		}
		return castExpr(x, e.Type, e)
	case *parser.Between:
		xs, err := c.compileAll(e.X, e.Lo, e.Hi)
		if err != nil {
			return cexpr{}, err
		}
		x, lo, hi := xs[0], xs[1], xs[2]
		ge, err := compare(">=", x, lo, e)
		if err != nil {
			return cexpr{}, err
		}
		le, err := compare("<=", x, hi, e)
		if err != nil {
			return cexpr{}, err
		}
		r := logic("AND", ge, le)
		if e.Not {
			return notExpr(r), nil
		}
		return r, nil
	case *parser.In:
		x, err := c.compile(e.X)
		if err != nil {
			return cexpr{}, err
		}
		var acc cexpr
		for i, item := range e.List {
			it, err := c.compile(item)
			if err != nil {
				return cexpr{}, err
			}
			eq, err := compare("=", x, it, item)
			if err != nil {
				return cexpr{}, err
			}
			if i == 0 {
				acc = eq
			} else {
				acc = logic("OR", acc, eq)
			}
		}
		if e.Not {
			return notExpr(acc), nil
		}
		return acc, nil
	case *parser.Like:
		return c.like(e)
	case *parser.Is:
		x, err := c.compile(e.X)
		if err != nil {
			return cexpr{}, err
		}
		f := x.eval
		var out evalFn
		switch e.What {
		case "NULL", "UNKNOWN":
			out = func(r []types.Value) types.Value { return types.BoolValue(f(r).Null) }
		case "TRUE":
			out = func(r []types.Value) types.Value { v := f(r); return types.BoolValue(!v.Null && v.Bool()) }
		case "FALSE":
			out = func(r []types.Value) types.Value { v := f(r); return types.BoolValue(!v.Null && !v.Bool()) }
		case "DISTINCT":
			y, err := c.compile(e.From)
			if err != nil {
				return cexpr{}, err
			}
			eq, err := compare("=", x, y, e)
			if err != nil {
				return cexpr{}, err
			}
			g, eqf := y.eval, eq.eval
			out = func(r []types.Value) types.Value {
				a, b := f(r), g(r)
				if a.Null || b.Null {
					return types.BoolValue(a.Null != b.Null)
				}
				return types.BoolValue(!eqf(r).Bool())
			}
		}
		res := cexpr{t: types.Type{Kind: types.Boolean, NotNull: true}, eval: out, konst: x.konst, col: -1}
		if e.Not {
			g := res.eval
			res.eval = func(r []types.Value) types.Value { return types.BoolValue(!g(r).Bool()) }
		}
		if (e.What == "NULL" || e.What == "UNKNOWN") && !genericOnly {
			// x IS [NOT] NULL as a filter: no Value for the result
			p := isNullTyped(x, e.Not)
			res.pred, res.filt, res.eval = p, func(r []types.Value) bool { return p(r) == triTrue }, evalOfPred(p)
		}
		return res, nil
	case *parser.Index:
		xs, err := c.compileAll(e.X, e.Index)
		if err != nil {
			return cexpr{}, err
		}
		x, idx := xs[0], xs[1]
		f, g := x.eval, idx.eval
		switch x.t.Kind {
		case types.Array:
			return cexpr{t: x.t.Elem.Nullable(), col: -1, eval: func(r []types.Value) types.Value {
				a, i := f(r), g(r)
				l := a.List()
				if a.Null || i.Null || i.I < 1 || int(i.I) > len(l) {
					return types.NullValue
				}
				return l[i.I-1]
			}}, nil
		case types.Map:
			return cexpr{t: x.t.Elem.Nullable(), col: -1, eval: func(r []types.Value) types.Value {
				m, k := f(r), g(r)
				l := m.List()
				for j := 0; j+1 < len(l); j += 2 {
					if l[j].Equal(k) {
						return l[j+1]
					}
				}
				return types.NullValue
			}}, nil
		}
		return cexpr{}, errAt(e, "cannot index a value of type %s", x.t)
	case *parser.Extract:
		x, err := c.compile(e.X)
		if err != nil {
			return cexpr{}, err
		}
		return extract(e.Unit, x, e)
	case *parser.Subquery:
		return cexpr{}, errAt(e, "subqueries in expressions are not supported yet")
	case *parser.Descriptor, *parser.TableArg, *parser.NamedArg:
		return cexpr{}, errAt(e, "this argument is only allowed in a window table function")
	}
	return cexpr{}, errAt(e, "unsupported expression %s", parser.ExprString(e))
}

func literal(e *parser.Literal) (cexpr, error) {
	switch e.Kind {
	case parser.NullLit:
		return konst(types.NullValue, types.Type{Kind: types.Null}), nil
	case parser.BoolLit:
		return konst(types.BoolValue(e.Text == "TRUE"), types.Type{Kind: types.Boolean, NotNull: true}), nil
	case parser.StringLit:
		return konst(types.StringValue(e.Text), types.Type{Kind: types.Varchar, Length: max(len(e.Text), 1), NotNull: true}), nil
	}
	text := e.Text
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return cexpr{}, errAt(e, "invalid number %s", text)
		}
		return konst(types.FloatValue(f), types.Type{Kind: types.Double, NotNull: true}), nil
	}
	if !strings.Contains(text, ".") {
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return konst(types.IntValue(n), types.Type{Kind: types.Int, NotNull: true}), nil
			}
			return konst(types.IntValue(n), types.Type{Kind: types.BigInt, NotNull: true}), nil
		}
	}
	// an exact decimal: precision = its digits, scale = digits after '.'
	digits := strings.TrimLeft(strings.NewReplacer("-", "", ".", "").Replace(text), "0")
	scale := 0
	if i := strings.IndexByte(text, '.'); i >= 0 {
		scale = len(text) - i - 1
	}
	p := max(len(digits), scale, 1)
	if p > maxPrecision {
		return cexpr{}, errAt(e, "number %s has more than 38 digits", text)
	}
	t := types.DecimalType(p, scale)
	t.NotNull = true
	u, ok := parseDecimal(text, scale)
	if !ok {
		return cexpr{}, errAt(e, "invalid number %s", text)
	}
	return konst(decValue(u, t), t), nil
}

// intervalValue returns an interval literal in milliseconds (day-time) or
// months (year-month).
func intervalValue(e *parser.IntervalLit) (int64, bool, error) {
	text := strings.TrimSpace(e.Text)
	neg := e.Negative
	if strings.HasPrefix(text, "-") {
		neg = !neg
		text = text[1:]
	}
	var v int64
	months := false
	unitMs := map[string]int64{"DAY": 86400000, "HOUR": 3600000, "MINUTE": 60000, "SECOND": 1000, "MILLISECOND": 1, "WEEK": 7 * 86400000}
	switch {
	case e.To != "":
		// 'd hh:mm:ss', 'hh:mm', 'y-m'...
		if e.Unit == "YEAR" {
			y, m, _ := strings.Cut(text, "-")
			yi, err1 := strconv.ParseInt(y, 10, 64)
			mi, err2 := strconv.ParseInt(m, 10, 64)
			if err1 != nil || err2 != nil {
				return 0, false, errAt(e, "invalid interval '%s'", e.Text)
			}
			v, months = yi*12+mi, true
			break
		}
		fields := strings.FieldsFunc(text, func(r rune) bool { return r == ' ' || r == ':' })
		order := []string{"DAY", "HOUR", "MINUTE", "SECOND"}
		start := -1
		for i, u := range order {
			if u == e.Unit {
				start = i
			}
		}
		if start < 0 || start+len(fields) > len(order) {
			return 0, false, errAt(e, "invalid interval '%s' %s TO %s", e.Text, e.Unit, e.To)
		}
		for i, f := range fields {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return 0, false, errAt(e, "invalid interval '%s'", e.Text)
			}
			v += int64(x * float64(unitMs[order[start+i]]))
		}
	case e.Unit == "YEAR" || e.Unit == "MONTH" || e.Unit == "QUARTER":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, false, errAt(e, "invalid interval '%s'", e.Text)
		}
		months = true
		switch e.Unit {
		case "YEAR":
			v = n * 12
		case "QUARTER":
			v = n * 3
		default:
			v = n
		}
	default:
		x, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return 0, false, errAt(e, "invalid interval '%s'", e.Text)
		}
		v = int64(math.Round(x * float64(unitMs[e.Unit])))
	}
	if neg {
		v = -v
	}
	return v, months, nil
}

func bothNotNull(a, b cexpr) bool { return a.t.NotNull && b.t.NotNull }

func (c *exprCompiler) binary(e *parser.Binary) (cexpr, error) {
	l, err := c.compile(e.L)
	if err != nil {
		return cexpr{}, err
	}
	r, err := c.compile(e.R)
	if err != nil {
		return cexpr{}, err
	}
	switch e.Op {
	case "AND", "OR":
		for _, x := range []cexpr{l, r} {
			if x.t.Kind != types.Boolean && x.t.Kind != types.Null {
				return cexpr{}, errAt(e, "%s needs BOOLEAN operands, not %s", e.Op, x.t)
			}
		}
		return logic(e.Op, l, r), nil
	case "=", "<>", "<", ">", "<=", ">=":
		return compare(e.Op, l, r, e)
	case "||":
		return concat([]cexpr{l, r}), nil
	}
	return arith(e.Op, l, r, e)
}

func logic(op string, l, r cexpr) cexpr {
	t := types.Type{Kind: types.Boolean, NotNull: bothNotNull(l, r)}
	// three-valued: the typed form (expr_typed.go) is the evaluation;
	// logicGeneric is what it must equal
	if genericOnly {
		return cexpr{t: t, eval: logicGeneric(op, l, r), konst: l.konst && r.konst, col: -1}
	}
	p, f := logicTyped(op, l, r)
	return cexpr{t: t, eval: evalOfPred(p), pred: p, filt: f, konst: l.konst && r.konst, col: -1}
}

// logicGeneric is AND and OR on Values, the reference for the typed form.
func logicGeneric(op string, l, r cexpr) evalFn {
	f, g := l.eval, r.eval
	if op == "AND" {
		return func(row []types.Value) types.Value {
			a := f(row)
			if !a.Null && !a.Bool() {
				return a
			}
			b := g(row)
			if !b.Null && !b.Bool() {
				return b
			}
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.BoolValue(true)
		}
	}
	return func(row []types.Value) types.Value {
		a := f(row)
		if !a.Null && a.Bool() {
			return a
		}
		b := g(row)
		if !b.Null && b.Bool() {
			return b
		}
		if a.Null || b.Null {
			return types.NullValue
		}
		return types.BoolValue(false)
	}
}

func notExpr(x cexpr) cexpr {
	if genericOnly {
		return cexpr{t: x.t, konst: x.konst, col: -1, eval: notGeneric(x)}
	}
	p, f := notTyped(x)
	return cexpr{t: x.t, konst: x.konst, col: -1, eval: evalOfPred(p), pred: p, filt: f}
}

// notGeneric is NOT on Values, the reference for the typed form.
func notGeneric(x cexpr) evalFn {
	f := x.eval
	return func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		return types.BoolValue(!v.Bool())
	}
}

// numClass is how two numeric operands are computed together.
type numClass uint8

const (
	numInt numClass = iota
	numDecimal
	numFloat
)

func classOf(a, b types.Type) numClass {
	if a.Kind == types.Float || a.Kind == types.Double || b.Kind == types.Float || b.Kind == types.Double {
		return numFloat
	}
	if a.Kind == types.Decimal || b.Kind == types.Decimal {
		return numDecimal
	}
	return numInt
}

func widerInt(a, b types.Type) types.Type {
	k := max(a.Kind, b.Kind)
	if a.Kind == types.Null {
		k = b.Kind
	}
	if b.Kind == types.Null {
		k = a.Kind
	}
	return types.Type{Kind: k}
}

func isNumOrNull(t types.Type) bool { return t.IsNumeric() || t.Kind == types.Null }

// toFloatFn converts a numeric value of type t to float64.
func toFloatFn(t types.Type) func(types.Value) float64 {
	switch {
	case t.Kind == types.Float || t.Kind == types.Double:
		return func(v types.Value) float64 { return v.Float() }
	case t.Kind == types.Decimal:
		return func(v types.Value) float64 { return decFloat(v, t) }
	}
	return func(v types.Value) float64 { return float64(v.I) }
}

func arith(op string, l, r cexpr, at parser.Expr) (cexpr, error) {
	f, g := l.eval, r.eval
	nn := bothNotNull(l, r)
	k := l.konst && r.konst
	// time arithmetic
	lt, rt := l.t.Kind, r.t.Kind
	isTS := func(k types.Kind) bool { return k == types.Timestamp || k == types.TimestampLTZ }
	if (isTS(lt) || lt == types.Date) && rt == types.Interval && (op == "+" || op == "-") {
		if r.t.Months {
			return cexpr{}, errAt(at, "year-month intervals on timestamps are not supported yet")
		}
		sign := int64(1)
		if op == "-" {
			sign = -1
		}
		if lt == types.Date {
			return cexpr{t: types.Type{Kind: types.Date, NotNull: nn}, konst: k, col: -1, eval: func(row []types.Value) types.Value {
				a, b := f(row), g(row)
				if a.Null || b.Null {
					return types.NullValue
				}
				return types.IntValue(a.I + sign*b.I/86400000)
			}}, nil
		}
		t := l.t
		t.TimeAttr = types.NoTimeAttr
		t.NotNull = nn
		return cexpr{t: t, konst: k, col: -1, eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.IntValue(a.I + sign*b.I*1000)
		}}, nil
	}
	if lt == types.Interval && isTS(rt) && op == "+" {
		return arith(op, r, l, at)
	}
	if lt == types.Interval && rt == types.Interval && (op == "+" || op == "-") {
		sign := int64(1)
		if op == "-" {
			sign = -1
		}
		return cexpr{t: l.t, konst: k, col: -1, eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.IntValue(a.I + sign*b.I)
		}}, nil
	}
	if !isNumOrNull(l.t) || !isNumOrNull(r.t) {
		return cexpr{}, errAt(at, "cannot apply '%s' to %s and %s", op, l.t, r.t)
	}
	switch classOf(l.t, r.t) {
	case numInt:
		t := widerInt(l.t, r.t)
		t.NotNull = nn
		var fn func(a, b int64) int64
		switch op {
		case "+":
			fn = func(a, b int64) int64 { return a + b }
		case "-":
			fn = func(a, b int64) int64 { return a - b }
		case "*":
			fn = func(a, b int64) int64 { return a * b }
		case "/":
			fn = func(a, b int64) int64 {
				if b == 0 {
					panic(runtimeError("division by zero"))
				}
				return a / b
			}
		case "%":
			fn = func(a, b int64) int64 {
				if b == 0 {
					panic(runtimeError("division by zero"))
				}
				return a % b
			}
		}
		// the typed form (expr_typed.go) is the evaluation; the generic
		// one below is what it must equal (expr_typed_test.go)
		iv := intArith(op, l, r)
		ce := cexpr{t: t, konst: k, col: -1, eval: evalOfInt(iv), ival: iv}
		if genericOnly {
			ce.ival, ce.eval = nil, func(row []types.Value) types.Value {
				a, b := f(row), g(row)
				if a.Null || b.Null {
					return types.NullValue
				}
				return types.IntValue(fn(a.I, b.I))
			}
		}
		return ce, nil
	case numFloat:
		fa, fb := toFloatFn(l.t), toFloatFn(r.t)
		var fn func(a, b float64) float64
		switch op {
		case "+":
			fn = func(a, b float64) float64 { return a + b }
		case "-":
			fn = func(a, b float64) float64 { return a - b }
		case "*":
			fn = func(a, b float64) float64 { return a * b }
		case "/":
			fn = func(a, b float64) float64 { return a / b }
		case "%":
			fn = math.Mod
		}
		return cexpr{t: types.Type{Kind: types.Double, NotNull: nn}, konst: k, col: -1, eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.FloatValue(fn(fa(a), fb(b)))
		}}, nil
	}
	// decimal
	da, db := decimalOf(l.t), decimalOf(r.t)
	var t types.Type
	switch op {
	case "+", "-":
		t = decimalPlus(da, db)
	case "*":
		t = decimalTimes(da, db)
	case "/":
		t = decimalDivide(da, db)
	case "%":
		t = decimalMod(da, db)
	}
	t.NotNull = nn
	out := t
	fast := op == "+" || op == "-" || op == "*"
	if op == "*" && int64Layout(l.t) && int64Layout(r.t) && (l.konst || r.konst) && !(l.konst && r.konst) {
		// a constant times an int64 decimal (q1's 0.908 * price): the
		// constant's unscaled value read once
		cv, x := l, r
		if r.konst {
			cv, x = r, l
		}
		c := cv.eval(nil)
		if c.Null {
			return konst(types.NullValue, t), nil
		}
		ci, xi := c.I, intOf(x) // x's value is its I (int64Layout)
		da, db := decimalOf(cv.t), decimalOf(x.t)
		scale := da.Scale + db.Scale
		// |b| <= lim: ci * b cannot overflow; with no rescale and a result
		// type above 18 digits, every such product is the result itself
		// (decMul64 would give the same, with more tests)
		lim := int64(-1)
		if ci != 0 && ci != math.MinInt64 && scale == out.Scale && out.Precision > 18 {
			lim = math.MaxInt64 / max(ci, -ci)
		}
		return cexpr{t: t, col: -1, eval: func(row []types.Value) types.Value {
			b, ok := xi(row)
			if !ok {
				return types.NullValue
			}
			if b <= lim && b >= -lim {
				return types.Value{I: ci * b}
			}
			if v, ok := decMul64(ci, b, scale, out); ok {
				return v
			}
			return decArithBig(op, c, types.Value{I: b}, cv.t, x.t, da, db, out)
		}}, nil
	}
	ev := func(row []types.Value) types.Value {
		a, b := f(row), g(row)
		if a.Null || b.Null {
			return types.NullValue
		}
		if fast {
			// the int64 fast path (decimal_fast.go); big on overflow
			if x, ok := decInt64(a, l.t); ok {
				if y, ok := decInt64(b, r.t); ok {
					if v, ok := decArith64(op, x, y, da, db, out); ok {
						return v
					}
				}
			}
		}
		return decArithBig(op, a, b, l.t, r.t, da, db, out)
	}
	return cexpr{t: t, konst: k, col: -1, eval: ev}, nil
}

// decArithBig computes a op b, decimals (or integers) of types lt and rt,
// widened to da and db, into a decimal of type out on big.Ints: the exact
// path, which the int64 fast path (decArith64) must match.
func decArithBig(op string, a, b types.Value, lt, rt, da, db, out types.Type) types.Value {
	x, y := decBig(a, lt), decBig(b, rt)
	var res *big.Int
	switch op {
	case "+", "-":
		s := max(da.Scale, db.Scale)
		x, y = rescale(x, da.Scale, s), rescale(y, db.Scale, s)
		if op == "+" {
			res = x.Add(x, y)
		} else {
			res = x.Sub(x, y)
		}
		res = rescale(res, s, out.Scale)
	case "*":
		res = rescale(x.Mul(x, y), da.Scale+db.Scale, out.Scale)
	case "/":
		if y.Sign() == 0 {
			panic(runtimeError("division by zero"))
		}
		// x/y with out.Scale digits: x * 10^(out.Scale + db.Scale - da.Scale) / y, HALF_UP
		shift := out.Scale + db.Scale - da.Scale
		if shift >= 0 {
			x.Mul(x, bigPow10(shift))
		} else {
			x = rescale(x, -shift, 0)
		}
		q, m := new(big.Int).QuoRem(x, y, new(big.Int))
		m.Abs(m).Lsh(m, 1)
		if m.CmpAbs(y) >= 0 {
			if (x.Sign() < 0) != (y.Sign() < 0) {
				q.Sub(q, big.NewInt(1))
			} else {
				q.Add(q, big.NewInt(1))
			}
		}
		res = q
	case "%":
		if y.Sign() == 0 {
			panic(runtimeError("division by zero"))
		}
		s := max(da.Scale, db.Scale)
		x, y = rescale(x, da.Scale, s), rescale(y, db.Scale, s)
		res = rescale(x.Rem(x, y), s, out.Scale)
	}
	return decValue(res, out)
}

// runtimeError is a failure of an expression on a record (division by
// zero); it fails the job, as in Flink.
type runtimeError string

func (e runtimeError) Error() string { return "sql: " + string(e) }

// comparator returns a three-way comparison of non-null values of types a
// and b, or nil when they do not compare.
func comparator(a, b types.Type) func(x, y types.Value) int {
	switch {
	case a.Kind == types.Null || b.Kind == types.Null:
		return func(x, y types.Value) int { return 0 }
	case isNumOrNull(a) && isNumOrNull(b):
		switch classOf(a, b) {
		case numInt:
			return func(x, y types.Value) int { return cmpInt(x.I, y.I) }
		case numFloat:
			fa, fb := toFloatFn(a), toFloatFn(b)
			return func(x, y types.Value) int {
				p, q := fa(x), fb(y)
				switch {
				case p < q:
					return -1
				case p > q:
					return 1
				}
				return 0
			}
		}
		da, db := decimalOf(a), decimalOf(b)
		if int64Layout(a) && int64Layout(b) {
			s := max(da.Scale, db.Scale)
			return func(x, y types.Value) int {
				p, ok1 := rescale64(x.I, da.Scale, s)
				q, ok2 := rescale64(y.I, db.Scale, s)
				if ok1 && ok2 {
					return cmpInt(p, q)
				}
				return rescale(decBig(x, a), da.Scale, s).Cmp(rescale(decBig(y, b), db.Scale, s))
			}
		}
		return func(x, y types.Value) int {
			s := max(da.Scale, db.Scale)
			return rescale(decBig(x, a), da.Scale, s).Cmp(rescale(decBig(y, b), db.Scale, s))
		}
	case (a.IsString() && b.IsString()) || (isBytes(a) && isBytes(b)):
		return func(x, y types.Value) int { return strings.Compare(x.S, y.S) }
	case a.Kind == types.Boolean && b.Kind == types.Boolean,
		isTime(a) && isTime(b) && a.Kind == b.Kind,
		isTimestamp(a) && isTimestamp(b),
		a.Kind == types.Interval && b.Kind == types.Interval:
		return func(x, y types.Value) int { return cmpInt(x.I, y.I) }
	case a.Kind == b.Kind && (a.Kind == types.Structured || a.Kind == types.Array || a.Kind == types.Map):
		return func(x, y types.Value) int {
			if x.Equal(y) {
				return 0
			}
			return strings.Compare(types.Key([]types.Value{x}), types.Key([]types.Value{y}))
		}
	}
	return nil
}

func isBytes(t types.Type) bool     { return t.Kind == types.Binary || t.Kind == types.Varbinary }
func isTime(t types.Type) bool      { return t.Kind == types.Date || t.Kind == types.Time }
func isTimestamp(t types.Type) bool { return t.Kind == types.Timestamp || t.Kind == types.TimestampLTZ }

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func compare(op string, l, r cexpr, at parser.Expr) (cexpr, error) {
	// a string literal compared with a timestamp or date reads as one
	if l.t.IsString() && l.konst && (isTimestamp(r.t) || isTime(r.t)) {
		if cl, err := castExpr(l, r.t, at); err == nil {
			l = cl
		}
	}
	if r.t.IsString() && r.konst && (isTimestamp(l.t) || isTime(l.t)) {
		if cr, err := castExpr(r, l.t, at); err == nil {
			r = cr
		}
	}
	cmp := comparator(l.t, r.t)
	if cmp == nil {
		return cexpr{}, errAt(at, "cannot compare %s with %s", l.t, r.t)
	}
	var test func(int) bool
	switch op {
	case "=":
		test = func(c int) bool { return c == 0 }
	case "<>":
		test = func(c int) bool { return c != 0 }
	case "<":
		test = func(c int) bool { return c < 0 }
	case ">":
		test = func(c int) bool { return c > 0 }
	case "<=":
		test = func(c int) bool { return c <= 0 }
	case ">=":
		test = func(c int) bool { return c >= 0 }
	}
	f, g := l.eval, r.eval
	t := types.Type{Kind: types.Boolean, NotNull: bothNotNull(l, r)}
	if intComparable(l.t, r.t) && !genericOnly {
		// integers, times, booleans: the typed form (expr_typed.go)
		p, fl := intCompare(op, l, r)
		return cexpr{t: t, konst: l.konst && r.konst, col: -1, eval: evalOfPred(p), pred: p, filt: fl}, nil
	}
	if ((l.t.IsString() && r.t.IsString()) || (isBytes(l.t) && isBytes(r.t))) && !genericOnly {
		p := stringCompare(op, l, r)
		return cexpr{t: t, konst: l.konst && r.konst, col: -1, eval: evalOfPred(p), pred: p}, nil
	}
	// the common case of an integer column against an integer: no closure
	// indirection for the comparison
	if classOf(l.t, r.t) == numInt && l.t.IsInteger() && r.t.IsInteger() && op == "=" && r.konst && !l.konst {
		// against a constant: one closure call per row
		c := r.eval(nil)
		if c.Null {
			return konst(types.NullValue, t), nil
		}
		return cexpr{t: t, col: -1, eval: func(row []types.Value) types.Value {
			a := f(row)
			if a.Null {
				return types.NullValue
			}
			return types.BoolValue(a.I == c.I)
		}}, nil
	}
	if classOf(l.t, r.t) == numInt && l.t.IsInteger() && r.t.IsInteger() && op == "=" {
		return cexpr{t: t, konst: l.konst && r.konst, col: -1, eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.BoolValue(a.I == b.I)
		}}, nil
	}
	return cexpr{t: t, konst: l.konst && r.konst, col: -1, eval: func(row []types.Value) types.Value {
		a, b := f(row), g(row)
		if a.Null || b.Null {
			return types.NullValue
		}
		return types.BoolValue(test(cmp(a, b)))
	}}, nil
}

func castExpr(x cexpr, to types.Type, at parser.Expr) (cexpr, error) {
	fn, err := castFn(x.t, to)
	if err != nil {
		return cexpr{}, errAt(at, "%v", err)
	}
	f := x.eval
	t := to
	t.NotNull = x.t.NotNull && to.NotNull
	if x.t.NotNull && (x.t.Kind == to.Kind || to.IsString()) {
		t.NotNull = true
	}
	if x.t.Kind == to.Kind && to.Kind != types.Decimal && x.t.Kind != types.Null {
		// castFn is the identity: no closure around x
		x.t, x.col, x.whole = t, -1, nil
		return x, nil
	}
	return cexpr{t: t, konst: x.konst, col: -1, eval: func(r []types.Value) types.Value { return fn(f(r)) }}, nil
}

// commonType is the type CASE branches, COALESCE arguments and UNION
// columns are brought to.
func commonType(ts []types.Type) (types.Type, bool) {
	var out types.Type
	first := true
	nn := true
	for _, t := range ts {
		nn = nn && t.NotNull
		if t.Kind == types.Null {
			nn = false
			continue
		}
		if first {
			out, first = t, false
			continue
		}
		switch {
		case out.IsNumeric() && t.IsNumeric():
			switch classOf(out, t) {
			case numFloat:
				out = types.Type{Kind: types.Double}
			case numDecimal:
				a, b := decimalOf(out), decimalOf(t)
				s := max(a.Scale, b.Scale)
				out = adjustDecimal(max(a.Precision-a.Scale, b.Precision-b.Scale)+s, s)
			default:
				out = widerInt(out, t)
			}
		case out.IsString() && t.IsString():
			out = types.StringType
		case isTimestamp(out) && isTimestamp(t):
			out.Precision = max(out.Precision, t.Precision)
		case out.Kind == t.Kind:
		default:
			return out, false
		}
	}
	out.NotNull = nn && !first
	out.TimeAttr = types.NoTimeAttr
	return out, true
}

func (c *exprCompiler) caseExpr(e *parser.Case) (cexpr, error) {
	var operand cexpr
	var err error
	if e.Operand != nil {
		if operand, err = c.compile(e.Operand); err != nil {
			return cexpr{}, err
		}
	}
	conds := make([]cexpr, len(e.Whens))
	thens := make([]cexpr, len(e.Whens))
	var ts []types.Type
	for i, w := range e.Whens {
		cond, err := c.compile(w.Cond)
		if err != nil {
			return cexpr{}, err
		}
		if e.Operand != nil {
			if cond, err = compare("=", operand, cond, w.Cond); err != nil {
				return cexpr{}, err
			}
		} else if cond.t.Kind != types.Boolean && cond.t.Kind != types.Null {
			return cexpr{}, errAt(w.Cond, "WHEN needs a BOOLEAN condition, not %s", cond.t)
		}
		conds[i] = cond
		if thens[i], err = c.compile(w.Then); err != nil {
			return cexpr{}, err
		}
		ts = append(ts, thens[i].t)
	}
	els := konst(types.NullValue, types.Type{Kind: types.Null})
	if e.Else != nil {
		if els, err = c.compile(e.Else); err != nil {
			return cexpr{}, err
		}
	}
	ts = append(ts, els.t)
	t, ok := commonType(ts)
	if !ok {
		return cexpr{}, errAt(e, "CASE branches have incompatible types")
	}
	k := els.konst
	for i := range thens {
		if thens[i], err = castExpr(thens[i], t, e); err != nil {
			return cexpr{}, err
		}
		k = k && thens[i].konst && conds[i].konst
	}
	if els, err = castExpr(els, t, e); err != nil {
		return cexpr{}, err
	}
	cf := make([]evalFn, len(conds))
	tf := make([]evalFn, len(thens))
	for i := range conds {
		cf[i], tf[i] = conds[i].eval, thens[i].eval
	}
	ef := els.eval
	if sw, ok := c.intSwitch(e); ok && !k {
		// WHEN x = 0 THEN ... WHEN x = 1 THEN ...: x once, no comparisons
		// through closures (the Nexmark ddl's dateTime is one)
		xf, keys := intOf(sw), make([]int64, len(e.Whens))
		for i, w := range e.Whens {
			keys[i] = mustInt(w.Cond.(*parser.Binary).R)
		}
		if genericOnly {
			xe := sw.eval
			xf = func(r []types.Value) (int64, bool) { v := xe(r); return v.I, !v.Null }
		} else if reads, ok := leafReads(append(thens, els)); ok {
			// every branch a plain read of a projecting scan's leaf (the
			// dateTime CASE): read the slot, no closure per branch
			return cexpr{t: t, col: -1, eval: func(r []types.Value) types.Value {
				if x, ok := xf(r); ok {
					for i, key := range keys {
						if x == key {
							return r[reads[i].idx]
						}
					}
				}
				return r[reads[len(keys)].idx]
			}}, nil
		}
		return cexpr{t: t, col: -1, eval: func(r []types.Value) types.Value {
			if x, ok := xf(r); ok {
				for i, key := range keys {
					if x == key {
						return tf[i](r)
					}
				}
			}
			return ef(r)
		}}, nil
	}
	if !genericOnly {
		// the conditions' typed truth (expr_typed.go)
		ps := make([]predFn, len(conds))
		for i := range conds {
			ps[i] = predOf(conds[i])
		}
		return cexpr{t: t, konst: k, col: -1, eval: func(r []types.Value) types.Value {
			for i, p := range ps {
				if p(r) == triTrue {
					return tf[i](r)
				}
			}
			return ef(r)
		}}, nil
	}
	return cexpr{t: t, konst: k, col: -1, eval: func(r []types.Value) types.Value {
		for i, c := range cf {
			if v := c(r); !v.Null && v.Bool() {
				return tf[i](r)
			}
		}
		return ef(r)
	}}, nil
}

// leafReads returns the leaves that the expressions are plain reads of,
// when they all are.
func leafReads(xs []cexpr) ([]*leafRef, bool) {
	out := make([]*leafRef, len(xs))
	for i, x := range xs {
		if x.leaf == nil {
			return nil, false
		}
		out[i] = x.leaf
	}
	return out, true
}

func (c *exprCompiler) like(e *parser.Like) (cexpr, error) {
	xs, err := c.compileAll(e.X, e.Pattern)
	if err != nil {
		return cexpr{}, err
	}
	x, pat := xs[0], xs[1]
	if !pat.konst {
		return cexpr{}, errAt(e.Pattern, "LIKE needs a constant pattern")
	}
	escape := byte(0)
	if e.Escape != nil {
		esc, err := c.compile(e.Escape)
		if err != nil {
			return cexpr{}, err
		}
		if s := esc.eval(nil).S; len(s) == 1 {
			escape = s[0]
		}
	}
	pv := pat.eval(nil)
	if pv.Null {
		return konst(types.NullValue, types.Type{Kind: types.Boolean}), nil
	}
	var match func(string) bool
	if e.Similar {
		re, err := regexp.Compile("^(?:" + pv.S + ")$")
		if err != nil {
			return cexpr{}, errAt(e.Pattern, "invalid SIMILAR TO pattern: %v", err)
		}
		match = re.MatchString
	} else {
		match = likeMatcher(pv.S, escape)
	}
	f := x.eval
	not := e.Not
	t := types.Type{Kind: types.Boolean, NotNull: x.t.NotNull}
	if !genericOnly {
		p := func(r []types.Value) tri {
			v := f(r)
			switch {
			case v.Null:
				return triNull
			case match(v.S) != not:
				return triTrue
			}
			return triFalse
		}
		return cexpr{t: t, konst: x.konst, col: -1, eval: evalOfPred(p), pred: p}, nil
	}
	return cexpr{t: t, konst: x.konst, col: -1, eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		return types.BoolValue(match(v.S) != not)
	}}, nil
}

// likeMatcher compiles a LIKE pattern: prefix, suffix and contains
// patterns avoid regular expressions.
func likeMatcher(p string, escape byte) func(string) bool {
	simple := escape == 0 && !strings.Contains(p, "_")
	if simple {
		inner := strings.Trim(p, "%")
		if !strings.Contains(inner, "%") {
			pre, suf := strings.HasPrefix(p, "%"), strings.HasSuffix(p, "%") && len(p) > 0
			switch {
			case pre && suf:
				return func(s string) bool { return strings.Contains(s, inner) }
			case pre:
				return func(s string) bool { return strings.HasSuffix(s, inner) }
			case suf:
				return func(s string) bool { return strings.HasPrefix(s, inner) }
			default:
				return func(s string) bool { return s == p }
			}
		}
	}
	var b strings.Builder
	b.WriteString("(?s)^")
	for i := 0; i < len(p); i++ {
		ch := p[i]
		switch {
		case escape != 0 && ch == escape && i+1 < len(p):
			i++
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case ch == '%':
			b.WriteString(".*")
		case ch == '_':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	b.WriteString("$")
	re, _ := regexp.Compile(b.String())
	return re.MatchString
}

func extract(unit string, x cexpr, at parser.Expr) (cexpr, error) {
	if !isTimestamp(x.t) && x.t.Kind != types.Date {
		return cexpr{}, errAt(at, "EXTRACT needs a DATE or TIMESTAMP, not %s", x.t)
	}
	f := x.eval
	date := x.t.Kind == types.Date
	get := map[string]func(us int64) int64{
		"YEAR":   func(us int64) int64 { return int64(microsToTime(us).Year()) },
		"MONTH":  func(us int64) int64 { return int64(microsToTime(us).Month()) },
		"DAY":    func(us int64) int64 { return int64(microsToTime(us).Day()) },
		"HOUR":   func(us int64) int64 { return int64(microsToTime(us).Hour()) },
		"MINUTE": func(us int64) int64 { return int64(microsToTime(us).Minute()) },
		"SECOND": func(us int64) int64 { return int64(microsToTime(us).Second()) },
		"DOW":    func(us int64) int64 { return int64(microsToTime(us).Weekday()) + 1 },
		"DOY":    func(us int64) int64 { return int64(microsToTime(us).YearDay()) },
		"EPOCH":  func(us int64) int64 { return floorDiv(us, 1e6) },
	}[unit]
	if get == nil {
		return cexpr{}, errAt(at, "unsupported EXTRACT unit %s", unit)
	}
	return cexpr{t: types.Type{Kind: types.BigInt, NotNull: x.t.NotNull}, konst: x.konst, col: -1, eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		us := v.I
		if date {
			us *= 86400e6
		}
		return types.IntValue(get(us))
	}}, nil
}

// intSwitch recognises a searched CASE whose conditions all compare one
// integer expression (the same text) with integer literals, and returns
// that expression compiled.
func (c *exprCompiler) intSwitch(e *parser.Case) (cexpr, bool) {
	if e.Operand != nil || len(e.Whens) < 2 {
		return cexpr{}, false
	}
	var text string
	for i, w := range e.Whens {
		b, ok := w.Cond.(*parser.Binary)
		if !ok || b.Op != "=" {
			return cexpr{}, false
		}
		if lit, ok := b.R.(*parser.Literal); !ok || lit.Kind != parser.NumberLit || !isIntText(lit.Text) {
			return cexpr{}, false
		}
		if i == 0 {
			text = parser.ExprString(b.L)
		} else if parser.ExprString(b.L) != text {
			return cexpr{}, false
		}
	}
	x, err := c.compile(e.Whens[0].Cond.(*parser.Binary).L)
	if err != nil || !x.t.IsInteger() || x.konst {
		return cexpr{}, false
	}
	return x, true
}

func isIntText(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func mustInt(e parser.Expr) int64 {
	n, _ := strconv.ParseInt(e.(*parser.Literal).Text, 10, 64)
	return n
}
