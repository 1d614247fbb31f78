package expr

import (
	"math"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/weirstream/weir/internal/datetime"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// AggregateNames are the aggregate functions; a call to one outside an
// aggregation's select list or HAVING is a planning error.
var AggregateNames = map[string]bool{
	"COUNT": true, "SUM": true, "MIN": true, "MAX": true, "AVG": true, "SUM0": true,
	"FIRST_VALUE": true, "LAST_VALUE": true, "LISTAGG": true, "JSON_OBJECTAGG": true, "JSON_ARRAYAGG": true,
	"VAR_POP": true, "VAR_SAMP": true, "VARIANCE": true, "STDDEV_POP": true, "STDDEV_SAMP": true, "STDDEV": true,
}

// WindowPropNames are the legacy group window properties.
var WindowPropNames = map[string]bool{
	"TUMBLE_START": true, "TUMBLE_END": true, "TUMBLE_ROWTIME": true, "TUMBLE_PROCTIME": true,
	"HOP_START": true, "HOP_END": true, "HOP_ROWTIME": true, "HOP_PROCTIME": true,
	"SESSION_START": true, "SESSION_END": true, "SESSION_ROWTIME": true, "SESSION_PROCTIME": true,
}

// ScalarFunctions lists the scalar functions the compiler knows, for docs
// and the shell's completion.
var ScalarFunctions = []string{
	"ABS", "MOD", "UPPER", "LOWER", "SUBSTRING", "SUBSTR", "CONCAT", "CONCAT_WS", "CHAR_LENGTH",
	"CHARACTER_LENGTH", "SPLIT_INDEX", "REGEXP_EXTRACT", "REGEXP_REPLACE", "REGEXP", "REPLACE", "TRIM",
	"LTRIM", "RTRIM", "POSITION", "INITCAP", "DATE_FORMAT", "TO_TIMESTAMP", "TO_TIMESTAMP_LTZ",
	"TO_DATE", "COALESCE", "IF", "NULLIF", "IFNULL", "FLOOR", "CEIL", "CEILING", "ROUND", "POWER", "SQRT",
	"LN", "LOG10", "EXP", "SIGN", "HOUR", "MINUTE", "SECOND", "YEAR", "MONTH", "DAYOFMONTH",
	"UNIX_TIMESTAMP", "FROM_UNIXTIME", "CURRENT_TIMESTAMP", "NOW", "PROCTIME", "ROW", "HASH_CODE",
	"GREATEST", "LEAST", "JSON_EXISTS", "JSON_VALUE", "JSON_QUERY", "JSON_STRING", "JSON_OBJECT", "JSON_ARRAY",
	"CARDINALITY", "ARRAY", "MAP",
}

func (c *Compiler) args(e *parser.Call) ([]Expr, error) { return c.compileAll(e.Args...) }

// compileAll compiles the expressions in order, stopping at the first error.
func (c *Compiler) compileAll(es ...parser.Expr) ([]Expr, error) {
	out := make([]Expr, len(es))
	for i, a := range es {
		x, err := c.Compile(a)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

func allKonst(xs []Expr) bool {
	for _, x := range xs {
		if !x.Const {
			return false
		}
	}
	return true
}

func allNotNull(xs []Expr) bool {
	for _, x := range xs {
		if !x.Type.NotNull {
			return false
		}
	}
	return true
}

// strFn builds a function of string arguments that is NULL when any
// argument is NULL.
// strFn1 is strFn of one argument, passed by value: strFn's argument
// slice escapes to the heap through the call of fn (one allocation per
// call; Nexmark q16 formats two dates a bid), this does not.
func strFn1(xs []Expr, t types.Type, fn func(a0 types.Value) types.Value) Expr {
	if len(xs) != 1 {
		panic("strFn1 of several arguments")
	}
	f := xs[0].Eval
	t.NotNull = allNotNull(xs)
	return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		return fn(v)
	}}
}

func strFn(xs []Expr, t types.Type, fn func(args []types.Value) types.Value) Expr {
	fs := make([]EvalFn, len(xs))
	for i, x := range xs {
		fs[i] = x.Eval
	}
	t.NotNull = allNotNull(xs)
	switch len(fs) {
	case 1:
		f := fs[0]
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return v
			}
			var a [1]types.Value
			a[0] = v
			return fn(a[:])
		}}
	case 2:
		f, g := fs[0], fs[1]
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			var a [2]types.Value
			a[0], a[1] = f(r), g(r)
			if a[0].Null || a[1].Null {
				return types.NullValue
			}
			return fn(a[:])
		}}
	}
	return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		var buf [4]types.Value
		a := buf[:0]
		for _, f := range fs {
			v := f(r)
			if v.Null {
				return types.NullValue
			}
			a = append(a, v)
		}
		return fn(a)
	}}
}

func concat(xs []Expr) Expr {
	return strFn(xs, types.StringType, func(a []types.Value) types.Value {
		n := 0
		for _, v := range a {
			n += len(v.S)
		}
		var b strings.Builder
		b.Grow(n)
		for _, v := range a {
			b.WriteString(v.S)
		}
		return types.StringValue(b.String())
	})
}

func wantArgs(e *parser.Call, xs []Expr, lo, hi int) error {
	if len(xs) < lo || len(xs) > hi {
		if lo == hi {
			return ErrAt(e, "%s takes %d argument(s), got %d", e.Name, lo, len(xs))
		}
		return ErrAt(e, "%s takes %d to %d arguments, got %d", e.Name, lo, hi, len(xs))
	}
	return nil
}

// stringArgs casts non-string arguments to STRING (Flink's implicit
// conversion in string functions is narrower; this is lenient).
func stringArgs(e *parser.Call, xs []Expr, idx ...int) error {
	for _, i := range idx {
		if i >= len(xs) {
			continue
		}
		if !xs[i].Type.IsString() && xs[i].Type.Kind != types.Null {
			if !xs[i].Type.IsNumeric() && xs[i].Type.Kind != types.Boolean && !isTimestamp(xs[i].Type) && xs[i].Type.Kind != types.Date {
				return ErrAt(e.Args[i], "%s needs a string argument, not %s", e.Name, xs[i].Type)
			}
			var err error
			if xs[i], err = Cast(xs[i], types.StringType, e); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Compiler) call(e *parser.Call) (Expr, error) {
	if e.Over != nil {
		return Expr{}, ErrAt(e, "%s OVER (...) is not allowed here", e.Name)
	}
	if x, ok, err := c.userCall(e); ok {
		return x, err
	}
	if AggregateNames[e.Name] {
		where := c.What
		if where == "" {
			where = "this place"
		}
		return Expr{}, ErrAt(e, "aggregate function %s is not allowed in %s", e.Name, where)
	}
	if WindowPropNames[e.Name] {
		return Expr{}, ErrAt(e, "%s needs a matching GROUP BY %s(...)", e.Name, strings.Split(e.Name, "_")[0])
	}
	if e.Name == "PROCTIME" || e.Name == "CURRENT_TIMESTAMP" || e.Name == "NOW" || e.Name == "LOCALTIMESTAMP" || e.Name == "CURRENT_ROW_TIMESTAMP" {
		t := types.Type{Kind: types.TimestampLTZ, Precision: 3, NotNull: true}
		if e.Name == "LOCALTIMESTAMP" {
			t.Kind = types.Timestamp
		}
		if e.Name == "PROCTIME" {
			t.TimeAttr = types.ProctimeAttr
		}
		return Expr{Type: t, Col: -1, Eval: func([]types.Value) types.Value {
			return types.IntValue(time.Now().UnixMicro())
		}}, nil
	}
	xs, err := c.args(e)
	if err != nil {
		return Expr{}, err
	}
	if x, ok, err := c.moreCall(e, xs); ok { // funcs_flink_*.go
		return x, err
	}
	switch e.Name {
	case "JSON_EXISTS", "JSON_VALUE", "JSON_QUERY", "JSON_STRING", "JSON_OBJECT", "JSON_ARRAY", "IS JSON", "IS NOT JSON":
		return c.jsonCall(e, xs) // json_funcs.go
	case "ABS":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		x := xs[0]
		if !x.Type.IsNumeric() {
			return Expr{}, ErrAt(e, "ABS needs a number, not %s", x.Type)
		}
		f, t := x.Eval, x.Type
		t.TimeAttr = 0
		sh := wrapShift(t.Kind) // ABS of TINYINT -128 is -128, as Java's
		return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return v
			}
			switch {
			case t.Kind == types.Float || t.Kind == types.Double:
				return types.FloatValue(math.Abs(v.Float()))
			case t.BigDecimal():
				return types.BigDecimalValue(decBig(v, t).Abs(decBig(v, t)))
			}
			if v.I < 0 {
				return types.IntValue(-v.I << sh >> sh)
			}
			return v
		}}, nil
	case "MOD":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		return arith("%", xs[0], xs[1], e, c.GenericOnly)
	case "POWER":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		return floatFn2(xs, math.Pow), nil
	case "SQRT", "LN", "LOG10", "EXP":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		fn := map[string]func(float64) float64{"SQRT": math.Sqrt, "LN": math.Log, "LOG10": math.Log10, "EXP": math.Exp}[e.Name]
		return floatFn1(xs[0], fn), nil
	case "FLOOR", "CEIL", "CEILING", "SIGN", "ROUND":
		if err := wantArgs(e, xs, 1, 2); err != nil {
			return Expr{}, err
		}
		digits := 0
		if len(xs) == 2 {
			if !xs[1].Const {
				return Expr{}, ErrAt(e, "ROUND's digits must be a constant")
			}
			digits = int(xs[1].Eval(nil).I)
		}
		if xs[0].Type.IsInteger() {
			return intRound(e.Name, xs[0], digits), nil
		}
		m := math.Pow10(digits)
		fn := map[string]func(float64) float64{"FLOOR": math.Floor, "CEIL": math.Ceil, "CEILING": math.Ceil,
			"SIGN": func(f float64) float64 {
				switch {
				case f > 0:
					return 1
				case f < 0:
					return -1
				}
				return 0
			},
			"ROUND": func(f float64) float64 { return math.Round(f*m) / m }}[e.Name]
		if xs[0].Type.Kind == types.Decimal {
			out := xs[0].Type
			switch e.Name {
			case "ROUND":
				out = types.DecimalType(out.Precision, min(max(digits, 0), out.Scale))
			case "SIGN":
				// the argument's type, as Flink's
			default:
				out = types.DecimalType(out.Precision, 0)
			}
			d := floatFn1(xs[0], fn)
			return Cast(d, out, e)
		}
		return floatFn1(xs[0], fn), nil
	case "UPPER", "LOWER", "INITCAP", "LTRIM", "RTRIM":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0); err != nil {
			return Expr{}, err
		}
		fn := map[string]func(string) string{"UPPER": strings.ToUpper, "LOWER": strings.ToLower,
			"INITCAP": initCap,
			"LTRIM":   func(s string) string { return strings.TrimLeft(s, " ") },
			"RTRIM":   func(s string) string { return strings.TrimRight(s, " ") }}[e.Name]
		out := strFn1(xs, types.StringType, func(a0 types.Value) types.Value { return types.StringValue(fn(a0.S)) })
		if (e.Name == "LOWER" || e.Name == "UPPER") && !c.GenericOnly {
			out.fold = &foldOf{arg: xs[0].Eval, upper: e.Name == "UPPER"} // fold_compare.go
		}
		return out, nil
	case "TRIM":
		// TRIM(mode, chars, s) as the parser rewrote it, or TRIM(s)
		if len(xs) == 1 {
			if err := stringArgs(e, xs, 0); err != nil {
				return Expr{}, err
			}
			return strFn1(xs, types.StringType, func(a0 types.Value) types.Value { return types.StringValue(strings.Trim(a0.S, " ")) }), nil
		}
		if err := wantArgs(e, xs, 3, 3); err != nil {
			return Expr{}, err
		}
		mode := xs[0].Eval(nil).S
		return strFn(xs[1:], types.StringType, func(a []types.Value) types.Value {
			switch mode {
			case "LEADING":
				return types.StringValue(strings.TrimLeft(a[1].S, a[0].S))
			case "TRAILING":
				return types.StringValue(strings.TrimRight(a[1].S, a[0].S))
			}
			return types.StringValue(strings.Trim(a[1].S, a[0].S))
		}), nil
	case "CHAR_LENGTH", "CHARACTER_LENGTH":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0); err != nil {
			return Expr{}, err
		}
		return strFn(xs, types.IntType, func(a []types.Value) types.Value {
			return types.IntValue(int64(utf8.RuneCountInString(a[0].S)))
		}), nil
	case "SUBSTRING", "SUBSTR":
		if err := wantArgs(e, xs, 2, 3); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0); err != nil {
			return Expr{}, err
		}
		return strFn(xs, types.StringType, func(a []types.Value) types.Value {
			rs := []rune(a[0].S)
			start := a[1].I
			if start < 0 {
				start = int64(len(rs)) + start + 1
			}
			if start < 1 {
				start = 1
			}
			end := int64(len(rs))
			if len(a) == 3 {
				if a[2].I < 0 {
					return types.NullValue
				}
				end = min(end, start-1+a[2].I)
			}
			if start > int64(len(rs)) || end < start {
				return types.StringValue("")
			}
			return types.StringValue(string(rs[start-1 : end]))
		}), nil
	case "CONCAT":
		if len(xs) == 0 {
			return Expr{}, ErrAt(e, "CONCAT needs arguments")
		}
		if err := stringArgs(e, xs, seq(len(xs))...); err != nil {
			return Expr{}, err
		}
		return concat(xs), nil
	case "CONCAT_WS":
		if len(xs) < 2 {
			return Expr{}, ErrAt(e, "CONCAT_WS needs a separator and strings")
		}
		if err := stringArgs(e, xs, seq(len(xs))...); err != nil {
			return Expr{}, err
		}
		sep := xs[0].Eval
		rest := xs[1:]
		return Expr{Type: types.StringType, Col: -1, Const: allKonst(xs), Eval: func(r []types.Value) types.Value {
			s := sep(r)
			if s.Null {
				return s
			}
			var b strings.Builder
			first := true
			for _, x := range rest {
				v := x.Eval(r)
				if v.Null {
					continue
				}
				if !first {
					b.WriteString(s.S)
				}
				first = false
				b.WriteString(v.S)
			}
			return types.StringValue(b.String())
		}}, nil
	case "SPLIT_INDEX":
		if err := wantArgs(e, xs, 3, 3); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0, 1); err != nil {
			return Expr{}, err
		}
		t := types.StringType
		if xs[1].Const && xs[2].Const {
			// the usual call, SPLIT_INDEX(url, '/', 3): one argument read
			// per row (strFn1: no argument slice)
			sep, n := xs[1].Eval(nil), xs[2].Eval(nil)
			if sep.Null || n.Null || n.I < 0 {
				return konst(types.NullValue, t, c.GenericOnly), nil
			}
			return strFn1(xs[:1], t, func(a0 types.Value) types.Value {
				part, ok := splitIndex(a0.S, sep.S, n.I)
				if !ok {
					return types.NullValue
				}
				return types.StringValue(part)
			}).nullable(), nil
		}
		return strFn(xs, t, func(a []types.Value) types.Value {
			if a[2].I < 0 {
				return types.NullValue
			}
			part, ok := splitIndex(a[0].S, a[1].S, a[2].I)
			if !ok {
				return types.NullValue
			}
			return types.StringValue(part)
		}).nullable(), nil
	case "REPLACE":
		if err := wantArgs(e, xs, 3, 3); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0, 1, 2); err != nil {
			return Expr{}, err
		}
		return strFn(xs, types.StringType, func(a []types.Value) types.Value {
			return types.StringValue(strings.ReplaceAll(a[0].S, a[1].S, a[2].S))
		}), nil
	case "POSITION", "LOCATE":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0, 1); err != nil {
			return Expr{}, err
		}
		return strFn(xs, types.IntType, func(a []types.Value) types.Value {
			i := strings.Index(a[1].S, a[0].S)
			if i < 0 {
				return types.IntValue(0)
			}
			return types.IntValue(int64(utf8.RuneCountInString(a[1].S[:i]) + 1))
		}), nil
	case "REGEXP_EXTRACT", "REGEXP_REPLACE", "REGEXP":
		lo, hi := 2, 3
		if e.Name == "REGEXP_REPLACE" {
			lo = 3
		}
		if e.Name == "REGEXP" {
			hi = 2
		}
		if err := wantArgs(e, xs, lo, hi); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0, 1); err != nil {
			return Expr{}, err
		}
		if !xs[1].Const {
			return Expr{}, ErrAt(e, "%s needs a constant pattern", e.Name)
		}
		pat := xs[1].Eval(nil)
		if pat.Null {
			return konst(types.NullValue, types.StringType, c.GenericOnly), nil
		}
		re, err := compileLiteral(pat.S) // regexp_literal.go
		if err != nil {
			return Expr{}, ErrAt(e.Args[1], "invalid regular expression: %v", err)
		}
		switch e.Name {
		case "REGEXP":
			return strFn1(xs[:1], types.BooleanType, func(a0 types.Value) types.Value { return types.BoolValue(re.MatchString(a0.S)) }), nil
		case "REGEXP_REPLACE":
			if err := stringArgs(e, xs, 2); err != nil {
				return Expr{}, err
			}
			return strFn([]Expr{xs[0], xs[2]}, types.StringType, func(a []types.Value) types.Value {
				return types.StringValue(re.ReplaceAllString(a[0].S, javaReplacement(a[1].S)))
			}), nil
		}
		if len(xs) == 2 || xs[2].Const {
			// a constant group (Nexmark q21's 2): one argument read per row
			idx := int64(0)
			if len(xs) == 3 {
				g := xs[2].Eval(nil)
				if g.Null {
					return konst(types.NullValue, types.StringType, c.GenericOnly), nil
				}
				idx = g.I
			}
			if idx < 0 || idx > int64(re.NumSubexp()) {
				return konst(types.NullValue, types.StringType, c.GenericOnly), nil
			}
			return strFn1(xs[:1], types.StringType, func(a0 types.Value) types.Value {
				v, ok := re.Group(a0.S, int(idx))
				if !ok {
					return types.NullValue
				}
				return types.StringValue(v)
			}).nullable(), nil
		}
		group := []Expr{xs[0], xs[2]}
		return strFn(group, types.StringType, func(a []types.Value) types.Value {
			idx := int64(0)
			if len(a) == 2 {
				idx = a[1].I
			}
			v, ok := re.Group(a[0].S, int(idx)) // (NULL for no group idx)
			if !ok {
				return types.NullValue
			}
			return types.StringValue(v)
		}).nullable(), nil
	case "DATE_FORMAT":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		if !xs[1].Const {
			return Expr{}, ErrAt(e, "DATE_FORMAT needs a constant format")
		}
		layout := javaLayout(xs[1].Eval(nil).S)
		if xs[0].Type.IsString() {
			if xs[0], err = Cast(xs[0], types.Timestamp3, e); err != nil {
				return Expr{}, err
			}
		}
		if !isTimestamp(xs[0].Type) && xs[0].Type.Kind != types.Date {
			return Expr{}, ErrAt(e, "DATE_FORMAT needs a TIMESTAMP, not %s", xs[0].Type)
		}
		date := xs[0].Type.Kind == types.Date
		if period := patternPeriod(xs[1].Eval(nil).S); period > 0 {
			// the same string for a whole day (hour, minute, second: the
			// pattern's finest field): the last period's is kept (rows
			// mostly come in time order), formatted once per period
			// (Nexmark q15/q16 format each bid's day and minute)
			var last atomic.Pointer[formattedPeriod]
			return strFn1(xs[:1], types.StringType, func(a0 types.Value) types.Value {
				us := a0.I
				if date {
					us *= 86400e6
				}
				n := floorDiv(us, period)
				if c := last.Load(); c != nil && c.n == n {
					return types.StringValue(c.s)
				}
				c := &formattedPeriod{n: n, s: microsToTime(n * period).Format(layout)}
				last.Store(c)
				return types.StringValue(c.s)
			}), nil
		}
		return strFn1(xs[:1], types.StringType, func(a0 types.Value) types.Value {
			us := a0.I
			if date {
				us *= 86400e6
			}
			return types.StringValue(microsToTime(us).Format(layout))
		}), nil
	case "TO_TIMESTAMP":
		if err := wantArgs(e, xs, 1, 2); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0); err != nil {
			return Expr{}, err
		}
		t := types.Timestamp3
		if len(xs) == 1 {
			return Cast(xs[0], t, e)
		}
		if !xs[1].Const {
			return Expr{}, ErrAt(e, "TO_TIMESTAMP needs a constant format")
		}
		layout := javaLayout(xs[1].Eval(nil).S)
		return strFn1(xs[:1], t, func(a0 types.Value) types.Value {
			tm, err := time.Parse(layout, a0.S)
			if err != nil {
				return types.NullValue
			}
			return types.IntValue(tm.UnixMicro())
		}).nullable(), nil
	case "TO_DATE":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		return Cast(xs[0], types.DateType, e)
	case "TO_TIMESTAMP_LTZ":
		if err := wantArgs(e, xs, 1, 2); err != nil {
			return Expr{}, err
		}
		prec := int64(3)
		if len(xs) == 2 {
			if !xs[1].Const {
				return Expr{}, ErrAt(e, "TO_TIMESTAMP_LTZ needs a constant precision")
			}
			prec = xs[1].Eval(nil).I
		}
		if prec != 0 && prec != 3 {
			return Expr{}, ErrAt(e, "TO_TIMESTAMP_LTZ's precision must be 0 (seconds) or 3 (milliseconds), not %d", prec)
		}
		mul := int64(1000)
		if prec == 0 {
			mul = 1e6
		}
		if !xs[0].Type.IsNumeric() {
			return Expr{}, ErrAt(e, "TO_TIMESTAMP_LTZ needs a number of epoch seconds or milliseconds, not %s", xs[0].Type)
		}
		x, err := Cast(xs[0], types.BigIntType, e)
		if err != nil {
			return Expr{}, err
		}
		f := x.Eval
		return Expr{Type: types.Type{Kind: types.TimestampLTZ, Precision: 3, NotNull: x.Type.NotNull}, Const: x.Const, Col: -1,
			Eval: func(r []types.Value) types.Value {
				v := f(r)
				if v.Null {
					return v
				}
				return types.IntValue(v.I * mul)
			}}, nil
	case "UNIX_TIMESTAMP":
		if len(xs) == 0 {
			return Expr{Type: types.Type{Kind: types.BigInt, NotNull: true}, Col: -1, Eval: func([]types.Value) types.Value {
				return types.IntValue(time.Now().Unix())
			}}, nil
		}
		if err := wantArgs(e, xs, 1, 2); err != nil {
			return Expr{}, err
		}
		if err := stringArgs(e, xs, 0, 1); err != nil {
			return Expr{}, err
		}
		if len(xs) == 2 {
			// UNIX_TIMESTAMP(s, format): s read with the Java pattern, in
			// the session's time zone (UTC); NULL when it does not parse
			if !xs[1].Const {
				return Expr{}, ErrAt(e, "UNIX_TIMESTAMP needs a constant format")
			}
			layout := javaLayout(xs[1].Eval(nil).S)
			return strFn1(xs[:1], types.BigIntType, func(a0 types.Value) types.Value {
				tm, err := time.Parse(layout, a0.S)
				if err != nil {
					return types.NullValue
				}
				return types.IntValue(tm.Unix())
			}).nullable(), nil
		}
		ts, err := Cast(xs[0], types.Timestamp3, e)
		if err != nil {
			return Expr{}, err
		}
		return Cast(ts, types.BigIntType, e)
	case "FROM_UNIXTIME":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		return strFn(xs, types.StringType, func(a []types.Value) types.Value {
			return types.StringValue(time.Unix(a[0].I, 0).UTC().Format("2006-01-02 15:04:05"))
		}), nil
	case "HOUR", "MINUTE", "SECOND", "YEAR", "MONTH", "DAYOFMONTH":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		unit := e.Name
		if unit == "DAYOFMONTH" {
			unit = "DAY"
		}
		return extract(unit, xs[0], e)
	case "COALESCE", "IFNULL":
		if len(xs) == 0 {
			return Expr{}, ErrAt(e, "%s needs arguments", e.Name)
		}
		ts := make([]types.Type, len(xs))
		for i, x := range xs {
			ts[i] = x.Type
		}
		t, ok := CommonType(ts)
		if !ok {
			return Expr{}, ErrAt(e, "%s arguments have incompatible types", e.Name)
		}
		t.NotNull = false
		fs := make([]EvalFn, len(xs))
		for i := range xs {
			if xs[i], err = Cast(xs[i], t, e); err != nil {
				return Expr{}, err
			}
			fs[i] = xs[i].Eval
			if xs[i].Type.NotNull {
				t.NotNull = true
			}
		}
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			for _, f := range fs {
				if v := f(r); !v.Null {
					return v
				}
			}
			return types.NullValue
		}}, nil
	case "IF":
		if err := wantArgs(e, xs, 3, 3); err != nil {
			return Expr{}, err
		}
		return c.caseExpr(&parser.Case{Pos: e.Pos, Whens: []parser.When{{Cond: e.Args[0], Then: e.Args[1]}}, Else: e.Args[2]})
	case "NULLIF":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		eq, err := compare("=", xs[0], xs[1], e, c.GenericOnly)
		if err != nil {
			return Expr{}, err
		}
		f, q := xs[0].Eval, eq.Eval
		return Expr{Type: xs[0].Type.Nullable(), Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			if v := q(r); !v.Null && v.Bool() {
				return types.NullValue
			}
			return f(r)
		}}, nil
	case "GREATEST", "LEAST":
		if len(xs) == 0 {
			return Expr{}, ErrAt(e, "%s needs arguments", e.Name)
		}
		ts := make([]types.Type, len(xs))
		for i, x := range xs {
			ts[i] = x.Type
		}
		t, ok := CommonType(ts)
		if !ok {
			return Expr{}, ErrAt(e, "%s arguments have incompatible types", e.Name)
		}
		for i := range xs {
			if xs[i], err = Cast(xs[i], t, e); err != nil {
				return Expr{}, err
			}
		}
		cmp := Comparator(t, t)
		sign := 1
		if e.Name == "LEAST" {
			sign = -1
		}
		return strFn(xs, t, func(a []types.Value) types.Value {
			best := a[0]
			for _, v := range a[1:] {
				if cmp(v, best)*sign > 0 {
					best = v
				}
			}
			return best
		}), nil
	case "ARRAY", "MAP":
		return constructor(e, xs)
	case "CARDINALITY":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		k := xs[0].Type.Kind
		if k != types.Array && k != types.Map && k != types.Multiset {
			return Expr{}, ErrAt(e, "CARDINALITY needs an array, map or multiset, not %s", xs[0].Type)
		}
		f, per := xs[0].Eval, 1
		if k == types.Map {
			per = 2
		}
		return Expr{Type: types.Type{Kind: types.Int, NotNull: xs[0].Type.NotNull}, Const: xs[0].Const, Col: -1, Eval: func(r []types.Value) types.Value {
			v := f(r)
			if v.Null {
				return v
			}
			return types.IntValue(int64(len(v.List()) / per))
		}}, nil
	case "ROW":
		fields := make([]types.Field, len(xs))
		fs := make([]EvalFn, len(xs))
		for i, x := range xs {
			fields[i] = types.Field{Name: "EXPR$" + itoa(i), Type: x.Type}
			fs[i] = x.Eval
		}
		t := types.RowOf(fields...)
		t.NotNull = true
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			vs := make([]types.Value, len(fs))
			for i, f := range fs {
				vs[i] = f(r)
			}
			return types.ListValue(vs)
		}}, nil
	case "HASH_CODE":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		f := xs[0].Eval
		return Expr{Type: types.Type{Kind: types.Int, NotNull: true}, Col: -1, Eval: func(r []types.Value) types.Value {
			k := types.Key([]types.Value{f(r)})
			var h int32
			for i := 0; i < len(k); i++ {
				h = 31*h + int32(k[i])
			}
			return types.IntValue(int64(h))
		}}, nil
	}
	if collectionFuncs[e.Name] || overOnlyFuncs[e.Name] {
		return c.collectionCall(e, xs) // funcs_collections.go
	}
	return Expr{}, ErrAt(e, "no function named %s", e.Name)
}

// userCall compiles a call of a user-defined function, if e names one.
func (c *Compiler) userCall(e *parser.Call) (Expr, bool, error) {
	f, ok := c.Funcs[e.Name]
	if !ok {
		return Expr{}, false, nil
	}
	switch f := f.(type) {
	case *ScalarFunction:
		x, err := c.scalarCall(e, strings.ToLower(e.Name), f)
		return x, true, err
	case *AggregateFunction:
		where := c.What
		if where == "" {
			where = "this place"
		}
		return Expr{}, true, ErrAt(e, "aggregate function %s is not allowed in %s", strings.ToLower(e.Name), where)
	}
	return Expr{}, true, ErrAt(e, "function %s is not a scalar function", strings.ToLower(e.Name))
}

func (x Expr) nullable() Expr { x.Type.NotNull = false; return x }

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + formatInt(i)) }

func formatInt(i int) string {
	return FormatValue(types.IntValue(int64(i)), types.BigIntType)
}

func floatFn1(x Expr, fn func(float64) float64) Expr {
	f, tf := x.Eval, toFloatFn(x.Type)
	return Expr{Type: types.Type{Kind: types.Double, NotNull: x.Type.NotNull}, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		return types.FloatValue(fn(tf(v)))
	}}
}

func floatFn2(xs []Expr, fn func(a, b float64) float64) Expr {
	f, g := xs[0].Eval, xs[1].Eval
	tf, tg := toFloatFn(xs[0].Type), toFloatFn(xs[1].Type)
	return Expr{Type: types.Type{Kind: types.Double, NotNull: allNotNull(xs)}, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		a, b := f(r), g(r)
		if a.Null || b.Null {
			return types.NullValue
		}
		return types.FloatValue(fn(tf(a), tg(b)))
	}}
}

func initCap(s string) string {
	b := []rune(strings.ToLower(s))
	up := true
	for i, r := range b {
		if up && r >= 'a' && r <= 'z' {
			b[i] = r - 32
		}
		up = !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}
	return string(b)
}

// javaReplacement turns Java's $1 group references into Go's ${1}.
func javaReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
			b.WriteString("${" + s[i+1:i+2] + "}")
			i++
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// javaLayout is DATE_FORMAT's layout of a Java pattern (letters the
// conversion does not know stay as they are).
// formattedPeriod is a period (since the epoch, in units of the
// pattern's period) and DATE_FORMAT's string of it.
type formattedPeriod struct {
	n int64
	s string
}

// patternPeriod is the length in microseconds of the periods over which a
// Java date pattern formats every instant alike: a day for a date alone,
// an hour, a minute or a second for patterns whose finest field is
// that; 0 for finer fields (fractions of a second) and for zones.
func patternPeriod(p string) int64 {
	period := int64(86400e6)
	quoted := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case quoted:
		case strings.IndexByte("SnANzZXxOVBb", c) >= 0:
			return 0
		case c == 's':
			period = min(period, 1e6)
		case c == 'm':
			period = min(period, 60e6)
		case strings.IndexByte("HkKha", c) >= 0:
			period = min(period, 3600e6)
		}
	}
	return period
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func javaLayout(p string) string {
	l, _ := datetime.JavaLayout(p)
	return l
}

// intRound is FLOOR, CEIL, SIGN and ROUND of an integer: itself, but for
// SIGN (-1, 0 or 1) and ROUND to negative digits (HALF_UP, as Flink's:
// ROUND(15, -1) is 20), in the argument's type.
func intRound(name string, x Expr, digits int) Expr {
	switch {
	case name == "SIGN":
	case name == "ROUND" && digits < 0:
	default:
		return x
	}
	f := x.Eval
	t := x.Type
	t.TimeAttr = 0
	sh := wrapShift(t.Kind)
	var p int64 = 1
	for i := 0; i < -digits && i < 19; i++ {
		p *= 10
	}
	return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		if name == "SIGN" {
			switch {
			case v.I > 0:
				return types.IntValue(1)
			case v.I < 0:
				return types.IntValue(-1)
			}
			return types.IntValue(0)
		}
		if -digits >= 19 {
			return types.IntValue(0)
		}
		q, rem := v.I/p, v.I%p
		if rem >= p-p/2 {
			q++
		} else if rem <= -(p - p/2) {
			q--
		}
		return types.IntValue(q * p << sh >> sh)
	}}
}

// constructor is ARRAY[a, b, ...] or MAP[k1, v1, k2, v2, ...]: the
// elements (keys, values) cast to their common type; a map's later value
// of a key replaces the earlier, as in Flink.
func constructor(e *parser.Call, xs []Expr) (Expr, error) {
	isMap := e.Name == "MAP"
	if len(xs) == 0 || (isMap && len(xs)%2 != 0) {
		if isMap {
			return Expr{}, ErrAt(e, "MAP[...] needs keys and values in pairs")
		}
		return Expr{}, ErrAt(e, "ARRAY[...] needs at least one element")
	}
	common := func(idx []int, what string) (types.Type, error) {
		ts := make([]types.Type, len(idx))
		for i, j := range idx {
			ts[i] = xs[j].Type
		}
		t, ok := CommonType(ts)
		if !ok {
			return types.Type{}, ErrAt(e, "the %s of %s[...] have no common type", what, e.Name)
		}
		t.TimeAttr = 0
		for _, j := range idx {
			x, err := Cast(xs[j], t, e.Args[j])
			if err != nil {
				return types.Type{}, err
			}
			xs[j] = x
		}
		return t, nil
	}
	var t types.Type
	if isMap {
		var ks, vs []int
		for i := range xs {
			if i%2 == 0 {
				ks = append(ks, i)
			} else {
				vs = append(vs, i)
			}
		}
		kt, err := common(ks, "keys")
		if err != nil {
			return Expr{}, err
		}
		vt, err := common(vs, "values")
		if err != nil {
			return Expr{}, err
		}
		t = types.MapOf(kt, vt)
	} else {
		all := make([]int, len(xs))
		for i := range all {
			all[i] = i
		}
		et, err := common(all, "elements")
		if err != nil {
			return Expr{}, err
		}
		t = types.ArrayOf(et)
	}
	t.NotNull = true
	fs := make([]EvalFn, len(xs))
	for i, x := range xs {
		fs[i] = x.Eval
	}
	return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
		vs := make([]types.Value, 0, len(fs))
		if !isMap {
			for _, f := range fs {
				vs = append(vs, f(r))
			}
			return types.ListValue(vs)
		}
	pairs:
		for i := 0; i+1 < len(fs); i += 2 {
			k, v := fs[i](r), fs[i+1](r)
			for j := 0; j < len(vs); j += 2 {
				if vs[j].Equal(k) {
					vs[j+1] = v
					continue pairs
				}
			}
			vs = append(vs, k, v)
		}
		return types.ListValue(vs)
	}}, nil
}

// splitIndex is strings.Split(s, sep)[n] without the slice of every
// part: the part is a substring of s (ok false past the last part).
func splitIndex(s, sep string, n int64) (string, bool) {
	if sep == "" {
		parts := strings.Split(s, sep)
		if n >= int64(len(parts)) {
			return "", false
		}
		return parts[n], true
	}
	if len(sep) == 1 {
		// one byte (SPLIT_INDEX(url, '/', 3)): a loop over the few bytes
		// before the part costs less than a call per part
		c, start := sep[0], 0
		for i := 0; i < len(s); i++ {
			if s[i] != c {
				continue
			}
			if n == 0 {
				return s[start:i], true
			}
			n--
			start = i + 1
		}
		if n == 0 {
			return s[start:], true
		}
		return "", false
	}
	for ; n > 0; n-- {
		i := strings.Index(s, sep)
		if i < 0 {
			return "", false
		}
		s = s[i+len(sep):]
	}
	if i := strings.Index(s, sep); i >= 0 {
		s = s[:i]
	}
	return s, true
}
