package expr

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// TestTypedDecimalMatchesGeneric compiles decimal comparisons and
// products (Nexmark q14's 0.908 * price against integer bounds, decimals
// of 18 digits and fewer, wide ones, mixed with integers) with their typed
// forms (decimal_typed.go) and without (Compiler.GenericOnly), and
// evaluates both over random rows: NULLs, values at the int64 edges where
// the product overflows and takes the big.Int path, wide decimals held
// compactly, as a *big.Int that fits an int64 (older state) and as one
// that does not. The value, the pred, the filter and the dec form equal
// the generic evaluation's.
func TestTypedDecimalMatchesGeneric(t *testing.T) {
	sc := func() *Scope {
		return &Scope{Cols: []Column{
			{Name: "a", Type: types.BigIntType}, {Name: "b", Type: types.IntType},
			{Name: "x", Type: types.DecimalType(10, 2)}, {Name: "w", Type: types.DecimalType(30, 5)},
		}}
	}
	exprs := []string{
		"0.908 * a > 1000000", "0.908 * a < 50000000", "0.908 * a > 1000000 AND 0.908 * a < 50000000",
		"1000000 < 0.908 * a", "0.908 * a = 908", "a * 0.908 >= -3.5", "0.908 * a <> 0", "0.908 * a <= 1.0005",
		"x > 1.5", "x <= w", "w < 12345678901234567890.5", "w = x", "w > a", "b <= x", "0.908 * a > w",
		"x <> CAST(NULL AS DECIMAL(5, 1))", "x = 3", "w >= 0", "a < w", "0.908 * a > x",
		"w > 99999999999999999999999.99999", "CASE WHEN 0.908 * a > 100 THEN 1 ELSE 0 END",
		"0.908 * a", "a * 1.5", "2.25 * b",
	}
	edges := []int64{0, 1, -1, 1101321, 1101322, 55066079, 55066080, 1e9, math.MaxInt64, math.MinInt64,
		math.MaxInt64 / 908, math.MaxInt64/908 + 1, -(math.MaxInt64 / 908) - 1, math.MaxInt64 / 1000, 1e15}
	rng := rand.New(rand.NewPCG(3, 5))
	huge := new(big.Int).Mul(big.NewInt(math.MaxInt64), big.NewInt(1000))
	rows := make([][]types.Value, 4000)
	for i := range rows {
		r := make([]types.Value, 4)
		for j := range r {
			if rng.IntN(6) == 0 {
				r[j] = types.NullValue
				continue
			}
			switch j {
			case 0:
				if rng.IntN(2) == 0 {
					r[j] = types.IntValue(edges[rng.IntN(len(edges))] * int64(1-2*rng.IntN(2)))
				} else {
					r[j] = types.IntValue(rng.Int64N(100_000_000))
				}
			case 1:
				r[j] = types.IntValue(rng.Int64N(2000) - 1000)
			case 2:
				r[j] = types.IntValue(rng.Int64N(2_000_000) - 1_000_000) // unscaled, scale 2
			case 3:
				switch rng.IntN(4) {
				case 0:
					r[j] = types.Value{X: new(big.Int).Neg(huge)}
				case 1:
					r[j] = types.Value{X: big.NewInt(rng.Int64N(1e9))} // a *big.Int that fits
				default:
					r[j] = types.IntValue(rng.Int64N(2e12) - 1e12)
				}
			}
		}
		rows[i] = r
	}
	typed := 0
	for _, text := range exprs {
		e, err := parser.ParseExpr(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		fast, err := (&Compiler{Scope: sc()}).Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		slow, err := (&Compiler{Scope: sc(), GenericOnly: true}).Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if slow.dec != nil || slow.pred != nil {
			t.Fatalf("%s: the generic compilation has typed forms", text)
		}
		if fast.dec != nil || fast.pred != nil {
			typed++
		}
		for _, r := range rows {
			want, wantPanic := evalCatch(slow.Eval, r)
			got, gotPanic := evalCatch(fast.Eval, r)
			if wantPanic != gotPanic || !got.Equal(want) {
				t.Fatalf("%s on %v: typed %v (failure %q), generic %v (failure %q)", text, r, got, gotPanic, want, wantPanic)
			}
			if fast.dec != nil {
				i, w, ok := fast.dec(r)
				if ok == want.Null || (ok && !decValueOf(i, w).Equal(want)) {
					t.Fatalf("%s on %v: dec %d, %v, %v; generic %v", text, r, i, w, ok, want)
				}
			}
			if fast.pred != nil {
				if v := evalOfPred(fast.pred)(r); !v.Equal(want) {
					t.Fatalf("%s on %v: pred %v, generic %v", text, r, v, want)
				}
			}
			if fast.Type.Kind == types.Boolean {
				if keep := FilterOf(fast)(r); keep != (!want.Null && want.Bool()) {
					t.Fatalf("%s on %v: filter keeps %v, generic %v", text, r, keep, want)
				}
			}
		}
	}
	if typed < 20 {
		t.Fatalf("only %d of %d expressions have typed forms: the test checks little", typed, len(exprs))
	}
}
