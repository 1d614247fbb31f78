package types

import (
	"math"
	"math/big"
	"testing"
)

// TestBigDecimalForms: a DECIMAL of precision above 18 is held in I when
// its unscaled value fits an int64 and as a *big.Int otherwise, and older
// state may hold a *big.Int that fits; both forms of one number are Equal,
// have the same Key, and decode to the compact form.
func TestBigDecimalForms(t *testing.T) {
	for _, n := range []int64{0, 1, -1, 112098048, math.MaxInt64, math.MinInt64} {
		compact, boxed := IntValue(n), BigDecimalValue(big.NewInt(n))
		if !compact.Equal(boxed) || !boxed.Equal(compact) {
			t.Fatalf("%d: the two forms are not Equal", n)
		}
		if Key([]Value{compact}) != Key([]Value{boxed}) {
			t.Fatalf("%d: the two forms have different keys", n)
		}
		var r Row
		b, _ := Row{Values: []Value{boxed}}.MarshalBinary()
		if err := r.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if r.Values[0].X != nil || r.Values[0].I != n {
			t.Fatalf("%d decodes to %+v, want the compact form", n, r.Values[0])
		}
		if compact.Equal(BigDecimalValue(big.NewInt(n+1))) || (n != 0 && compact.Equal(Value{S: "x", I: n})) {
			t.Fatalf("%d: Equal to another number", n)
		}
	}
	huge := new(big.Int).Lsh(big.NewInt(1), 70)
	v := BigDecimalValue(huge)
	if v.Equal(IntValue(0)) || IntValue(0).Equal(v) || Key([]Value{v}) == Key([]Value{IntValue(0)}) {
		t.Fatal("2^70 equals 0")
	}
	var r Row
	b, _ := Row{Values: []Value{v}}.MarshalBinary()
	if err := r.UnmarshalBinary(b); err != nil || !r.Values[0].Equal(v) || r.Values[0].BigInt() == nil {
		t.Fatalf("2^70 decodes to %+v (%v)", r.Values, err)
	}
}
