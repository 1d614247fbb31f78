package expr

import (
	"math"
	"math/bits"

	"github.com/weirstream/weir/sql/types"
)

// The int64 fast path of DECIMAL arithmetic. Most decimals of a stream
// hold small unscaled values even when their type's precision is above 18
// (Nexmark's q1 computes 0.908 * price, a DECIMAL(22, 3)): + - * on them
// run in int64, with the overflow checked, and only an overflow takes the
// big.Int path. The results are those of the big path, digit for digit:
// the same HALF_UP rescale, the same NULL on overflow of the result's
// precision.

// decInt64 returns the unscaled value of a decimal (or an integer) of type
// t as an int64, when it fits one.
func decInt64(v types.Value, t types.Type) (int64, bool) {
	if int64Layout(t) {
		return v.I, true
	}
	b := v.BigInt()
	if b == nil {
		return v.I, true // the compact form (types.Value.X)
	}
	if b.IsInt64() {
		return b.Int64(), true
	}
	return 0, false
}

// decResult64 makes a value of decimal type t from an unscaled int64: NULL
// when it overflows t's precision, as decValue.
func decResult64(u int64, t types.Type) types.Value {
	if t.Precision <= 18 && (u > pow10[t.Precision]-1 || u < 1-pow10[t.Precision]) {
		return types.NullValue // beyond 18 digits, every int64 fits
	}
	return types.Value{I: u} // whatever t's precision: the compact form of a big decimal
}

// decArith64 computes a op b (op one of + - *) of decimals of types da and
// db (their unscaled values x and y) into a decimal of type out; ok is
// false when an int64 could overflow and the caller must take the big
// path.
func decArith64(op string, x, y int64, da, db, out types.Type) (types.Value, bool) {
	switch op {
	case "+", "-":
		s := max(da.Scale, db.Scale)
		x, ok := rescale64(x, da.Scale, s)
		if !ok {
			return types.Value{}, false
		}
		y, ok := rescale64(y, db.Scale, s)
		if !ok {
			return types.Value{}, false
		}
		if op == "-" {
			if y == math.MinInt64 {
				return types.Value{}, false
			}
			y = -y
		}
		sum := x + y
		if (x >= 0) == (y >= 0) && (sum >= 0) != (x >= 0) {
			return types.Value{}, false // overflow
		}
		r, ok := rescale64(sum, s, out.Scale)
		if !ok {
			return types.Value{}, false
		}
		return decResult64(r, out), true
	case "*":
		return decMul64(x, y, da.Scale+db.Scale, out)
	}
	return types.Value{}, false
}

// decMul64 is decArith64's *: x * y, of scale scale, into out.
func decMul64(x, y int64, scale int, out types.Type) (types.Value, bool) {
	ux, uy := uint64(x), uint64(y)
	if x < 0 {
		ux = -ux
	}
	if y < 0 {
		uy = -uy
	}
	hi, lo := bits.Mul64(ux, uy)
	if hi != 0 || lo > math.MaxInt64 {
		return types.Value{}, false
	}
	p := int64(lo)
	if (x < 0) != (y < 0) {
		p = -p
	}
	if scale != out.Scale {
		var ok bool
		if p, ok = rescale64(p, scale, out.Scale); !ok {
			return types.Value{}, false
		}
	}
	return decResult64(p, out), true
}
