package expr

import (
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// Typed evaluation. Every compiled expression has its generic EvalFn,
// which returns a 48-byte types.Value; the common expressions of filters
// and integer arithmetic also carry a typed form that the expressions over
// them call instead (Expr.ival, pred, filt):
//
//   - ival: an integer-layout value (integers, dates, times, timestamps,
//     intervals) as (int64, not NULL);
//   - pred: a BOOLEAN as a three-valued truth (tri);
//   - filt: "is TRUE", what a WHERE keeps: a conjunction is filt(a) &&
//     filt(b), with no NULL handling in between.
//
// The typed forms compute exactly what eval computes (the same
// operations, the same evaluation order of the operands, so a division by
// zero fails where it did); their eval is derived from them, and
// expr_typed_test.go compares both over random rows with NULLs. An
// expression without a typed form is read through its eval (IntOf, predOf,
// FilterOf), so typed and generic expressions compose freely.

// tri is a SQL truth value.
type tri uint8

const (
	triFalse tri = iota
	triTrue
	triNull
)

// IntFn is an expression's value as an int64 (false: NULL), for an
// integer-layout type.
type IntFn func(r []types.Value) (int64, bool)

// predFn is a BOOLEAN expression's three-valued truth.
type predFn func(r []types.Value) tri

// FilterFn reports whether a BOOLEAN expression is TRUE.
type FilterFn func(r []types.Value) bool

// intLayout reports whether a value of t is its Value.I alone, compared
// and computed as an int64 (not floats, decimals, strings or composites).
func intLayout(t types.Type) bool {
	switch t.Kind {
	case types.Boolean, types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Date, types.Time,
		types.Timestamp, types.TimestampLTZ, types.Interval:
		return true
	}
	return false
}

// IntOf returns x's value as an int64 (x of an intLayout type).
func IntOf(x Expr) IntFn {
	if x.ival != nil {
		return x.ival
	}
	f := x.Eval
	return func(r []types.Value) (int64, bool) { v := f(r); return v.I, !v.Null }
}

// predOf returns x's truth (x a BOOLEAN).
func predOf(x Expr) predFn {
	if x.pred != nil {
		return x.pred
	}
	f := x.Eval
	return func(r []types.Value) tri { return truth(f(r)) }
}

// FilterOf returns whether x is TRUE (a WHERE's test).
func FilterOf(x Expr) FilterFn {
	if x.filt != nil {
		return x.filt
	}
	if x.pred != nil {
		p := x.pred
		return func(r []types.Value) bool { return p(r) == triTrue }
	}
	f := x.Eval
	return func(r []types.Value) bool { v := f(r); return !v.Null && v.Bool() }
}

func truth(v types.Value) tri {
	switch {
	case v.Null:
		return triNull
	case v.Bool():
		return triTrue
	}
	return triFalse
}

func triValue(t tri) types.Value {
	switch t {
	case triTrue:
		return types.Value{I: 1}
	case triFalse:
		return types.Value{}
	}
	return types.NullValue
}

func evalOfPred(p predFn) EvalFn {
	return func(r []types.Value) types.Value { return triValue(p(r)) }
}

func evalOfInt(f IntFn) EvalFn {
	return func(r []types.Value) types.Value {
		if i, ok := f(r); ok {
			return types.Value{I: i}
		}
		return types.NullValue
	}
}

// slotInt reads slot i of the row as an int (ColRef's typed form).
func slotInt(i int) IntFn {
	return func(r []types.Value) (int64, bool) { v := &r[i]; return v.I, !v.Null }
}

// leafInt reads a projecting scan's leaf as an int; its slot is assigned
// after compilation (leaf.go), so it is read through the leaf.
func leafInt(lf *leafRef) IntFn {
	return func(r []types.Value) (int64, bool) { v := &r[lf.idx]; return v.I, !v.Null }
}

// withTyped adds the typed form of a read to x (a column or a leaf).
func withTyped(x Expr, ival IntFn, generic bool) Expr {
	if intLayout(x.Type) && !generic {
		x.ival = ival
		if x.Type.Kind == types.Boolean {
			f := ival
			x.pred = func(r []types.Value) tri {
				i, ok := f(r)
				switch {
				case !ok:
					return triNull
				case i != 0:
					return triTrue
				}
				return triFalse
			}
		}
	}
	return x
}

// konstTyped adds the typed forms of a constant.
func konstTyped(x Expr, v types.Value, generic bool) Expr {
	if generic {
		return x
	}
	if intLayout(x.Type) || x.Type.Kind == types.Null {
		i, ok := v.I, !v.Null
		x.ival = func([]types.Value) (int64, bool) { return i, ok }
	}
	if x.Type.Kind == types.Boolean || x.Type.Kind == types.Null {
		t := truth(v)
		x.pred = func([]types.Value) tri { return t }
	}
	return x
}

// intArith is the typed form of integer + - * / % (arith's numInt): the
// operands are evaluated in order, NULL wins, and a division by zero fails
// only on non-NULL operands, as the generic path. sh is the result type's
// wrapShift.
func intArith(op string, l, r Expr, sh uint) IntFn {
	f, g := IntOf(l), IntOf(r)
	if r.Const && !l.Const {
		c, cok := g(nil)
		if cok && (c != 0 || (op != "/" && op != "%")) {
			switch op {
			case "+":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return (a + c) << sh >> sh, ok }
			case "-":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return (a - c) << sh >> sh, ok }
			case "*":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return (a * c) << sh >> sh, ok }
			case "/":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return (a / c) << sh >> sh, ok }
			case "%":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return a % c, ok }
			}
		}
	}
	return func(row []types.Value) (int64, bool) {
		a, ok1 := f(row)
		b, ok2 := g(row)
		if !ok1 || !ok2 {
			return 0, false
		}
		switch op {
		case "+":
			return (a + b) << sh >> sh, true
		case "-":
			return (a - b) << sh >> sh, true
		case "*":
			return (a * b) << sh >> sh, true
		case "/":
			if b == 0 {
				panic(runtimeError("division by zero"))
			}
			return (a / b) << sh >> sh, true
		}
		if b == 0 {
			panic(runtimeError("division by zero"))
		}
		return a % b, true
	}
}

// cmpMask is the outcomes of cmpInt (-1, 0, 1 as bits 0, 1, 2) for which
// op holds.
func cmpMask(op string) uint8 {
	switch op {
	case "=":
		return 0b010
	case "<>":
		return 0b101
	case "<":
		return 0b001
	case ">":
		return 0b100
	case "<=":
		return 0b011
	}
	return 0b110 // >=
}

// intCompare is the typed form of a comparison of two intLayout values
// (what Comparator does with cmpInt): pred and filt.
func intCompare(op string, l, r Expr) (predFn, FilterFn) {
	f, g := IntOf(l), IntOf(r)
	m := cmpMask(op)
	if r.Const && !l.Const {
		c, cok := g(nil)
		if !cok {
			return func(row []types.Value) tri { f(row); return triNull },
				func(row []types.Value) bool { f(row); return false }
		}
		if op == "=" {
			return func(row []types.Value) tri {
					a, ok := f(row)
					switch {
					case !ok:
						return triNull
					case a == c:
						return triTrue
					}
					return triFalse
				}, func(row []types.Value) bool {
					a, ok := f(row)
					return ok && a == c
				}
		}
		return func(row []types.Value) tri {
				a, ok := f(row)
				if !ok {
					return triNull
				}
				return tri(m >> (cmpInt(a, c) + 1) & 1)
			}, func(row []types.Value) bool {
				a, ok := f(row)
				return ok && m>>(cmpInt(a, c)+1)&1 != 0
			}
	}
	return func(row []types.Value) tri {
			a, ok1 := f(row)
			b, ok2 := g(row)
			if !ok1 || !ok2 {
				return triNull
			}
			return tri(m >> (cmpInt(a, b) + 1) & 1)
		}, func(row []types.Value) bool {
			a, ok1 := f(row)
			b, ok2 := g(row)
			return ok1 && ok2 && m>>(cmpInt(a, b)+1)&1 != 0
		}
}

// intComparable reports whether Comparator compares values of a and b
// with cmpInt on Value.I.
func intComparable(a, b types.Type) bool {
	switch {
	case a.IsInteger() && b.IsInteger(),
		a.Kind == types.Boolean && b.Kind == types.Boolean,
		isTime(a) && isTime(b) && a.Kind == b.Kind,
		isTimestamp(a) && isTimestamp(b),
		a.Kind == types.Interval && b.Kind == types.Interval:
		return true
	}
	return false
}

// logicTyped is the typed form of AND and OR (three-valued, the right
// operand evaluated unless the left decides, as logic's eval).
func logicTyped(op string, l, r Expr) (predFn, FilterFn) {
	pa, pb := predOf(l), predOf(r)
	fb := FilterOf(r)
	if op == "AND" {
		return func(row []types.Value) tri {
				a := pa(row)
				if a == triFalse {
					return triFalse
				}
				b := pb(row)
				if b == triFalse {
					return triFalse
				}
				if a == triNull || b == triNull {
					return triNull
				}
				return triTrue
			}, func(row []types.Value) bool {
				a := pa(row)
				if a == triFalse {
					return false
				}
				return fb(row) && a == triTrue
			}
	}
	return func(row []types.Value) tri {
			a := pa(row)
			if a == triTrue {
				return triTrue
			}
			b := pb(row)
			if b == triTrue {
				return triTrue
			}
			if a == triNull || b == triNull {
				return triNull
			}
			return triFalse
		}, func(row []types.Value) bool {
			if pa(row) == triTrue {
				return true
			}
			return fb(row)
		}
}

// notTyped is the typed form of NOT.
func notTyped(x Expr) (predFn, FilterFn) {
	p := predOf(x)
	return func(row []types.Value) tri {
			switch t := p(row); t {
			case triTrue:
				return triFalse
			case triFalse:
				return triTrue
			default:
				return t
			}
		}, func(row []types.Value) bool {
			return p(row) == triFalse
		}
}

// stringCompare is the typed form of a comparison of two strings (or two
// byte strings), what Comparator does with strings.Compare: both operands
// evaluated, NULL wins; against a constant, the constant read once.
func stringCompare(op string, l, r Expr) predFn {
	f, g := l.Eval, r.Eval
	m := cmpMask(op)
	if r.Const && !l.Const {
		c := g(nil)
		if c.Null {
			return func(row []types.Value) tri { f(row); return triNull }
		}
		cs := c.S
		if (op == "=" || op == "<>") && l.fold != nil {
			if p := foldCompare(l.fold, cs, op == "<>"); p != nil {
				return p
			}
		}
		if op == "=" || op == "<>" {
			eq := tri(1)
			if op == "<>" {
				eq = 0
			}
			return func(row []types.Value) tri {
				a := f(row)
				switch {
				case a.Null:
					return triNull
				case a.S == cs:
					return eq
				}
				return 1 - eq
			}
		}
		return func(row []types.Value) tri {
			a := f(row)
			if a.Null {
				return triNull
			}
			return tri(m >> (strings.Compare(a.S, cs) + 1) & 1)
		}
	}
	return func(row []types.Value) tri {
		a, b := f(row), g(row)
		if a.Null || b.Null {
			return triNull
		}
		return tri(m >> (strings.Compare(a.S, b.S) + 1) & 1)
	}
}

// isNullTyped is the typed form of x IS NULL (x IS NOT NULL when not).
func isNullTyped(x Expr, not bool) predFn {
	f := x.Eval
	if x.ival != nil {
		iv := x.ival
		return func(r []types.Value) tri {
			if _, ok := iv(r); ok == not {
				return triTrue
			}
			return triFalse
		}
	}
	return func(r []types.Value) tri {
		if f(r).Null != not {
			return triTrue
		}
		return triFalse
	}
}
