package expr

import (
	"math/big"

	"github.com/weirstream/weir/sql/types"
)

// The typed form of DECIMAL expressions (expr_typed.go's idea for
// decimals): a decimal's unscaled value as an int64 when it fits one,
// which is what most decimals of a stream hold even when their type is
// wider than 18 digits (Nexmark q14's 0.908 * price, a DECIMAL(23, 3)).
// A comparison of decimals then compares int64s, with its constant side
// rescaled once, where the generic one returned each operand as a
// types.Value and compared through Comparator (q14's WHERE 0.908 * price
// > 1000000 AND 0.908 * price < 50000000). A value that does not fit
// takes the generic comparison, on the same values: the results are
// Comparator's (decimal_typed_test.go checks them against the generic
// compilation).

// decimalFn is a DECIMAL (or integer) expression's value: its unscaled value
// at its type's scale in i when it fits an int64, else in wide (i unset;
// wide is the value's own, not to be changed); ok is false for NULL.
type decimalFn func(r []types.Value) (i int64, wide *big.Int, ok bool)

// decParts splits a value of numeric type t (an integer or a decimal)
// into decimalFn's results.
func decParts(v types.Value, t types.Type) (int64, *big.Int, bool) {
	if v.Null {
		return 0, nil, false
	}
	if t.BigDecimal() {
		if b := v.BigInt(); b != nil {
			if b.IsInt64() {
				return b.Int64(), nil, true
			}
			return 0, b, true
		}
	}
	return v.I, nil, true // integers, decimals up to 18 digits, the compact form
}

// decValueOf is the value decParts split (for a decimal type above 18
// digits, in the compact form when it fits an int64, as the arithmetic
// makes them).
func decValueOf(i int64, wide *big.Int) types.Value {
	if wide != nil {
		return types.Value{X: wide}
	}
	return types.Value{I: i}
}

// decimalOfExpr returns x's value as a decimalFn (x of an integer or decimal type).
func decimalOfExpr(x Expr) decimalFn {
	if x.dec != nil {
		return x.dec
	}
	f, t := x.Eval, x.Type
	return func(r []types.Value) (int64, *big.Int, bool) { return decParts(f(r), t) }
}

// isDecOrInt reports whether t is a decimal or an integer type (decimalFn's
// operands).
func isDecOrInt(t types.Type) bool { return t.Kind == types.Decimal || t.IsInteger() }

// decCompare is the typed form of a comparison of two decimals (or a
// decimal and an integer): both operands evaluated in order, NULL wins,
// then what Comparator(l.Type, r.Type) gives. (Its filter is FilterOf's:
// p == TRUE.)
func decCompare(op string, l, r Expr) predFn {
	cmp := Comparator(l.Type, r.Type)
	f, g := decimalOfExpr(l), decimalOfExpr(r)
	sa, sb := decimalOf(l.Type).Scale, decimalOf(r.Type).Scale
	s := max(sa, sb)
	m := cmpMask(op)
	if r.Const && !l.Const {
		c := r.Eval(nil)
		if c.Null {
			return func(row []types.Value) tri { f(row); return triNull }
		}
		if y, yw, _ := decParts(c, r.Type); yw == nil {
			if q, ok := rescale64(y, sb, s); ok {
				// the constant at the common scale, once (q14: 1000000
				// against a DECIMAL(23, 3) is 1000000000)
				p := func(row []types.Value) tri {
					x, xw, ok := f(row)
					if !ok {
						return triNull
					}
					if xw == nil {
						if x, ok := rescale64(x, sa, s); ok {
							return tri(m >> (cmpInt(x, q) + 1) & 1)
						}
					}
					return tri(m >> (cmp(decValueOf(x, xw), c) + 1) & 1)
				}
				return p
			}
		}
	}
	return func(row []types.Value) tri {
		x, xw, ok1 := f(row)
		y, yw, ok2 := g(row)
		if !ok1 || !ok2 {
			return triNull
		}
		if xw == nil && yw == nil {
			a, ok1 := rescale64(x, sa, s)
			b, ok2 := rescale64(y, sb, s)
			if ok1 && ok2 {
				return tri(m >> (cmpInt(a, b) + 1) & 1)
			}
		}
		return tri(m >> (cmp(decValueOf(x, xw), decValueOf(y, yw)) + 1) & 1)
	}
}
