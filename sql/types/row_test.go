package types

import (
	"math/big"
	"testing"
)

func TestRowRoundTrip(t *testing.T) {
	big1, _ := new(big.Int).SetString("-123456789012345678901234567890", 10)
	rows := []Row{
		{},
		{Kind: Delete, Values: []Value{NullValue, IntValue(-7), StringValue("héllo"), FloatValue(2.5), BoolValue(true)}},
		{Kind: UpdateAfter, Values: []Value{ListValue([]Value{IntValue(1), ListValue([]Value{StringValue("x"), NullValue})}), BigDecimalValue(big1), {I: 3, S: "both"}}},
		// a join's right-side row in flight (group mode sends it through a
		// repartition topic): the flag bits round-trip
		{Kind: Delete | 0x40, Values: []Value{IntValue(1)}},
	}
	for _, r := range rows {
		b, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var got Row
		if err := got.UnmarshalBinary(b); err != nil {
			t.Fatalf("%v: %v", r, err)
		}
		if !got.Equal(r) {
			t.Fatalf("round trip: got %v, want %v", got, r)
		}
		for i := 0; i < len(b); i++ { // every truncation is an error, never a panic
			var x Row
			if x.UnmarshalBinary(b[:i]) == nil {
				t.Fatalf("truncated to %d of %d bytes decoded without error", i, len(b))
			}
		}
		k, err := ParseKey(Key(r.Values))
		if err != nil || !EqualValues(k, r.Values) {
			t.Fatalf("key round trip: %v %v", k, err)
		}
	}
	var x Row
	if err := x.UnmarshalBinary([]byte{0x44}); err == nil {
		t.Fatal("kind 4 (with a flag) decoded without error")
	}
	if Key([]Value{IntValue(1)}) == Key([]Value{StringValue("1")}) {
		t.Fatal("keys of different values are equal")
	}
}

func TestTypeString(t *testing.T) {
	for _, c := range []struct {
		t    Type
		want string
	}{
		{DecimalType(10, 2), "DECIMAL(10, 2)"},
		{StringType, "STRING"},
		{Type{Kind: Varchar, Length: 5, NotNull: true}, "VARCHAR(5) NOT NULL"},
		{RowOf(Field{Name: "a", Type: IntType}, Field{Name: "b", Type: ArrayOf(StringType)}), "ROW<`a` INT, `b` ARRAY<STRING>>"},
		{MapOf(StringType, BigIntType), "MAP<STRING, BIGINT>"},
		{Timestamp3, "TIMESTAMP(3)"},
	} {
		if got := c.t.String(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
	if s := (Schema{{Name: "Price"}}); s.Index("price") != 0 || s.Index("x") != -1 {
		t.Fatal("Schema.Index")
	}
}

func FuzzRowDecode(f *testing.F) {
	r := Row{Kind: UpdateBefore, Values: []Value{IntValue(5), StringValue("a"), ListValue([]Value{NullValue})}}
	b, _ := r.MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var x Row
		if x.UnmarshalBinary(data) != nil {
			return
		}
		again, err := x.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var y Row
		if err := y.UnmarshalBinary(again); err != nil || !y.Equal(x) {
			t.Fatalf("re-encoding differs: %v %v", y, err)
		}
	})
}

// TestKeyFlatAllocatesOnce: a key of plain values (no composite) is
// built on the stack, the string its one allocation, and encodes as
// AppendKey does (the form every key in state has).
func TestKeyFlatAllocatesOnce(t *testing.T) {
	for _, vs := range [][]Value{
		{IntValue(1)},
		{IntValue(-1234567), StringValue("a string key"), NullValue, {I: 3, S: "both"}, FloatValue(2.5)},
		{StringValue(string(make([]byte, 100)))}, // longer than the stack buffer
		{IntValue(1), ListValue([]Value{IntValue(2)})},
	} {
		if got, want := Key(vs), string(AppendKey(nil, vs)); got != want {
			t.Fatalf("Key(%v) = %x, AppendKey %x", vs, got, want)
		}
	}
	vs := []Value{IntValue(42), StringValue("bidder")}
	if n := testing.AllocsPerRun(100, func() { _ = Key(vs) }); n != 1 {
		t.Fatalf("Key of two plain values: %v allocations, want 1", n)
	}
}
