package sql

import (
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// Typed evaluation. Every compiled expression has its generic evalFn,
// which returns a 48-byte types.Value; the common expressions of filters
// and integer arithmetic also carry a typed form that the expressions over
// them call instead (cexpr.ival, cexpr.pred, cexpr.filt):
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
// expression without a typed form is read through its eval (intOf, predOf,
// filterOf), so typed and generic expressions compose freely.

// genericOnly is set by tests to compile expressions without typed forms:
// the reference the typed ones are compared with.
var genericOnly = false

// tri is a SQL truth value.
type tri uint8

const (
	triFalse tri = iota
	triTrue
	triNull
)

type intFn func(r []types.Value) (int64, bool)
type predFn func(r []types.Value) tri
type filterFn func(r []types.Value) bool

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

// intOf returns x's value as an int64 (x of an intLayout type).
func intOf(x cexpr) intFn {
	if x.ival != nil {
		return x.ival
	}
	f := x.eval
	return func(r []types.Value) (int64, bool) { v := f(r); return v.I, !v.Null }
}

// predOf returns x's truth (x a BOOLEAN).
func predOf(x cexpr) predFn {
	if x.pred != nil {
		return x.pred
	}
	f := x.eval
	return func(r []types.Value) tri { return truth(f(r)) }
}

// filterOf returns whether x is TRUE (a WHERE's test).
func filterOf(x cexpr) filterFn {
	if x.filt != nil {
		return x.filt
	}
	if x.pred != nil {
		p := x.pred
		return func(r []types.Value) bool { return p(r) == triTrue }
	}
	f := x.eval
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

func evalOfPred(p predFn) evalFn {
	return func(r []types.Value) types.Value { return triValue(p(r)) }
}

func evalOfInt(f intFn) evalFn {
	return func(r []types.Value) types.Value {
		if i, ok := f(r); ok {
			return types.Value{I: i}
		}
		return types.NullValue
	}
}

// slotInt reads slot i of the row as an int (colRef's typed form).
func slotInt(i int) intFn {
	return func(r []types.Value) (int64, bool) { v := &r[i]; return v.I, !v.Null }
}

// leafInt reads a projecting scan's leaf as an int; its slot is assigned
// after compilation (pushdown.go), so it is read through the leaf.
func leafInt(lf *leafRef) intFn {
	return func(r []types.Value) (int64, bool) { v := &r[lf.idx]; return v.I, !v.Null }
}

// withTyped adds the typed form of a read to x (a column or a leaf).
func withTyped(x cexpr, ival intFn) cexpr {
	if intLayout(x.t) && !genericOnly {
		x.ival = ival
		if x.t.Kind == types.Boolean {
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
func konstTyped(x cexpr, v types.Value) cexpr {
	if genericOnly {
		return x
	}
	if intLayout(x.t) || x.t.Kind == types.Null {
		i, ok := v.I, !v.Null
		x.ival = func([]types.Value) (int64, bool) { return i, ok }
	}
	if x.t.Kind == types.Boolean || x.t.Kind == types.Null {
		t := truth(v)
		x.pred = func([]types.Value) tri { return t }
	}
	return x
}

// intArith is the typed form of integer + - * / % (arith's numInt): the
// operands are evaluated in order, NULL wins, and a division by zero fails
// only on non-NULL operands, as the generic path.
func intArith(op string, l, r cexpr) intFn {
	f, g := intOf(l), intOf(r)
	if r.konst && !l.konst {
		c, cok := g(nil)
		if cok && (c != 0 || (op != "/" && op != "%")) {
			switch op {
			case "+":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return a + c, ok }
			case "-":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return a - c, ok }
			case "*":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return a * c, ok }
			case "/":
				return func(row []types.Value) (int64, bool) { a, ok := f(row); return a / c, ok }
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
			return a + b, true
		case "-":
			return a - b, true
		case "*":
			return a * b, true
		case "/":
			if b == 0 {
				panic(runtimeError("division by zero"))
			}
			return a / b, true
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
// (what comparator does with cmpInt): pred and filt.
func intCompare(op string, l, r cexpr) (predFn, filterFn) {
	f, g := intOf(l), intOf(r)
	m := cmpMask(op)
	if r.konst && !l.konst {
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

// intComparable reports whether comparator compares values of a and b
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
func logicTyped(op string, l, r cexpr) (predFn, filterFn) {
	pa, pb := predOf(l), predOf(r)
	fb := filterOf(r)
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
func notTyped(x cexpr) (predFn, filterFn) {
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
// byte strings), what comparator does with strings.Compare: both operands
// evaluated, NULL wins; against a constant, the constant read once.
func stringCompare(op string, l, r cexpr) predFn {
	f, g := l.eval, r.eval
	m := cmpMask(op)
	if r.konst && !l.konst {
		c := g(nil)
		if c.Null {
			return func(row []types.Value) tri { f(row); return triNull }
		}
		cs := c.S
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
func isNullTyped(x cexpr, not bool) predFn {
	f := x.eval
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
