package expr

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// decOf makes a value of decimal (or integer) type t from an unscaled
// value, in t's layout.
func decOf(u *big.Int, t types.Type) types.Value {
	if int64Layout(t) || u.IsInt64() {
		return types.Value{I: u.Int64()} // the compact form of a big decimal too
	}
	return types.BigDecimalValue(u)
}

// sameDecimal reports whether two values of decimal type t are the same
// number (or both NULL), whatever holds them.
func sameDecimal(a, b types.Value, t types.Type) bool {
	if a.Null || b.Null {
		return a.Null == b.Null
	}
	return decBig(a, t).Cmp(decBig(b, t)) == 0
}

// TestDecimalFastPathMatchesBig checks the int64 fast path of + - * against
// the big.Int path on the edges: results that overflow int64 (the big
// path takes over), negative operands and MinInt64, HALF_UP rounding when
// the result type cuts the scale (Flink's precision cap of 38), scale
// changes between operands, operands of big layout holding small values,
// and random values around every power of ten.
func TestDecimalFastPathMatchesBig(t *testing.T) {
	dec := types.DecimalType
	bigint := types.Type{Kind: types.BigInt}
	pairs := []struct{ l, r types.Type }{
		{dec(3, 3), bigint},      // Nexmark q1: 0.908 * price, a DECIMAL(22, 3)
		{dec(10, 2), dec(10, 5)}, // scales differ
		{dec(18, 0), dec(18, 18)},
		{bigint, bigint},           // DECIMAL(19, 0) twice: products overflow int64
		{dec(38, 10), dec(38, 10)}, // * is DECIMAL(38, 6): rounds HALF_UP
		{dec(30, 20), dec(5, 1)},
		{dec(38, 0), dec(38, 37)}, // + is capped at 38 digits: rescale down
		{dec(20, 3), bigint},
	}
	edge := []int64{0, 1, -1, 5, -5, 15, -15, 25, -25, 49, 50, 51, -50, -51, 999, 1000, 1001, 123456789,
		-987654321, math.MaxInt32, math.MinInt32, 3037000499, 3037000500, -3037000500,
		math.MaxInt64 / 908, math.MaxInt64/908 + 1, math.MaxInt64 / 10, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	rng := rand.New(rand.NewPCG(1, 2))
	for p := 0; p < 19; p++ {
		for range 2 {
			v := rng.Int64N(pow10[p]*9+1) + pow10[p] - 1
			edge = append(edge, v, -v)
		}
	}
	// a value beyond int64 in a big layout: the fast path must decline
	huge := new(big.Int).Mul(big.NewInt(math.MaxInt64), big.NewInt(1000))
	fast, total := 0, 0
	for _, pr := range pairs {
		da, db := decimalOf(pr.l), decimalOf(pr.r)
		for _, op := range []string{"+", "-", "*"} {
			var out types.Type
			switch op {
			case "*":
				out = decimalTimes(da, db)
			default:
				out = decimalPlus(da, db)
			}
			for _, x := range edge {
				for _, y := range edge {
					xb, yb := big.NewInt(x), big.NewInt(y)
					if !fitsLayout(xb, pr.l) || !fitsLayout(yb, pr.r) {
						continue
					}
					a, b := decOf(xb, pr.l), decOf(yb, pr.r)
					want := decArithBig(op, a, b, pr.l, pr.r, da, db, out)
					total++
					xi, ok1 := decInt64(a, pr.l)
					yi, ok2 := decInt64(b, pr.r)
					if !ok1 || !ok2 {
						t.Fatalf("decInt64 declined %d or %d", x, y)
					}
					got, ok := decArith64(op, xi, yi, da, db, out)
					if !ok {
						continue // the big path's answer is the answer
					}
					fast++
					if !sameDecimal(got, want, out) {
						t.Fatalf("%v %s %v (%d %s %d) into %v: fast path %v, big path %v",
							pr.l, op, pr.r, x, op, y, out, got, want)
					}
					// both paths give the compact form when the number fits an
					// int64 (types.Value.X), so that equal numbers have equal
					// keys; the big path's input may be either form
					if got.X != nil {
						t.Fatalf("%v: the fast path made a big.Int: %+v", out, got)
					}
					if b := want.BigInt(); b != nil && b.IsInt64() {
						t.Fatalf("%v: the big path kept a big.Int that fits an int64: %+v", out, want)
					}
					if types.Key([]types.Value{got}) != types.Key([]types.Value{want}) || !got.Equal(want) {
						t.Fatalf("%v: equal numbers, different keys: %+v, %+v", out, got, want)
					}
					if pr.l.BigDecimal() || pr.r.BigDecimal() {
						ab, bb := a, b
						if pr.l.BigDecimal() {
							ab = types.BigDecimalValue(xb)
						}
						if pr.r.BigDecimal() {
							bb = types.BigDecimalValue(yb)
						}
						if w2 := decArithBig(op, ab, bb, pr.l, pr.r, da, db, out); !sameDecimal(w2, want, out) {
							t.Fatalf("%v %s %v (%d %s %d): the big.Int form gives %v, the compact form %v", pr.l, op, pr.r, x, op, y, w2, want)
						}
					}
				}
			}
			if !pr.l.BigDecimal() {
				continue
			}
			if _, ok := decInt64(types.BigDecimalValue(huge), pr.l); ok {
				t.Fatalf("decInt64 took %v as an int64", huge)
			}
		}
	}
	// the fast path must carry most of it, else the test checks little
	if fast < total/2 {
		t.Fatalf("fast path took %d of %d cases", fast, total)
	}
	t.Logf("%d cases, %d on the fast path", total, fast)
}

// fitsLayout reports whether u is a value of type t (its precision).
func fitsLayout(u *big.Int, t types.Type) bool {
	t = decimalOf(t)
	if t.Kind != types.Decimal {
		return true
	}
	if int64Layout(t) && !u.IsInt64() {
		return false
	}
	return u.CmpAbs(maxUnscaled(t.Precision)) <= 0
}

// TestDecimalTimesOverflowsIntoBig: products beyond int64 are exact (the
// big path), and results beyond the type's precision are NULL, as Flink.
func TestDecimalTimesOverflowsIntoBig(t *testing.T) {
	bigint := types.Type{Kind: types.BigInt}
	e, err := arith("*", ColRef(0, types.DecimalType(3, 3)), ColRef(1, bigint), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	row := []types.Value{{I: 908}, {I: math.MaxInt64}}
	got := e.Eval(row)
	want := new(big.Int).Mul(big.NewInt(908), big.NewInt(math.MaxInt64))
	if got.BigInt() == nil || got.BigInt().Cmp(want) != 0 {
		t.Fatalf("0.908 * MaxInt64 = %v, want unscaled %v", got, want)
	}
	if s := formatDecimal(got.BigInt(), e.Type.Scale); s != "8374821809464136432.756" {
		t.Fatalf("0.908 * MaxInt64 prints %s", s)
	}
	row = []types.Value{{I: -908}, {I: 1001}}
	if s := formatDecimal(decBig(e.Eval(row), e.Type), e.Type.Scale); s != "-908.908" {
		t.Fatalf("-0.908 * 1001 prints %s", s)
	}
	// the same through the constant's path (q1's 0.908 * price), on both
	// sides, negative, and overflowing int64
	for _, c := range []struct {
		k, x int64
		want string
	}{{908, math.MaxInt64, "8374821809464136432.756"}, {-908, 1001, "-908.908"}, {908, -1001, "-908.908"},
		{-908, math.MinInt64, "8374821809464136433.664"}, {908, 0, "0.000"}} {
		for _, kl := range []bool{true, false} {
			kx, cx := Const(types.Value{I: c.k}, types.DecimalType(3, 3)), ColRef(0, bigint)
			var e Expr
			var err error
			if kl {
				e, err = arith("*", kx, cx, nil, false)
			} else {
				e, err = arith("*", cx, kx, nil, false)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := e.Eval([]types.Value{{I: c.x}})
			overflows := c.x == math.MaxInt64 || c.x == math.MinInt64
			if s := formatDecimal(decBig(got, e.Type), e.Type.Scale); s != c.want || (got.BigInt() != nil) != overflows {
				t.Fatalf("%d e-3 * %d = %s (%+v), want %s", c.k, c.x, s, got, c.want)
			}
		}
	}
	// DECIMAL(38, 10) * DECIMAL(38, 10) is DECIMAL(38, 6): 0.0000005 *
	// 1 rounds HALF_UP to 0.000001, -0.0000005 * 1 to -0.000001, and
	// 0.00000049 * 1 to 0
	d := types.DecimalType(38, 10)
	e, err = arith("*", ColRef(0, d), ColRef(1, d), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	one := types.BigDecimalValue(big.NewInt(10_000_000_000))
	for _, c := range []struct {
		x    int64
		want string
	}{{5000, "0.000001"}, {-5000, "-0.000001"}, {4900, "0.000000"}, {15000, "0.000002"}, {-14999, "-0.000001"}} {
		got := e.Eval([]types.Value{types.BigDecimalValue(big.NewInt(c.x)), one})
		if s := formatDecimal(decBig(got, e.Type), e.Type.Scale); s != c.want {
			t.Fatalf("%d e-10 * 1 = %s, want %s", c.x, s, c.want)
		}
	}
	// a sum beyond the capped precision is NULL on both paths
	d38 := types.DecimalType(38, 0)
	e, err = arith("+", ColRef(0, d38), ColRef(1, d38), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	max38 := new(big.Int).Set(maxUnscaled(38))
	if got := e.Eval([]types.Value{types.BigDecimalValue(max38), {X: big.NewInt(1)}}); !got.Null {
		t.Fatalf("max DECIMAL(38) + 1 = %v, want NULL", got)
	}
}

// TestDecimalTimesDoesNotAllocate: q1's 0.908 * price makes its
// DECIMAL(22, 3) result in the compact form (the unscaled value in I), with
// no allocation; it was one *big.Int per row.
func TestDecimalTimesDoesNotAllocate(t *testing.T) {
	e, err := arith("*", Const(types.Value{I: 908}, types.DecimalType(3, 3)), ColRef(0, types.Type{Kind: types.BigInt}), nil, false)
	if err != nil {
		t.Fatal(err)
	}
	row := []types.Value{{I: 123456}}
	var sink types.Value
	allocs := testing.AllocsPerRun(1000, func() { sink = e.Eval(row) })
	if allocs > 0 {
		t.Fatalf("0.908 * price: %.1f allocations per row, want none", allocs)
	}
	if s := formatDecimal(decBig(sink, e.Type), 3); s != "112098.048" || sink.X != nil {
		t.Fatalf("0.908 * 123456 = %s (%+v)", s, sink)
	}
}

// TestDecimalConstantTimesMatchesBig: the constant-times-column product
// (q1's 0.908 * price), whose common case skips decMul64 when the product
// cannot overflow, gives the big path's value on both sides of the
// operator, for constants of either sign and operands around the limits,
// into result types above and below 18 digits.
func TestDecimalConstantTimesMatchesBig(t *testing.T) {
	edge := []int64{0, 1, -1, 7, -7, 123456, -123456, math.MaxInt32, math.MinInt32, math.MaxInt64 / 908,
		math.MaxInt64/908 + 1, -(math.MaxInt64 / 908), -(math.MaxInt64/908 + 1), math.MaxInt64 / 10, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	for _, xt := range []types.Type{types.BigIntType, types.IntType, types.DecimalType(18, 2), types.DecimalType(10, 0)} {
		for _, k := range []struct {
			u int64
			t types.Type
		}{{908, types.DecimalType(3, 3)}, {-908, types.DecimalType(3, 3)}, {1, types.DecimalType(1, 0)},
			{0, types.DecimalType(1, 0)}, {999999999999999999, types.DecimalType(18, 0)}, {-5, types.DecimalType(2, 1)}} {
			for _, left := range []bool{true, false} {
				kx, cx := Const(types.Value{I: k.u}, k.t), ColRef(0, xt)
				l, r := kx, cx
				if !left {
					l, r = cx, kx
				}
				e, err := arith("*", l, r, nil, false)
				if err != nil {
					t.Fatal(err)
				}
				da, db := decimalOf(l.Type), decimalOf(r.Type)
				for _, x := range edge {
					if !fitsLayout(big.NewInt(x), xt) {
						continue
					}
					row := []types.Value{{I: x}}
					a, b := types.Value{I: k.u}, types.Value{I: x}
					if !left {
						a, b = b, a
					}
					want := decArithBig("*", a, b, l.Type, r.Type, da, db, e.Type)
					if got := e.Eval(row); !sameDecimal(got, want, e.Type) {
						t.Fatalf("%d (%v) * %d (%v) into %v: %+v, big path %+v", k.u, k.t, x, xt, e.Type, got, want)
					}
				}
				if got := e.Eval([]types.Value{types.NullValue}); !got.Null {
					t.Fatalf("%v * NULL = %+v", k.t, got)
				}
			}
		}
	}
}
