package codec

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unsafe"
)

// marshaled has its own encoding, as a BinaryMarshaler only.
type marshaled struct{ S string }

func (m marshaled) MarshalBinary() ([]byte, error) { return []byte(m.S), nil }
func (m *marshaled) UnmarshalBinary(b []byte) error {
	m.S = string(b)
	return nil
}

// appended is marshaled that also appends its encoding (as sql's Row).
type appended struct{ S string }

func (m appended) MarshalBinary() ([]byte, error) { return []byte(m.S), nil }
func (m appended) AppendBinary(b []byte) ([]byte, error) {
	return append(b, m.S...), nil
}
func (m *appended) UnmarshalBinary(b []byte) error {
	m.S = string(b)
	return nil
}

// TestAppenderCodec: a BinaryMarshaler that is also a BinaryAppender
// encodes to the same bytes as one that only marshals (its length, then
// its bytes, a length of one byte and of two), after what the buffer held,
// reads back, and appends without allocating.
func TestAppenderCodec(t *testing.T) {
	mc, err := For(reflect.TypeFor[marshaled](), Value)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := For(reflect.TypeFor[appended](), Value)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"", "x", strings.Repeat("ab", 100)} {
		m, a := marshaled{s}, appended{s}
		want := mc.Append([]byte("head"), unsafe.Pointer(&m))
		got := ac.Append([]byte("head"), unsafe.Pointer(&a))
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes: appended %x, marshaled %x", len(s), got, want)
		}
		var back appended
		if rest, err := ac.Read(got[4:], unsafe.Pointer(&back)); err != nil || len(rest) != 0 || back != a {
			t.Fatalf("%d bytes: read back %q, rest %d, %v", len(s), back.S, len(rest), err)
		}
	}
	a, buf := appended{strings.Repeat("ab", 100)}, make([]byte, 0, 512)
	if n := testing.AllocsPerRun(100, func() { buf = ac.Append(buf[:0], unsafe.Pointer(&a)) }); n != 0 {
		t.Errorf("%v allocations per append", n)
	}
}
