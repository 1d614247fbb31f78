package expr

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// EvalFn computes a value from a row's values. Expressions compile once,
// at planning, into a tree of evalFns that read fields by index: the hot
// path does no name lookups, parsing or reflection.
type EvalFn func(r []types.Value) types.Value

// Expr is a compiled expression: its type and its evaluation.
type Expr struct {
	Type types.Type
	Eval EvalFn
	// Const is set when the expression reads no column (so it can be
	// folded at planning).
	Const bool
	// Col is the input column the expression reads when it is a bare
	// column reference, else -1.
	Col int
	// Deps are the leaves of a projecting scan the expression reads (see
	// leaf.go); nil when built outside the compiler.
	Deps *DepSet
	// whole is set on a bare reference to a column of a projecting scan,
	// so that a field access reads the field alone.
	whole *leafRef
	// leaf is set when the expression is a plain read of a projecting
	// scan's leaf (a Calc copies it without calling eval).
	leaf *leafRef
	// ival, pred and filt are typed forms of Eval, when the expression
	// has them (expr_typed.go): an integer-layout value as an int64, a
	// BOOLEAN as a truth value, and "is TRUE". Whoever replaces eval
	// clears them.
	ival IntFn
	pred predFn
	filt FilterFn
	// dec is the typed form of a DECIMAL expression whose unscaled value
	// usually fits an int64 (decimal_typed.go)
	dec decimalFn
	// bounds, on a BOOLEAN over a projecting scan, are conjuncts it implies
	// (a column of the scan compared with a constant): the expression is
	// TRUE only where each holds (filter push-down: Bounds).
	bounds []bound
	// fold is set on LOWER(x) and UPPER(x): a comparison with a constant
	// compares x by bytes, without making the folded string
	// (fold_compare.go). Whoever replaces eval clears it.
	fold *foldOf
}

// bound is a conjunct of a filter: a predicate on a projecting scan's
// leaf.
type bound struct {
	leaf *leafRef
	p    connector.Predicate
}

// boundOf is the bound of "l op r" when one side is a column of a
// projecting scan and the other a constant.
func boundOf(op string, l, r Expr) []bound {
	switch {
	case op == "<>":
		return nil
	case l.leaf != nil && r.leaf == nil:
	case l.leaf == nil && r.leaf != nil:
		// the column on the left: r op l is l op' r
		l, r = r, l
		op = map[string]string{"=": "=", "<": ">", ">": "<", "<=": ">=", ">=": "<="}[op]
	default:
		return nil
	}
	if l.leaf.field >= 0 || l.leaf.col < 0 || l.leaf.comp != nil || !r.Const || r.Deps != nil && len(r.Deps.leaves) > 0 {
		return nil
	}
	cmp := Comparator(l.Type, r.Type)
	if cmp == nil {
		return nil
	}
	v := r.Eval(nil)
	if v.Null {
		return nil
	}
	return []bound{{leaf: l.leaf, p: connector.Predicate{Col: l.leaf.col, Op: op, Value: v, Compare: cmp}}}
}

// Column is a column visible to an expression.
type Column struct {
	Qual string // table name or alias
	Name string
	Type types.Type
	// Win marks a window TVF's window_start/window_end (winStartCol,
	// winEndCol), kept through projections, for window joins.
	Win uint8
}

// Scope is the row layout an expression is compiled against.
type Scope struct {
	Cols []Column
}

// Schema is the scope's columns as a schema.
func (s *Scope) Schema() types.Schema {
	out := make(types.Schema, len(s.Cols))
	for i, c := range s.Cols {
		out[i] = types.Field{Name: c.Name, Type: c.Type}
	}
	return out
}

// Compiler compiles expressions against a scope. subst, when set, is
// consulted first for every sub-expression: the planner uses it to map
// GROUP BY expressions, aggregate calls and window properties to the
// columns of an aggregation's output.
type Compiler struct {
	Scope *Scope
	Subst func(e parser.Expr) (Expr, bool, error)
	// What names the clause, for errors ("WHERE", "SELECT").
	What string
	// cols, when set, are the expressions the scope's columns stand for
	// (a Calc fused into the one below it reads its input's row).
	Cols []Expr
	// deps collects the leaves read by the expression being compiled.
	deps *DepSet
	// GenericOnly compiles without typed forms (expr_typed.go): the
	// reference tests compare the typed forms with.
	GenericOnly bool
	// depth is how deep Compile is in the expression tree (MaxDepth).
	depth int
	// Funcs resolves the user-defined functions a call may name (upper
	// case names).
	Funcs map[string]Function
}

// MaxDepth bounds how deeply an expression nests (a flat chain of 100 K
// "+" or AND is 100 K deep): deeper ones are refused with an error rather
// than exhausting the stack of the compiler's recursion.
const MaxDepth = 10_000

// Column returns the expression of scope column i.
func (c *Compiler) Column(i int) Expr {
	if c.Cols != nil {
		x := c.Cols[i]
		x.Type = c.Scope.Cols[i].Type
		return x
	}
	return colRef(i, c.Scope.Cols[i].Type, c.GenericOnly)
}

// ErrAt is an error placed at e's line and column.
func ErrAt(e parser.Expr, format string, args ...any) error {
	return parser.Errorf(e.ExprPos(), format, args...)
}

// Resolve finds the column an identifier names: the longest prefix that
// names a column (qualified or not), the rest being field accesses.
func (c *Compiler) Resolve(id *parser.Ident) (int, []string, error) {
	parts := id.Parts
	if len(parts) >= 2 {
		idx, n := -1, 0
		for i, col := range c.Scope.Cols {
			if col.Qual != "" && strings.EqualFold(col.Qual, parts[0]) && strings.EqualFold(col.Name, parts[1]) {
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
	for i, col := range c.Scope.Cols {
		if col.Name == parts[0] {
			if idx < 0 {
				idx = i
			}
			n++
		}
	}
	if n == 0 {
		for i, col := range c.Scope.Cols {
			if strings.EqualFold(col.Name, parts[0]) {
				if idx < 0 {
					idx = i
				}
				n++
			}
		}
	}
	if n > 1 {
		return 0, nil, ErrAt(id, "column '%s' is ambiguous", parts[0])
	}
	if n == 0 {
		return 0, nil, ErrAt(id, "column '%s' not found in any table%s", strings.Join(parts, "."), c.available())
	}
	return idx, parts[1:], nil
}

func (c *Compiler) available() string {
	if len(c.Scope.Cols) == 0 {
		return ""
	}
	names := make([]string, 0, len(c.Scope.Cols))
	for _, col := range c.Scope.Cols {
		if col.Qual != "" {
			names = append(names, col.Qual+"."+col.Name)
		} else {
			names = append(names, col.Name)
		}
	}
	if len(names) > 12 {
		names = append(names[:12], "...")
	}
	return " (available: " + strings.Join(names, ", ") + ")"
}

func fieldAccess(x Expr, name string, at parser.Expr, generic bool) (Expr, error) {
	if x.Type.Kind != types.Structured {
		return Expr{}, ErrAt(at, "cannot access field '%s' of a value of type %s", name, x.Type)
	}
	fi := -1
	for i, f := range x.Type.Fields {
		if f.Name == name {
			fi = i
			break
		}
	}
	if fi < 0 {
		for i, f := range x.Type.Fields {
			if strings.EqualFold(f.Name, name) {
				fi = i
				break
			}
		}
	}
	if fi < 0 {
		return Expr{}, ErrAt(at, "field '%s' not found in %s", name, x.Type)
	}
	inner := x.Eval
	ft := x.Type.Fields[fi].Type
	if !x.Type.NotNull {
		ft = ft.Nullable()
	}
	if x.whole != nil {
		return fieldRef(x.whole, fi, ft, generic), nil
	}
	return Expr{Type: ft, Col: -1, Eval: func(r []types.Value) types.Value {
		v := inner(r)
		l := v.List()
		if v.Null || fi >= len(l) {
			return types.NullValue
		}
		return l[fi]
	}}, nil
}

// ColRef reads column i, of type t, of the row.
func ColRef(i int, t types.Type) Expr { return colRef(i, t, false) }

func colRef(i int, t types.Type, generic bool) Expr {
	return withTyped(Expr{Type: t, Col: i, Eval: func(r []types.Value) types.Value { return r[i] }}, slotInt(i), generic)
}

// Const is the constant v of type t.
func Const(v types.Value, t types.Type) Expr { return konst(v, t, false) }

func konst(v types.Value, t types.Type, generic bool) Expr {
	return konstTyped(Expr{Type: t, Const: true, Col: -1, Eval: func([]types.Value) types.Value { return v }}, v, generic)
}

// Compile compiles e.
func (c *Compiler) Compile(e parser.Expr) (Expr, error) {
	if c.Subst != nil {
		if ce, ok, err := c.Subst(e); err != nil || ok {
			return ce, err
		}
	}
	if c.depth >= MaxDepth {
		return Expr{}, ErrAt(e, "expression nested more than %d deep (a chain of that many operators): split it", MaxDepth)
	}
	c.depth++
	defer func() { c.depth-- }()
	// collect the leaves e reads (its sub-expressions' and columns')
	outer := c.deps
	c.deps = &DepSet{}
	ce, err := c.compile1(e)
	d := c.deps
	c.deps = outer
	if err != nil {
		return ce, err
	}
	if ce.Const {
		// fold constants: evaluate once at planning; a failure (1/0) is
		// the statement's error, as Flink's planner reports it
		v, err := foldConst(ce)
		if err != nil {
			return Expr{}, ErrAt(e, "%s", strings.TrimPrefix(err.Error(), "sql: "))
		}
		return konst(v, ce.Type, c.GenericOnly), nil
	}
	ce.Deps, ce.whole = d, nil
	if outer != nil {
		outer.add(d)
	}
	return ce, nil
}

func (c *Compiler) compile1(e parser.Expr) (Expr, error) {
	switch e := e.(type) {
	case *parser.Ident:
		idx, rest, err := c.Resolve(e)
		if err != nil {
			return Expr{}, err
		}
		x := c.Column(idx)
		if x.whole != nil && len(rest) > 0 {
			// a field of a projecting scan's ROW: read it alone
			if x, err = fieldAccess(x, rest[0], e, c.GenericOnly); err != nil {
				return Expr{}, err
			}
			rest = rest[1:]
		}
		c.deps.use(x)
		for _, f := range rest {
			if x, err = fieldAccess(x, f, e, c.GenericOnly); err != nil {
				return Expr{}, err
			}
		}
		return x, nil
	case *parser.Field:
		x, err := c.Compile(e.X)
		if err != nil {
			return Expr{}, err
		}
		return fieldAccess(x, e.Name, e, c.GenericOnly)
	case *parser.Literal:
		return literal(e, c.GenericOnly)
	case *parser.TypedLiteral:
		switch e.Type {
		case "DATE":
			d, ok := parseDate(e.Text)
			if !ok {
				return Expr{}, ErrAt(e, "invalid DATE literal '%s'", e.Text)
			}
			return konst(types.IntValue(d), types.Type{Kind: types.Date, NotNull: true}, c.GenericOnly), nil
		case "TIME":
			// Flink's TIME literal: precision from the fraction written,
			// 0 without one (TIME '12:34:56' is a TIME(0))
			us, ok := parseTime(e.Text)
			if !ok {
				return Expr{}, ErrAt(e, "invalid TIME literal '%s'", e.Text)
			}
			p := 0
			if i := strings.IndexByte(e.Text, '.'); i >= 0 {
				p = min(len(strings.TrimSpace(e.Text[i+1:])), 9)
			}
			return konst(types.IntValue(us), types.Type{Kind: types.Time, Precision: p, NotNull: true}, c.GenericOnly), nil
		case "TIMESTAMP", "TIMESTAMP_LTZ":
			us, ok := parseTimestamp(e.Text)
			if !ok {
				return Expr{}, ErrAt(e, "invalid TIMESTAMP literal '%s'", e.Text)
			}
			k := types.Timestamp
			if e.Type == "TIMESTAMP_LTZ" {
				k = types.TimestampLTZ
			}
			return konst(types.IntValue(us), types.Type{Kind: k, Precision: 3, NotNull: true}, c.GenericOnly), nil
		}
		return Expr{}, ErrAt(e, "%s literals are not supported yet", e.Type)
	case *parser.IntervalLit:
		v, months, err := IntervalValue(e)
		if err != nil {
			return Expr{}, err
		}
		return konst(types.IntValue(v), types.Type{Kind: types.Interval, Months: months, NotNull: true}, c.GenericOnly), nil
	case *parser.Unary:
		x, err := c.Compile(e.X)
		if err != nil {
			return Expr{}, err
		}
		switch e.Op {
		case "+":
			return x, nil
		case "NOT":
			if x.Type.Kind != types.Boolean && x.Type.Kind != types.Null {
				return Expr{}, ErrAt(e, "NOT needs a BOOLEAN, not %s", x.Type)
			}
			return notExpr(x, c.GenericOnly), nil
		case "-":
			// 0 - x in x's integer type, so that -CAST(-128 AS TINYINT)
			// wraps as Java's does
			zt := types.Type{Kind: types.Int, NotNull: true}
			if x.Type.IsInteger() {
				zt.Kind = x.Type.Kind
			}
			zero := konst(types.IntValue(0), zt, c.GenericOnly)
			return arith("-", zero, x, e, c.GenericOnly)
		}
	case *parser.Binary:
		return c.binary(e)
	case *parser.Call:
		return c.call(e)
	case *parser.Case:
		return c.caseExpr(e)
	case *parser.Cast:
		x, err := c.Compile(e.X)
		if err != nil {
			return Expr{}, err
		}
		if !e.Try {
			return strictCast(x, e)
		}
		return Cast(x, e.Type, e)
	case *parser.Between:
		xs, err := c.compileAll(e.X, e.Lo, e.Hi)
		if err != nil {
			return Expr{}, err
		}
		x, lo, hi := xs[0], xs[1], xs[2]
		ge, err := compare(">=", x, lo, e, c.GenericOnly)
		if err != nil {
			return Expr{}, err
		}
		le, err := compare("<=", x, hi, e, c.GenericOnly)
		if err != nil {
			return Expr{}, err
		}
		r := logic("AND", ge, le, c.GenericOnly)
		if e.Not {
			return notExpr(r, c.GenericOnly), nil
		}
		return r, nil
	case *parser.In:
		if in, ok := c.stringIn(e); ok {
			// constants of one string x: x once (case_string.go)
			return in, nil
		}
		x, err := c.Compile(e.X)
		if err != nil {
			return Expr{}, err
		}
		var acc Expr
		for i, item := range e.List {
			it, err := c.Compile(item)
			if err != nil {
				return Expr{}, err
			}
			eq, err := compare("=", x, it, item, c.GenericOnly)
			if err != nil {
				return Expr{}, err
			}
			if i == 0 {
				acc = eq
			} else {
				acc = logic("OR", acc, eq, c.GenericOnly)
			}
		}
		if e.Not {
			return notExpr(acc, c.GenericOnly), nil
		}
		return acc, nil
	case *parser.Like:
		return c.like(e)
	case *parser.Is:
		x, err := c.Compile(e.X)
		if err != nil {
			return Expr{}, err
		}
		f := x.Eval
		var out EvalFn
		switch e.What {
		case "NULL", "UNKNOWN":
			out = func(r []types.Value) types.Value { return types.BoolValue(f(r).Null) }
		case "TRUE":
			out = func(r []types.Value) types.Value { v := f(r); return types.BoolValue(!v.Null && v.Bool()) }
		case "FALSE":
			out = func(r []types.Value) types.Value { v := f(r); return types.BoolValue(!v.Null && !v.Bool()) }
		case "DISTINCT":
			y, err := c.Compile(e.From)
			if err != nil {
				return Expr{}, err
			}
			eq, err := compare("=", x, y, e, c.GenericOnly)
			if err != nil {
				return Expr{}, err
			}
			g, eqf := y.Eval, eq.Eval
			out = func(r []types.Value) types.Value {
				a, b := f(r), g(r)
				if a.Null || b.Null {
					return types.BoolValue(a.Null != b.Null)
				}
				return types.BoolValue(!eqf(r).Bool())
			}
		}
		res := Expr{Type: types.Type{Kind: types.Boolean, NotNull: true}, Eval: out, Const: x.Const, Col: -1}
		if e.Not {
			g := res.Eval
			res.Eval = func(r []types.Value) types.Value { return types.BoolValue(!g(r).Bool()) }
		}
		if (e.What == "NULL" || e.What == "UNKNOWN") && !c.GenericOnly {
			// x IS [NOT] NULL as a filter: no Value for the result
			p := isNullTyped(x, e.Not)
			res.pred, res.filt, res.Eval = p, func(r []types.Value) bool { return p(r) == triTrue }, evalOfPred(p)
		}
		return res, nil
	case *parser.Index:
		xs, err := c.compileAll(e.X, e.Index)
		if err != nil {
			return Expr{}, err
		}
		x, idx := xs[0], xs[1]
		f, g := x.Eval, idx.Eval
		switch x.Type.Kind {
		case types.Array:
			return Expr{Type: x.Type.Elem.Nullable(), Col: -1, Eval: func(r []types.Value) types.Value {
				a, i := f(r), g(r)
				l := a.List()
				if a.Null || i.Null || i.I < 1 || int(i.I) > len(l) {
					return types.NullValue
				}
				return l[i.I-1]
			}}, nil
		case types.Map:
			return Expr{Type: x.Type.Elem.Nullable(), Col: -1, Eval: func(r []types.Value) types.Value {
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
		return Expr{}, ErrAt(e, "cannot index a value of type %s", x.Type)
	case *parser.Extract:
		x, err := c.Compile(e.X)
		if err != nil {
			return Expr{}, err
		}
		return extract(e.Unit, x, e)
	case *parser.Subquery:
		return Expr{}, ErrAt(e, "a subquery is supported as a condition of WHERE (x [NOT] IN (SELECT ...), [NOT] EXISTS (...), joined by AND) and as an uncorrelated scalar subquery in WHERE and SELECT, not here")
	case *parser.Descriptor, *parser.TableArg, *parser.NamedArg:
		return Expr{}, ErrAt(e, "this argument is only allowed in a window table function")
	}
	return Expr{}, ErrAt(e, "unsupported expression %s", parser.ExprString(e))
}

func literal(e *parser.Literal, generic bool) (Expr, error) {
	switch e.Kind {
	case parser.NullLit:
		return konst(types.NullValue, types.Type{Kind: types.Null}, generic), nil
	case parser.BoolLit:
		return konst(types.BoolValue(e.Text == "TRUE"), types.Type{Kind: types.Boolean, NotNull: true}, generic), nil
	case parser.StringLit:
		return konst(types.StringValue(e.Text), types.Type{Kind: types.Varchar, Length: max(len(e.Text), 1), NotNull: true}, generic), nil
	}
	text := e.Text
	if strings.ContainsAny(text, "eE") {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return Expr{}, ErrAt(e, "invalid number %s", text)
		}
		return konst(types.FloatValue(f), types.Type{Kind: types.Double, NotNull: true}, generic), nil
	}
	if !strings.Contains(text, ".") {
		n, err := strconv.ParseInt(text, 10, 64)
		if err == nil {
			if n >= math.MinInt32 && n <= math.MaxInt32 {
				return konst(types.IntValue(n), types.Type{Kind: types.Int, NotNull: true}, generic), nil
			}
			return konst(types.IntValue(n), types.Type{Kind: types.BigInt, NotNull: true}, generic), nil
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
		return Expr{}, ErrAt(e, "number %s has more than 38 digits", text)
	}
	t := types.DecimalType(p, scale)
	t.NotNull = true
	u, ok := parseDecimal(text, scale)
	if !ok {
		return Expr{}, ErrAt(e, "invalid number %s", text)
	}
	return konst(decValue(u, t), t, generic), nil
}

// IntervalValue returns an interval literal in milliseconds (day-time) or
// months (year-month).
func IntervalValue(e *parser.IntervalLit) (int64, bool, error) {
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
				return 0, false, ErrAt(e, "invalid interval '%s'", e.Text)
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
			return 0, false, ErrAt(e, "invalid interval '%s' %s TO %s", e.Text, e.Unit, e.To)
		}
		for i, f := range fields {
			x, err := strconv.ParseFloat(f, 64)
			if err != nil {
				return 0, false, ErrAt(e, "invalid interval '%s'", e.Text)
			}
			v += int64(x * float64(unitMs[order[start+i]]))
		}
	case e.Unit == "YEAR" || e.Unit == "MONTH" || e.Unit == "QUARTER":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return 0, false, ErrAt(e, "invalid interval '%s'", e.Text)
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
			return 0, false, ErrAt(e, "invalid interval '%s'", e.Text)
		}
		v = int64(math.Round(x * float64(unitMs[e.Unit])))
	}
	if neg {
		v = -v
	}
	return v, months, nil
}

func bothNotNull(a, b Expr) bool { return a.Type.NotNull && b.Type.NotNull }

func (c *Compiler) binary(e *parser.Binary) (Expr, error) {
	l, err := c.Compile(e.L)
	if err != nil {
		return Expr{}, err
	}
	r, err := c.Compile(e.R)
	if err != nil {
		return Expr{}, err
	}
	switch e.Op {
	case "AND", "OR":
		for _, x := range []Expr{l, r} {
			if x.Type.Kind != types.Boolean && x.Type.Kind != types.Null {
				return Expr{}, ErrAt(e, "%s needs BOOLEAN operands, not %s", e.Op, x.Type)
			}
		}
		return logic(e.Op, l, r, c.GenericOnly), nil
	case "=", "<>", "<", ">", "<=", ">=":
		return compare(e.Op, l, r, e, c.GenericOnly)
	case "||":
		for _, x := range []Expr{l, r} {
			if !x.Type.IsString() && x.Type.Kind != types.Null && x.Type.Kind != types.Binary && x.Type.Kind != types.Varbinary {
				return Expr{}, ErrAt(e, "|| needs string operands, not %s and %s", l.Type, r.Type)
			}
		}
		return concat([]Expr{l, r}), nil
	}
	return arith(e.Op, l, r, e, c.GenericOnly)
}

// Logic is l AND r or l OR r (op), with SQL's three-valued logic.
func Logic(op string, l, r Expr) Expr { return logic(op, l, r, false) }

func logic(op string, l, r Expr, generic bool) Expr {
	t := types.Type{Kind: types.Boolean, NotNull: bothNotNull(l, r)}
	// three-valued: the typed form (expr_typed.go) is the evaluation;
	// logicGeneric is what it must equal
	if generic {
		return Expr{Type: t, Eval: logicGeneric(op, l, r), Const: l.Const && r.Const, Col: -1}
	}
	p, f := logicTyped(op, l, r)
	var bounds []bound
	if op == "AND" && len(l.bounds)+len(r.bounds) > 0 {
		bounds = append(append(bounds, l.bounds...), r.bounds...)
	}
	return Expr{Type: t, Eval: evalOfPred(p), pred: p, filt: f, Const: l.Const && r.Const, Col: -1, bounds: bounds}
}

// logicGeneric is AND and OR on Values, the reference for the typed form.
func logicGeneric(op string, l, r Expr) EvalFn {
	f, g := l.Eval, r.Eval
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

func notExpr(x Expr, generic bool) Expr {
	if generic {
		return Expr{Type: x.Type, Const: x.Const, Col: -1, Eval: notGeneric(x)}
	}
	p, f := notTyped(x)
	return Expr{Type: x.Type, Const: x.Const, Col: -1, Eval: evalOfPred(p), pred: p, filt: f}
}

// notGeneric is NOT on Values, the reference for the typed form.
func notGeneric(x Expr) EvalFn {
	f := x.Eval
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

// wrapShift is the shift that brings an int64 to the width of integer kind
// k: v<<s>>s keeps the low bits with their sign, as Java's arithmetic and
// primitive casts do, and Flink keeps an integer expression in its declared
// type (CAST(127 AS TINYINT) + CAST(1 AS TINYINT) is -128, INT's
// 2147483647 * 2 is -2). 0 (no change) for BIGINT and other kinds.
func wrapShift(k types.Kind) uint {
	switch k {
	case types.TinyInt:
		return 56
	case types.SmallInt:
		return 48
	case types.Int:
		return 32
	}
	return 0
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

func arith(op string, l, r Expr, at parser.Expr, generic bool) (Expr, error) {
	f, g := l.Eval, r.Eval
	nn := bothNotNull(l, r)
	k := l.Const && r.Const
	// time arithmetic
	lt, rt := l.Type.Kind, r.Type.Kind
	isTS := func(k types.Kind) bool { return k == types.Timestamp || k == types.TimestampLTZ }
	if (isTS(lt) || lt == types.Date || lt == types.Time) && rt == types.Interval && (op == "+" || op == "-") {
		if r.Type.Months && lt == types.Time {
			return Expr{}, ErrAt(at, "cannot apply '%s' to TIME and a year-month interval", op)
		}
		if r.Type.Months {
			return Expr{}, ErrAt(at, "year-month intervals on timestamps are not supported yet")
		}
		sign := int64(1)
		if op == "-" {
			sign = -1
		}
		if lt == types.Date {
			return Expr{Type: types.Type{Kind: types.Date, NotNull: nn}, Const: k, Col: -1, Eval: func(row []types.Value) types.Value {
				a, b := f(row), g(row)
				if a.Null || b.Null {
					return types.NullValue
				}
				return types.IntValue(a.I + sign*b.I/86400000)
			}}, nil
		}
		if lt == types.Time {
			// the time of day wraps around, as Flink's
			t := l.Type
			t.NotNull = nn
			return Expr{Type: t, Const: k, Col: -1, Eval: func(row []types.Value) types.Value {
				a, b := f(row), g(row)
				if a.Null || b.Null {
					return types.NullValue
				}
				us := a.I + sign*b.I*1000
				return types.IntValue(us - FloorDiv(us, 86400e6)*86400e6)
			}}, nil
		}
		t := l.Type
		t.TimeAttr = types.NoTimeAttr
		t.NotNull = nn
		return Expr{Type: t, Const: k, Col: -1, Eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.IntValue(a.I + sign*b.I*1000)
		}}, nil
	}
	if lt == types.Interval && (isTS(rt) || rt == types.Time) && op == "+" {
		return arith(op, r, l, at, generic)
	}
	if lt == types.Interval && rt == types.Interval && (op == "+" || op == "-") {
		sign := int64(1)
		if op == "-" {
			sign = -1
		}
		return Expr{Type: l.Type, Const: k, Col: -1, Eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.IntValue(a.I + sign*b.I)
		}}, nil
	}
	if !isNumOrNull(l.Type) || !isNumOrNull(r.Type) {
		return Expr{}, ErrAt(at, "cannot apply '%s' to %s and %s", op, l.Type, r.Type)
	}
	switch classOf(l.Type, r.Type) {
	case numInt:
		t := widerInt(l.Type, r.Type)
		t.NotNull = nn
		sh := wrapShift(t.Kind)
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
		iv := intArith(op, l, r, sh)
		ce := Expr{Type: t, Const: k, Col: -1, Eval: evalOfInt(iv), ival: iv}
		if generic {
			ce.ival, ce.Eval = nil, func(row []types.Value) types.Value {
				a, b := f(row), g(row)
				if a.Null || b.Null {
					return types.NullValue
				}
				return types.IntValue(fn(a.I, b.I) << sh >> sh)
			}
		}
		return ce, nil
	case numFloat:
		fa, fb := toFloatFn(l.Type), toFloatFn(r.Type)
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
		return Expr{Type: types.Type{Kind: types.Double, NotNull: nn}, Const: k, Col: -1, Eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.FloatValue(fn(fa(a), fb(b)))
		}}, nil
	}
	// decimal
	da, db := decimalOf(l.Type), decimalOf(r.Type)
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
	if op == "*" && int64Layout(l.Type) && int64Layout(r.Type) && (l.Const || r.Const) && !(l.Const && r.Const) {
		// a constant times an int64 decimal (q1's 0.908 * price): the
		// constant's unscaled value read once
		cv, x := l, r
		if r.Const {
			cv, x = r, l
		}
		c := cv.Eval(nil)
		if c.Null {
			return konst(types.NullValue, t, generic), nil
		}
		ci, xi := c.I, IntOf(x) // x's value is its I (int64Layout)
		da, db := decimalOf(cv.Type), decimalOf(x.Type)
		scale := da.Scale + db.Scale
		// |b| <= lim: ci * b cannot overflow; with no rescale and a result
		// type above 18 digits, every such product is the result itself
		// (decMul64 would give the same, with more tests)
		lim := int64(-1)
		if ci != 0 && ci != math.MinInt64 && scale == out.Scale && out.Precision > 18 {
			lim = math.MaxInt64 / max(ci, -ci)
		}
		slow := func(b int64) types.Value {
			if v, ok := decMul64(ci, b, scale, out); ok {
				return v
			}
			return decArithBig(op, c, types.Value{I: b}, cv.Type, x.Type, da, db, out)
		}
		ce := Expr{Type: t, Col: -1, Eval: func(row []types.Value) types.Value {
			b, ok := xi(row)
			if !ok {
				return types.NullValue
			}
			if b <= lim && b >= -lim {
				return types.Value{I: ci * b}
			}
			return slow(b)
		}}
		if !generic {
			// the typed form (decimal_typed.go): the product as an int64
			ce.dec = func(row []types.Value) (int64, *big.Int, bool) {
				b, ok := xi(row)
				if !ok {
					return 0, nil, false
				}
				if b <= lim && b >= -lim {
					return ci * b, nil, true
				}
				return decParts(slow(b), t)
			}
		}
		return ce, nil
	}
	ev := func(row []types.Value) types.Value {
		a, b := f(row), g(row)
		if a.Null || b.Null {
			return types.NullValue
		}
		if fast {
			// the int64 fast path (decimal_fast.go); big on overflow
			if x, ok := decInt64(a, l.Type); ok {
				if y, ok := decInt64(b, r.Type); ok {
					if v, ok := decArith64(op, x, y, da, db, out); ok {
						return v
					}
				}
			}
		}
		return decArithBig(op, a, b, l.Type, r.Type, da, db, out)
	}
	return Expr{Type: t, Const: k, Col: -1, Eval: ev}, nil
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

// foldConst evaluates a constant expression, returning the runtimeError
// it panics with (division by zero) as an error.
func foldConst(ce Expr) (v types.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			re, ok := r.(runtimeError)
			if !ok {
				panic(r)
			}
			err = re
		}
	}()
	return ce.Eval(nil), nil
}

// runtimeError is a failure of an expression on a record (division by
// zero); it fails the job, as in Flink.
type runtimeError string

func (e runtimeError) Error() string { return "sql: " + string(e) }

// Comparator returns a three-way comparison of non-null values of types a
// and b, or nil when they do not compare.
func Comparator(a, b types.Type) func(x, y types.Value) int {
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
		s := max(da.Scale, db.Scale)
		return func(x, y types.Value) int {
			if x.X == nil && y.X == nil {
				// both held compactly (a wide DECIMAL's value that fits an
				// int64, Nexmark q14's 0.908 * price): no big.Int
				p, ok1 := rescale64(x.I, da.Scale, s)
				q, ok2 := rescale64(y.I, db.Scale, s)
				if ok1 && ok2 {
					return cmpInt(p, q)
				}
			}
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

func compare(op string, l, r Expr, at parser.Expr, generic bool) (Expr, error) {
	// a string literal compared with a timestamp or date reads as one
	if l.Type.IsString() && l.Const && (isTimestamp(r.Type) || isTime(r.Type)) {
		if cl, err := Cast(l, r.Type, at); err == nil {
			l = cl
		}
	}
	if r.Type.IsString() && r.Const && (isTimestamp(l.Type) || isTime(l.Type)) {
		if cr, err := Cast(r, l.Type, at); err == nil {
			r = cr
		}
	}
	res, err := compareExpr(op, l, r, at, generic)
	if err == nil {
		res.bounds = boundOf(op, l, r)
	}
	return res, err
}

func compareExpr(op string, l, r Expr, at parser.Expr, generic bool) (Expr, error) {
	cmp := Comparator(l.Type, r.Type)
	if cmp == nil {
		return Expr{}, ErrAt(at, "cannot compare %s with %s", l.Type, r.Type)
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
	f, g := l.Eval, r.Eval
	t := types.Type{Kind: types.Boolean, NotNull: bothNotNull(l, r)}
	if intComparable(l.Type, r.Type) && !generic {
		// integers, times, booleans: the typed form (expr_typed.go)
		p, fl := intCompare(op, l, r)
		return Expr{Type: t, Const: l.Const && r.Const, Col: -1, Eval: evalOfPred(p), pred: p, filt: fl}, nil
	}
	if isDecOrInt(l.Type) && isDecOrInt(r.Type) && (l.Type.Kind == types.Decimal || r.Type.Kind == types.Decimal) && !generic {
		// decimals: int64s when the values fit (decimal_typed.go)
		p := decCompare(op, l, r)
		return Expr{Type: t, Const: l.Const && r.Const, Col: -1, Eval: evalOfPred(p), pred: p}, nil
	}
	if ((l.Type.IsString() && r.Type.IsString()) || (isBytes(l.Type) && isBytes(r.Type))) && !generic {
		p := stringCompare(op, l, r)
		return Expr{Type: t, Const: l.Const && r.Const, Col: -1, Eval: evalOfPred(p), pred: p}, nil
	}
	// the common case of an integer column against an integer: no closure
	// indirection for the comparison
	if classOf(l.Type, r.Type) == numInt && l.Type.IsInteger() && r.Type.IsInteger() && op == "=" && r.Const && !l.Const {
		// against a constant: one closure call per row
		c := r.Eval(nil)
		if c.Null {
			return konst(types.NullValue, t, generic), nil
		}
		return Expr{Type: t, Col: -1, Eval: func(row []types.Value) types.Value {
			a := f(row)
			if a.Null {
				return types.NullValue
			}
			return types.BoolValue(a.I == c.I)
		}}, nil
	}
	if classOf(l.Type, r.Type) == numInt && l.Type.IsInteger() && r.Type.IsInteger() && op == "=" {
		return Expr{Type: t, Const: l.Const && r.Const, Col: -1, Eval: func(row []types.Value) types.Value {
			a, b := f(row), g(row)
			if a.Null || b.Null {
				return types.NullValue
			}
			return types.BoolValue(a.I == b.I)
		}}, nil
	}
	return Expr{Type: t, Const: l.Const && r.Const, Col: -1, Eval: func(row []types.Value) types.Value {
		a, b := f(row), g(row)
		if a.Null || b.Null {
			return types.NullValue
		}
		return types.BoolValue(test(cmp(a, b)))
	}}, nil
}

// Cast is CAST(x AS to); at places its errors.
func Cast(x Expr, to types.Type, at parser.Expr) (Expr, error) {
	fn, err := CastFn(x.Type, to)
	if err != nil {
		return Expr{}, ErrAt(at, "%v", err)
	}
	f := x.Eval
	t := to
	t.NotNull = x.Type.NotNull && to.NotNull
	if x.Type.NotNull && (x.Type.Kind == to.Kind || to.IsString()) {
		t.NotNull = true
	}
	if x.Type.Kind == to.Kind && to.Kind != types.Decimal && x.Type.Kind != types.Null {
		// CastFn is the identity: no closure around x
		x.Type, x.Col, x.whole = t, -1, nil
		return x, nil
	}
	return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value { return fn(f(r)) }}, nil
}

// CommonType is the type CASE branches, COALESCE arguments and UNION
// columns are brought to.
func CommonType(ts []types.Type) (types.Type, bool) {
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

func (c *Compiler) caseExpr(e *parser.Case) (Expr, error) {
	var operand Expr
	var err error
	if e.Operand != nil {
		if operand, err = c.Compile(e.Operand); err != nil {
			return Expr{}, err
		}
	}
	conds := make([]Expr, len(e.Whens))
	thens := make([]Expr, len(e.Whens))
	var ts []types.Type
	for i, w := range e.Whens {
		cond, err := c.Compile(w.Cond)
		if err != nil {
			return Expr{}, err
		}
		if e.Operand != nil {
			if cond, err = compare("=", operand, cond, w.Cond, c.GenericOnly); err != nil {
				return Expr{}, err
			}
		} else if cond.Type.Kind != types.Boolean && cond.Type.Kind != types.Null {
			return Expr{}, ErrAt(w.Cond, "WHEN needs a BOOLEAN condition, not %s", cond.Type)
		}
		conds[i] = cond
		if thens[i], err = c.Compile(w.Then); err != nil {
			return Expr{}, err
		}
		ts = append(ts, thens[i].Type)
	}
	els := konst(types.NullValue, types.Type{Kind: types.Null}, c.GenericOnly)
	if e.Else != nil {
		if els, err = c.Compile(e.Else); err != nil {
			return Expr{}, err
		}
	}
	ts = append(ts, els.Type)
	t, ok := CommonType(ts)
	if !ok {
		return Expr{}, ErrAt(e, "CASE branches have incompatible types")
	}
	k := els.Const
	for i := range thens {
		if thens[i], err = Cast(thens[i], t, e); err != nil {
			return Expr{}, err
		}
		k = k && thens[i].Const && conds[i].Const
	}
	if els, err = Cast(els, t, e); err != nil {
		return Expr{}, err
	}
	cf := make([]EvalFn, len(conds))
	tf := make([]EvalFn, len(thens))
	for i := range conds {
		cf[i], tf[i] = conds[i].Eval, thens[i].Eval
	}
	ef := els.Eval
	if sw, ok := c.intSwitch(e); ok && !k {
		// WHEN x = 0 THEN ... WHEN x = 1 THEN ...: x once, no comparisons
		// through closures (the Nexmark ddl's dateTime is one)
		xf, keys := IntOf(sw), make([]int64, len(e.Whens))
		for i, w := range e.Whens {
			keys[i] = mustInt(w.Cond.(*parser.Binary).R)
		}
		if c.GenericOnly {
			xe := sw.Eval
			xf = func(r []types.Value) (int64, bool) { v := xe(r); return v.I, !v.Null }
		} else if reads, ok := leafReads(append(thens, els)); ok {
			// every branch a plain read of a projecting scan's leaf (the
			// dateTime CASE): read the slot, no closure per branch
			return Expr{Type: t, Col: -1, Eval: func(r []types.Value) types.Value {
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
		return Expr{Type: t, Col: -1, Eval: func(r []types.Value) types.Value {
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
	if x, keys, ok := c.stringSwitch(e); ok && !k {
		// WHEN x = 'a' THEN ... WHEN x = 'b' THEN ...: x once (case_string.go)
		return Expr{Type: t, Col: -1, Eval: stringSwitchEval(x, keys, tf, ef)}, nil
	}
	if !c.GenericOnly {
		// the conditions' typed truth (expr_typed.go)
		ps := make([]predFn, len(conds))
		for i := range conds {
			ps[i] = predOf(conds[i])
		}
		return Expr{Type: t, Const: k, Col: -1, Eval: func(r []types.Value) types.Value {
			for i, p := range ps {
				if p(r) == triTrue {
					return tf[i](r)
				}
			}
			return ef(r)
		}}, nil
	}
	return Expr{Type: t, Const: k, Col: -1, Eval: func(r []types.Value) types.Value {
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
func leafReads(xs []Expr) ([]*leafRef, bool) {
	out := make([]*leafRef, len(xs))
	for i, x := range xs {
		if x.leaf == nil {
			return nil, false
		}
		out[i] = x.leaf
	}
	return out, true
}

func (c *Compiler) like(e *parser.Like) (Expr, error) {
	xs, err := c.compileAll(e.X, e.Pattern)
	if err != nil {
		return Expr{}, err
	}
	x, pat := xs[0], xs[1]
	if !pat.Const {
		return Expr{}, ErrAt(e.Pattern, "LIKE needs a constant pattern")
	}
	escape := byte(0)
	if e.Escape != nil {
		esc, err := c.Compile(e.Escape)
		if err != nil {
			return Expr{}, err
		}
		if s := esc.Eval(nil).S; len(s) == 1 {
			escape = s[0]
		}
	}
	pv := pat.Eval(nil)
	if pv.Null {
		return konst(types.NullValue, types.Type{Kind: types.Boolean}, c.GenericOnly), nil
	}
	var match func(string) bool
	if e.Similar {
		re, err := compileLiteral("^(?:" + similarRegexp(pv.S, escape) + ")$") // regexp_literal.go
		if err != nil {
			return Expr{}, ErrAt(e.Pattern, "invalid SIMILAR TO pattern: %v", err)
		}
		match = re.MatchString
	} else {
		match = likeMatcher(pv.S, escape)
	}
	f := x.Eval
	not := e.Not
	t := types.Type{Kind: types.Boolean, NotNull: x.Type.NotNull}
	if !c.GenericOnly {
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
		return Expr{Type: t, Const: x.Const, Col: -1, Eval: evalOfPred(p), pred: p}, nil
	}
	return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
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

func extract(unit string, x Expr, at parser.Expr) (Expr, error) {
	if !isTimestamp(x.Type) && x.Type.Kind != types.Date && x.Type.Kind != types.Time {
		return Expr{}, ErrAt(at, "EXTRACT needs a DATE, TIME or TIMESTAMP, not %s", x.Type)
	}
	if x.Type.Kind == types.Time {
		switch unit {
		case "HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND":
		default:
			return Expr{}, ErrAt(at, "EXTRACT(%s FROM a TIME) is not defined (HOUR, MINUTE, SECOND)", unit)
		}
	}
	f := x.Eval
	date := x.Type.Kind == types.Date
	get := map[string]func(us int64) int64{
		"YEAR":  func(us int64) int64 { return int64(microsToTime(us).Year()) },
		"MONTH": func(us int64) int64 { return int64(microsToTime(us).Month()) },
		"DAY":   func(us int64) int64 { return int64(microsToTime(us).Day()) },
		// the time of day by arithmetic, not through a time.Time
		"HOUR":   func(us int64) int64 { return (us - FloorDiv(us, 86400e6)*86400e6) / 3600e6 },
		"MINUTE": func(us int64) int64 { return (us - FloorDiv(us, 3600e6)*3600e6) / 60e6 },
		"SECOND": func(us int64) int64 { return (us - FloorDiv(us, 60e6)*60e6) / 1e6 },
		"DOW":    func(us int64) int64 { return int64(microsToTime(us).Weekday()) + 1 },
		"DOY":    func(us int64) int64 { return int64(microsToTime(us).YearDay()) },
		"EPOCH":  func(us int64) int64 { return FloorDiv(us, 1e6) },
	}[unit]
	if get == nil {
		return Expr{}, ErrAt(at, "unsupported EXTRACT unit %s", unit)
	}
	out := Expr{Type: types.Type{Kind: types.BigInt, NotNull: x.Type.NotNull}, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		us := v.I
		if date {
			us *= 86400e6
		}
		return types.IntValue(get(us))
	}}
	if x.ival != nil {
		// the typed form (expr_typed.go), when x has one (not in
		// GenericOnly): q14's CASE compares HOUR(dateTime) four times
		xi := x.ival
		out.ival = func(r []types.Value) (int64, bool) {
			us, ok := xi(r)
			if !ok {
				return 0, false
			}
			if date {
				us *= 86400e6
			}
			return get(us), true
		}
	}
	return out, nil
}

// intSwitch recognises a searched CASE whose conditions all compare one
// integer expression (the same text) with integer literals, and returns
// that expression compiled.
func (c *Compiler) intSwitch(e *parser.Case) (Expr, bool) {
	if e.Operand != nil || len(e.Whens) < 2 {
		return Expr{}, false
	}
	var text string
	for i, w := range e.Whens {
		b, ok := w.Cond.(*parser.Binary)
		if !ok || b.Op != "=" {
			return Expr{}, false
		}
		if lit, ok := b.R.(*parser.Literal); !ok || lit.Kind != parser.NumberLit || !isIntText(lit.Text) {
			return Expr{}, false
		}
		if i == 0 {
			text = parser.ExprString(b.L)
		} else if parser.ExprString(b.L) != text {
			return Expr{}, false
		}
	}
	x, err := c.Compile(e.Whens[0].Cond.(*parser.Binary).L)
	if err != nil || !x.Type.IsInteger() || x.Const {
		return Expr{}, false
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

// similarRegexp translates a SIMILAR TO pattern to a Go regular
// expression: % is any string, _ any character, the escape character (if
// any) makes the next one literal, | * + ? {m,n} ( ) [ ] are operators,
// and every other character (. ^ $ \ among them) is literal.
func similarRegexp(pat string, escape byte) string {
	var b strings.Builder
	rs := []rune(pat)
	inClass := false
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case escape != 0 && r == rune(escape) && i+1 < len(rs):
			i++
			b.WriteString(regexp.QuoteMeta(string(rs[i])))
		case inClass:
			if r == ']' {
				inClass = false
			}
			if r == '\\' {
				b.WriteString(`\\`)
				continue
			}
			b.WriteRune(r)
		case r == '%':
			b.WriteString("(?s:.*)")
		case r == '_':
			b.WriteString("(?s:.)")
		case r == '[':
			inClass = true
			b.WriteRune(r)
		case strings.ContainsRune("|*+?{}()", r):
			b.WriteRune(r)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}
