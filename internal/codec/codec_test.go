package codec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// voidNS is internal/state's VoidNamespace.
type voidNS struct{}

type inner struct {
	A int16
	b [2]uint8
}

type outer struct {
	S   string
	in  inner
	F   float32
	u   uint
	ok  bool
	Arr [3]int32
}

type fancy struct {
	Name  string
	tags  []string
	m     map[string][]int
	p     *outer
	nilp  *int
	When  time.Time
	B     []byte
	C     complex128
	Empty struct{}
	Nest  [][]inner
}

func roundTrip[T any](t *testing.T, key bool, v T) []byte {
	t.Helper()
	f := Value
	if key {
		f = Key
	}
	c, err := OfType[T](f)
	if err != nil {
		t.Fatalf("%T: %v", v, err)
	}
	enc := c.Append([]byte("prefix"), &v)
	if !bytes.HasPrefix(enc, []byte("prefix")) {
		t.Fatal("append overwrote dst")
	}
	enc = append(enc[len("prefix"):], "tail"...)
	var got T
	rest, err := c.Read(enc, &got)
	if err != nil {
		t.Fatalf("%T: decode: %v", v, err)
	}
	if string(rest) != "tail" {
		t.Fatalf("%T: decode left %q, want the tail: not prefix-free", v, rest)
	}
	if !reflect.DeepEqual(got, v) {
		t.Fatalf("%T: round trip %+v, want %+v", v, got, v)
	}
	if c.C.Fixed >= 0 && len(enc)-4 != c.C.Fixed {
		t.Fatalf("%T: fixed size %d but %d bytes", v, c.C.Fixed, len(enc)-4)
	}
	// Every truncation fails cleanly.
	for i := range len(enc) - 4 {
		var x T
		if _, err := c.Read(enc[:i], &x); err == nil && c.C.Fixed != 0 {
			t.Fatalf("%T: decoding %d of %d bytes succeeded", v, i, len(enc)-4)
		}
	}
	return enc[:len(enc)-4]
}

func TestCodecRoundTrip(t *testing.T) {
	roundTrip(t, true, "")
	roundTrip(t, true, "héllo")
	roundTrip(t, true, int64(-5))
	roundTrip(t, true, int(math.MinInt))
	roundTrip(t, true, uint8(200))
	roundTrip(t, true, int8(-100))
	roundTrip(t, true, true)
	roundTrip(t, true, math.Inf(-1))
	roundTrip(t, true, float32(-1.5))
	roundTrip(t, true, outer{S: "x", in: inner{-3, [2]uint8{1, 2}}, F: 2.5, u: 7, ok: true, Arr: [3]int32{-1, 0, 1}})
	roundTrip(t, true, voidNS{})
	roundTrip(t, false, voidNS{})
	roundTrip(t, false, struct{}{})
	roundTrip(t, false, []int(nil))
	roundTrip(t, false, []int{1, -2})
	roundTrip(t, false, []struct{}{{}, {}, {}})
	roundTrip(t, false, map[string]int(nil))
	roundTrip(t, false, map[string]int{})
	x := 3
	roundTrip(t, false, &x)
	roundTrip(t, false, fancy{
		Name: "n", tags: []string{"a", ""}, m: map[string][]int{"k": {1}, "e": nil},
		p: &outer{S: "deep", u: 9}, When: time.Date(2024, 5, 1, 2, 3, 4, 5, time.UTC),
		B: []byte{0, 1}, C: complex(1, -2), Nest: [][]inner{{{A: 1}}, nil},
	})
	roundTrip(t, false, fancy{})
}

// Key encodings are canonical and sort like the numbers they encode.
func TestKeyCodecOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	ints := []int64{math.MinInt64, -1 << 40, -1, 0, 1, 1 << 40, math.MaxInt64}
	floats := []float64{math.Inf(-1), -1e300, -1, -1e-300, 0, 1e-300, 1, 1e300, math.Inf(1)}
	for range 1000 {
		ints = append(ints, int64(r.Uint64()))
		floats = append(floats, r.NormFloat64()*1e6)
	}
	checkOrder(t, ints)
	checkOrder(t, floats)
	u32 := []uint32{0, 1, 1 << 31, math.MaxUint32}
	checkOrder(t, u32)
	i16 := []int16{math.MinInt16, -1, 0, 1, math.MaxInt16}
	checkOrder(t, i16)
	c, _ := OfType[float64](Key)
	neg, pos := -0.0, 0.0
	neg = math.Copysign(neg, -1)
	if !bytes.Equal(c.Append(nil, &neg), c.Append(nil, &pos)) {
		t.Fatal("-0 and +0 encode differently: equal keys must encode alike")
	}
}

func checkOrder[T int64 | float64 | uint32 | int16](t *testing.T, xs []T) {
	t.Helper()
	c, err := OfType[T](Key)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(xs)
	var prev []byte
	for i, x := range xs {
		b := c.Append(nil, &x)
		if i > 0 && xs[i-1] != x && bytes.Compare(prev, b) >= 0 {
			t.Fatalf("%v encodes at or before %v", x, xs[i-1])
		}
		prev = b
	}
}

func TestCodecRejects(t *testing.T) {
	type withIface struct{ X any }
	type withChan struct{ c chan int }
	type list struct {
		Next *list
		V    int
	}
	for _, c := range []struct {
		key bool
		t   reflect.Type
	}{
		{false, reflect.TypeFor[withIface]()},
		{false, reflect.TypeFor[withChan]()},
		{false, reflect.TypeFor[func()]()},
		{false, reflect.TypeFor[list]()},
		{true, reflect.TypeFor[[]int]()},
		{true, reflect.TypeFor[*int]()},
		{true, reflect.TypeFor[time.Time]()},
	} {
		var err error
		if c.key {
			_, err = Build(c.t, Key)
		} else {
			_, err = Build(c.t, Value)
		}
		if err == nil {
			t.Errorf("%v (key %v) accepted", c.t, c.key)
		}
	}
}

func TestCodecSignatures(t *testing.T) {
	type a struct {
		X string
		y int64
	}
	type b struct {
		Renamed string
		other   int
	}
	type c struct {
		X int64
		Y string
	}
	sig := func(t reflect.Type) string {
		c, err := Build(t, Value)
		if err != nil {
			panic(err)
		}
		return c.Sig
	}
	if sig(reflect.TypeFor[a]()) != sig(reflect.TypeFor[b]()) {
		t.Error("renaming fields changed the layout")
	}
	if sig(reflect.TypeFor[a]()) == sig(reflect.TypeFor[c]()) {
		t.Error("reordering field types kept the layout")
	}
}
