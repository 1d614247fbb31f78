package planner

import (
	"bytes"
	"math/big"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// A packed accumulator writes the bytes of types.Row{Values: acc}, the
// format group aggregations kept before, so state restores across the
// change both ways; it reads them back as the same values, and a change
// that a words accumulator cannot hold (a string, a big decimal) moves it
// to a boxed one.
func TestPackedAccFormat(t *testing.T) {
	big1 := new(big.Int).Lsh(big.NewInt(1), 100)
	for _, vs := range [][]types.Value{
		{types.IntValue(7), types.IntValue(1), types.IntValue(-3), types.NullValue, types.FloatValue(2.5)},
		{types.StringValue("k"), types.IntValue(2)},
		{types.IntValue(1), types.BigDecimalValue(big1)},
		{},
	} {
		a := pack(vs, false)
		got, err := a.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		want, _ := types.Row{Values: vs}.MarshalBinary()
		if !bytes.Equal(got, want) {
			t.Fatalf("%v: packed %x, as a row %x", vs, got, want)
		}
		var b packedAcc
		if err := b.UnmarshalBinary(want); err != nil {
			t.Fatal(err)
		}
		back, _ := b.unpack(nil)
		if !types.EqualValues(back, vs) {
			t.Fatalf("%v read back as %v", vs, back)
		}
		if b.HeapBytes() <= 0 && len(vs) > 0 {
			t.Fatalf("%v: %d heap bytes", vs, b.HeapBytes())
		}
	}

	a := pack([]types.Value{types.IntValue(1), types.IntValue(2)}, false)
	if a.boxed() != nil || a.HeapBytes() != 24 {
		t.Fatalf("two integers: boxed %v, %d bytes, want 3 words", a.boxed() != nil, a.HeapBytes())
	}
	var scratch []types.Value
	vs, scratch := a.unpack(scratch)
	vs[1].I = 5
	if b := a.store(vs, false); b != a {
		t.Fatal("a words accumulator that still fits is not changed in place")
	}
	vs, _ = a.unpack(scratch)
	vs[1] = types.StringValue("s")
	b := a.store(vs, false)
	if b.boxed() == nil {
		t.Fatal("a string in a words accumulator")
	}
	vs[1] = types.IntValue(9) // the scratch is not the box's
	if got, _ := b.unpack(nil); got[1].S != "s" {
		t.Fatalf("the boxed accumulator shares the scratch: %v", got)
	}
}
