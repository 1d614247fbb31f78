package expr

import (
	"math"
	"math/big"
	"strings"

	"github.com/weirstream/weir/sql/types"
)

// Decimals are exact: a DECIMAL(p, s) value is an unscaled integer (int64
// when p <= 18, *big.Int above, as package types lays it out) with s
// fractional digits. Arithmetic follows Flink's result types
// (decimalPlus, decimalTimes, decimalDivide below); rounding is HALF_UP, as
// Java's BigDecimal in Flink.

const maxPrecision = 38

var bigTen = big.NewInt(10)

var pow10 [19]int64

func init() {
	pow10[0] = 1
	for i := 1; i < len(pow10); i++ {
		pow10[i] = pow10[i-1] * 10
	}
}

// bigPow10s are the powers of ten up to twice the greatest precision,
// computed once: bigPow10 copies one (its callers may change what it
// returns) instead of computing it per call.
var bigPow10s [2*maxPrecision + 1]*big.Int

func init() {
	for i := range bigPow10s {
		bigPow10s[i] = new(big.Int).Exp(bigTen, big.NewInt(int64(i)), nil)
	}
}

func bigPow10(n int) *big.Int {
	if n >= 0 && n < len(bigPow10s) {
		return new(big.Int).Set(bigPow10s[n])
	}
	return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil)
}

// decBig returns the unscaled value of a decimal of type t as a new big.Int.
func decBig(v types.Value, t types.Type) *big.Int {
	if t.Kind != types.Decimal {
		return big.NewInt(v.I) // an integer read as a decimal of scale 0
	}
	if t.BigDecimal() {
		if b := v.BigInt(); b != nil {
			return new(big.Int).Set(b)
		}
		// the compact form (types.Value.X): the unscaled value in I
	}
	return big.NewInt(v.I)
}

// decValue makes a value of decimal type t from an unscaled big.Int; nil
// (overflow of t's precision) gives NULL, as Flink does on decimal overflow.
func decValue(u *big.Int, t types.Type) types.Value {
	if u.CmpAbs(maxUnscaled(t.Precision)) > 0 {
		return types.NullValue
	}
	if t.BigDecimal() && !u.IsInt64() {
		return types.BigDecimalValue(u)
	}
	return types.Value{I: u.Int64()} // compact when it fits (types.Value.X)
}

var maxUnscaledCache [maxPrecision + 1]*big.Int

func init() {
	for p := 1; p <= maxPrecision; p++ {
		m := bigPow10(p)
		maxUnscaledCache[p] = m.Sub(m, big.NewInt(1))
	}
}

func maxUnscaled(p int) *big.Int {
	if p < 1 || p > maxPrecision {
		p = maxPrecision
	}
	return maxUnscaledCache[p]
}

// rescale changes the scale of an unscaled value, rounding HALF_UP.
func rescale(u *big.Int, from, to int) *big.Int {
	switch {
	case to == from:
		return u
	case to > from:
		return u.Mul(u, bigPow10(to-from))
	}
	d := bigPow10(from - to)
	q, r := new(big.Int).QuoRem(u, d, new(big.Int))
	// HALF_UP: |r|*2 >= d rounds away from zero
	r.Abs(r)
	r.Lsh(r, 1)
	if r.Cmp(d) >= 0 {
		if u.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q
}

// rescale64 is rescale on int64 when it cannot overflow; ok is false when
// the caller must take the big path.
func rescale64(u int64, from, to int) (int64, bool) {
	if to == from {
		return u, true
	}
	if to > from {
		k := to - from
		if k >= len(pow10) {
			return 0, false
		}
		m := pow10[k]
		if u > math.MaxInt64/m || u < math.MinInt64/m {
			return 0, false
		}
		return u * m, true
	}
	k := from - to
	if k >= len(pow10) {
		return 0, false
	}
	d := pow10[k]
	q, r := u/d, u%d
	if r < 0 {
		r = -r
	}
	if 2*r >= d {
		if u < 0 {
			q--
		} else {
			q++
		}
	}
	return q, true
}

// adjustDecimal bounds a result type to precision 38, keeping at least 6
// fractional digits when it must cut (Flink's adjustPrecisionScale).
func adjustDecimal(p, s int) types.Type {
	if p <= maxPrecision {
		return types.DecimalType(p, s)
	}
	intDigits := p - s
	minScale := min(s, 6)
	s = max(maxPrecision-intDigits, minScale)
	return types.DecimalType(maxPrecision, s)
}

// decimalOf is the decimal type an exact numeric type widens to.
func decimalOf(t types.Type) types.Type {
	switch t.Kind {
	case types.Decimal:
		return t
	case types.TinyInt:
		return types.DecimalType(3, 0)
	case types.SmallInt:
		return types.DecimalType(5, 0)
	case types.Int:
		return types.DecimalType(10, 0)
	}
	return types.DecimalType(19, 0)
}

func decimalPlus(a, b types.Type) types.Type {
	a, b = decimalOf(a), decimalOf(b)
	s := max(a.Scale, b.Scale)
	return adjustDecimal(max(a.Precision-a.Scale, b.Precision-b.Scale)+s+1, s)
}

func decimalTimes(a, b types.Type) types.Type {
	a, b = decimalOf(a), decimalOf(b)
	return adjustDecimal(a.Precision+b.Precision, a.Scale+b.Scale)
}

func decimalDivide(a, b types.Type) types.Type {
	a, b = decimalOf(a), decimalOf(b)
	s := max(6, a.Scale+b.Precision+1)
	return adjustDecimal(a.Precision-a.Scale+b.Scale+s, s)
}

func decimalMod(a, b types.Type) types.Type {
	a, b = decimalOf(a), decimalOf(b)
	s := max(a.Scale, b.Scale)
	return adjustDecimal(min(a.Precision-a.Scale, b.Precision-b.Scale)+s, s)
}

// formatDecimal prints an unscaled value with scale fractional digits.
func formatDecimal(u *big.Int, scale int) string {
	s := u.String()
	if scale == 0 {
		return s
	}
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if len(s) <= scale {
		s = strings.Repeat("0", scale-len(s)+1) + s
	}
	s = s[:len(s)-scale] + "." + s[len(s)-scale:]
	if neg {
		s = "-" + s
	}
	return s
}

func formatDecimal64(u int64, scale int) string {
	return formatDecimal(big.NewInt(u), scale)
}

// parseDecimal reads a decimal literal into an unscaled value of scale s.
func parseDecimal(text string, scale int) (*big.Int, bool) {
	text = strings.TrimSpace(text)
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, false
	}
	// multiply by 10^scale and round HALF_UP
	r.Mul(r, new(big.Rat).SetInt(bigPow10(scale)))
	num, den := r.Num(), r.Denom()
	q, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	rem.Abs(rem)
	rem.Lsh(rem, 1)
	if rem.Cmp(den) >= 0 {
		if num.Sign() < 0 {
			q.Sub(q, big.NewInt(1))
		} else {
			q.Add(q, big.NewInt(1))
		}
	}
	return q, true
}

// decFloat converts a decimal value to float64.
func decFloat(v types.Value, t types.Type) float64 {
	if !t.BigDecimal() {
		return float64(v.I) / math.Pow10(t.Scale)
	}
	f, _ := new(big.Rat).SetFrac(decBig(v, t), bigPow10(t.Scale)).Float64()
	return f
}

// int64Layout reports whether values of t are held in Value.I (integers
// and decimals of precision <= 18).
func int64Layout(t types.Type) bool { return t.Kind != types.Decimal || t.Precision <= 18 }
