package types

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/big"
)

// RowKind is the change a row stands for in a changelog, as Flink's RowKind.
type RowKind uint8

const (
	Insert       RowKind = iota // +I
	UpdateBefore                // -U: the old image of an update (a retraction)
	UpdateAfter                 // +U: the new image of an update
	Delete                      // -D
)

// KindFlags are the bits of a RowKind above the four kinds: the planner
// marks rows in flight with them (the side of a join's or a set
// operation's input, on the union it keys). The binary encoding keeps
// them, so such a row crosses a repartition topic (group mode) as it is.
const KindFlags RowKind = 0xF0

// String returns Flink's short form: "+I", "-U", "+U", "-D".
func (k RowKind) String() string {
	switch k {
	case Insert:
		return "+I"
	case UpdateBefore:
		return "-U"
	case UpdateAfter:
		return "+U"
	case Delete:
		return "-D"
	}
	return fmt.Sprintf("RowKind(%d)", uint8(k))
}

// IsRetraction reports whether the row takes a previous row back (-U, -D).
func (k RowKind) IsRetraction() bool { return k == UpdateBefore || k == Delete }

// ParseRowKind reads the short form.
func ParseRowKind(s string) (RowKind, error) {
	switch s {
	case "+I":
		return Insert, nil
	case "-U":
		return UpdateBefore, nil
	case "+U":
		return UpdateAfter, nil
	case "-D":
		return Delete, nil
	}
	return 0, fmt.Errorf("unknown row kind %q (want +I, -U, +U or -D)", s)
}

// Value is one field of a row. Which member holds the value depends on the
// field's Type (see Kind); a Value does not know its own type. Values are
// small and copied by value: reading an INT field is Values[i].I, with no
// type switch and no allocation.
type Value struct {
	// I holds booleans, integers, dates, times, timestamps, intervals,
	// floating point bits and small decimals' unscaled values.
	I int64
	// S holds strings and bytes.
	S string
	// X holds composite values ([]Value for ARRAY, MAP, ROW, MULTISET),
	// big decimals (*big.Int) and DISTINCT aggregates' accumulators
	// (*CountedSet, encoded as a []Value). A DECIMAL of precision above 18 is held
	// compactly: its unscaled value in I when it fits an int64 (X nil), a
	// *big.Int in X only when it does not, so that most of them cost no
	// allocation. Readers take both forms (a *big.Int that fits is valid
	// too, as older state holds); Equal and Key see them as the same number.
	X any
	// Null marks SQL NULL; the other members are then zero.
	Null bool
}

// NullValue is SQL NULL.
var NullValue = Value{Null: true}

// Constructors.
func IntValue(i int64) Value           { return Value{I: i} }
func StringValue(s string) Value       { return Value{S: s} }
func FloatValue(f float64) Value       { return Value{I: int64(math.Float64bits(f))} }
func ListValue(vs []Value) Value       { return Value{X: vs} }
func BigDecimalValue(u *big.Int) Value { return Value{X: u} }
func BoolValue(b bool) Value {
	if b {
		return Value{I: 1}
	}
	return Value{}
}

// Accessors.
func (v Value) Bool() bool       { return v.I != 0 }
func (v Value) Float() float64   { return math.Float64frombits(uint64(v.I)) }
func (v Value) List() []Value    { l, _ := v.X.([]Value); return l }
func (v Value) BigInt() *big.Int { b, _ := v.X.(*big.Int); return b }

// Row is a row of a table or a changelog: its kind and its field values in
// schema order.
type Row struct {
	Kind   RowKind
	Values []Value
}

// Value tags of the binary encoding.
const (
	tagNull byte = iota
	tagInt
	tagString
	tagList
	tagBig
	tagIntString // I and S both set (not produced by the constructors, kept exact)
)

// MarshalBinary encodes the row self-describingly, so that rows can be kept
// in keyed state and checkpoints (internal/codec stores BinaryMarshalers by
// their methods).
func (r Row) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, 16+len(r.Values)*9)
	b = append(b, byte(r.Kind))
	return appendValues(b, r.Values)
}

// AppendBinary appends the encoding of the row to b.
func (r Row) AppendBinary(b []byte) ([]byte, error) {
	b = append(b, byte(r.Kind))
	return appendValues(b, r.Values)
}

func appendValues(b []byte, vs []Value) ([]byte, error) {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		var err error
		if b, err = appendValue(b, v); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendFlat is appendValues for values of no composite (X nil), which
// is not recursive and so does not make its buffer escape; ok is false
// (and b to be dropped) at the first composite value.
func appendFlat(b []byte, vs []Value) (_ []byte, ok bool) {
	b = binary.AppendUvarint(b, uint64(len(vs)))
	for _, v := range vs {
		if v.X != nil && !v.Null {
			return b, false
		}
		b = appendScalar(b, v)
	}
	return b, true
}

// appendScalar appends a value of no composite (X nil).
func appendScalar(b []byte, v Value) []byte {
	switch {
	case v.Null:
		return append(b, tagNull)
	case v.S != "" && v.I != 0:
		b = append(b, tagIntString)
		b = binary.AppendVarint(b, v.I)
		b = binary.AppendUvarint(b, uint64(len(v.S)))
		return append(b, v.S...)
	case v.S != "":
		b = append(b, tagString)
		b = binary.AppendUvarint(b, uint64(len(v.S)))
		return append(b, v.S...)
	}
	b = append(b, tagInt)
	return binary.AppendVarint(b, v.I)
}

func appendValue(b []byte, v Value) ([]byte, error) {
	switch {
	case v.Null:
		return append(b, tagNull), nil
	case v.X != nil:
		switch x := v.X.(type) {
		case []Value:
			b = append(b, tagList)
			return appendValues(b, x)
		case *CountedSet:
			b = append(b, tagList)
			return appendValues(b, x.list())
		case *CountedSetsView:
			b = append(b, tagList)
			return appendValues(b, x.list())
		case *big.Int:
			if x.IsInt64() {
				// the compact form of a big decimal (see Value.X): one
				// encoding per number, so that keys of equal numbers are equal
				b = append(b, tagInt)
				return binary.AppendVarint(b, x.Int64()), nil
			}
			b = append(b, tagBig)
			raw, err := x.GobEncode()
			if err != nil {
				return nil, err
			}
			b = binary.AppendUvarint(b, uint64(len(raw)))
			return append(b, raw...), nil
		default:
			return nil, fmt.Errorf("types: cannot encode a value holding %T", v.X)
		}
	}
	return appendScalar(b, v), nil
}

var errShort = errors.New("types: row encoding is truncated")

// UnmarshalBinary decodes what MarshalBinary encoded.
func (r *Row) UnmarshalBinary(data []byte) error {
	if len(data) < 1 {
		return errShort
	}
	if data[0]&^byte(KindFlags) > byte(Delete) {
		return fmt.Errorf("types: bad row kind %d", data[0])
	}
	r.Kind = RowKind(data[0])
	vs, rest, err := readValues(data[1:], 0)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("types: %d bytes after the row", len(rest))
	}
	r.Values = vs
	return nil
}

// maxDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxDepth = 64

func readValues(b []byte, depth int) ([]Value, []byte, error) {
	if depth > maxDepth {
		return nil, nil, errors.New("types: row encoding nests too deeply")
	}
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return nil, nil, errShort
	}
	b = b[k:]
	if n > uint64(len(b)) { // every value takes at least one byte
		return nil, nil, errShort
	}
	vs := make([]Value, n)
	for i := range vs {
		if len(b) == 0 {
			return nil, nil, errShort
		}
		tag := b[0]
		b = b[1:]
		switch tag {
		case tagNull:
			vs[i].Null = true
		case tagInt, tagIntString:
			x, k := binary.Varint(b)
			if k <= 0 {
				return nil, nil, errShort
			}
			vs[i].I = x
			b = b[k:]
			if tag == tagIntString {
				s, rest, err := readBytes(b)
				if err != nil {
					return nil, nil, err
				}
				vs[i].S, b = string(s), rest
			}
		case tagString:
			s, rest, err := readBytes(b)
			if err != nil {
				return nil, nil, err
			}
			vs[i].S, b = string(s), rest
		case tagList:
			l, rest, err := readValues(b, depth+1)
			if err != nil {
				return nil, nil, err
			}
			vs[i].X, b = l, rest
		case tagBig:
			raw, rest, err := readBytes(b)
			if err != nil {
				return nil, nil, err
			}
			x := new(big.Int)
			if err := x.GobDecode(raw); err != nil {
				return nil, nil, fmt.Errorf("types: bad decimal: %w", err)
			}
			vs[i].X, b = x, rest
		default:
			return nil, nil, fmt.Errorf("types: bad value tag %d", tag)
		}
	}
	return vs, b, nil
}

func readBytes(b []byte) ([]byte, []byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, errShort
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}

// Equal reports whether two rows have the same kind and values (deep).
func (r Row) Equal(o Row) bool {
	return r.Kind == o.Kind && valuesEqual(r.Values, o.Values)
}

// EqualValues reports whether two value lists are equal (deep), ignoring kinds.
func EqualValues(a, b []Value) bool { return valuesEqual(a, b) }

func valuesEqual(a, b []Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// Equal reports whether two values are equal (deep; NULL equals NULL here,
// which is what grouping and changelog matching need, not SQL's =).
func (v Value) Equal(o Value) bool {
	if v.Null || o.Null {
		return v.Null == o.Null
	}
	if x, ok := v.X.(*big.Int); ok && o.X == nil {
		return o.S == "" && x.IsInt64() && x.Int64() == o.I // a big decimal's two forms
	}
	if y, ok := o.X.(*big.Int); ok && v.X == nil {
		return v.S == "" && y.IsInt64() && y.Int64() == v.I
	}
	if v.I != o.I || v.S != o.S {
		return false
	}
	switch x := v.X.(type) {
	case nil:
		return o.X == nil
	case []Value:
		y, ok := o.X.([]Value)
		return ok && valuesEqual(x, y)
	case *big.Int:
		y, ok := o.X.(*big.Int)
		return ok && x.Cmp(y) == 0
	case *CountedSet:
		y, ok := o.X.(*CountedSet)
		return ok && x.equal(y)
	case *CountedSetsView:
		y, ok := o.X.(*CountedSetsView)
		return ok && valuesEqual(x.list(), y.list())
	}
	return false
}

// Key encodes values as a comparable string (for grouping keys, and for
// weir's operators that need comparable types): equal value lists give
// equal keys.
func Key(vs []Value) string {
	// built on the stack: the string is the one allocation (most keys
	// are a few integers)
	var buf [64]byte
	if b, ok := appendFlat(buf[:0], vs); ok {
		return string(b)
	}
	b, err := appendValues(nil, vs)
	if err != nil {
		panic(err) // only values holding foreign types fail, which the planner never builds
	}
	return string(b)
}

// AppendKey appends Key(vs) to b, for callers that reuse a buffer.
func AppendKey(b []byte, vs []Value) []byte {
	b, err := appendValues(b, vs)
	if err != nil {
		panic(err)
	}
	return b
}

// ParseKey decodes a Key back into values.
func ParseKey(k string) ([]Value, error) {
	vs, rest, err := readValues([]byte(k), 0)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("types: %d bytes after the key", len(rest))
	}
	return vs, nil
}
