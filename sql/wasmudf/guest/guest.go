//go:build wasip1

package guest

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"
)

// Value is one SQL value: Kind says which member holds it (integers,
// dates, times and timestamps in I, as weir holds them; DECIMAL as its
// text in S; strings and bytes in S).
type Value struct {
	Kind Kind
	I    int64
	F    float64
	S    string
}

// Kind is a Value's wire tag.
type Kind uint8

// The tags of the ABI.
const (
	Null Kind = iota
	Bool
	Int
	Float
	String
)

// NullValue is SQL NULL.
var NullValue = Value{}

// IntValue, FloatValue, StringValue and BoolValue make values.
func IntValue(i int64) Value     { return Value{Kind: Int, I: i} }
func FloatValue(f float64) Value { return Value{Kind: Float, F: f} }
func StringValue(s string) Value { return Value{Kind: String, S: s} }
func BoolValue(b bool) Value {
	if b {
		return Value{Kind: Bool, I: 1}
	}
	return Value{Kind: Bool}
}

// IsNull reports whether v is SQL NULL.
func (v Value) IsNull() bool { return v.Kind == Null }

// in is the buffer the host writes a call's arguments into; out holds the
// last result, which the host reads before the next call.
var (
	in  []byte
	out []byte
)

//go:wasmexport weir_buffer
func weirBuffer(n int32) int32 {
	if int(n) > cap(in) {
		in = make([]byte, n)
	}
	in = in[:n]
	return int32(uintptr(unsafe.Pointer(unsafe.SliceData(in))))
}

// Signature returns a function's signature for its f_signature export:
// "ARG_TYPE, ... -> RESULT_TYPE" in SQL types, with " CALLED ON NULL
// INPUT" at the end for a function that sees NULL arguments.
func Signature(sig string) int64 {
	out = append(out[:0], sig...)
	return pack(out)
}

func pack(b []byte) int64 {
	if len(b) == 0 {
		return 0
	}
	return int64(uintptr(unsafe.Pointer(unsafe.SliceData(b))))<<32 | int64(len(b))
}

// decode reads n bytes of arguments from the buffer.
func decode(n int32, args []Value) ([]Value, error) {
	b := in[:n]
	for len(b) > 0 {
		k := Kind(b[0])
		b = b[1:]
		v := Value{Kind: k}
		switch k {
		case Null:
		case Bool, Int:
			if len(b) < 8 {
				return nil, errors.New("short argument buffer")
			}
			v.I = int64(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case Float:
			if len(b) < 8 {
				return nil, errors.New("short argument buffer")
			}
			v.F = math.Float64frombits(binary.LittleEndian.Uint64(b))
			b = b[8:]
		case String:
			if len(b) < 4 {
				return nil, errors.New("short argument buffer")
			}
			l := binary.LittleEndian.Uint32(b)
			b = b[4:]
			if uint32(len(b)) < l {
				return nil, errors.New("short argument buffer")
			}
			v.S = string(b[:l])
			b = b[l:]
		default:
			return nil, errors.New("unknown value tag")
		}
		args = append(args, v)
	}
	return args, nil
}

// errTag marks a result that is an error message, tableTag a table
// function's rows.
const (
	errTag   = 0xFF
	tableTag = 0xFE
)

func encode(v Value, err error) int64 {
	out = out[:0]
	if err != nil {
		out = append(out, errTag)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(err.Error())))
		out = append(out, err.Error()...)
		return pack(out)
	}
	out = appendValue(out, v)
	return pack(out)
}

func appendValue(b []byte, v Value) []byte {
	b = append(b, byte(v.Kind))
	switch v.Kind {
	case Bool, Int:
		b = binary.LittleEndian.AppendUint64(b, uint64(v.I))
	case Float:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.F))
	case String:
		b = binary.LittleEndian.AppendUint32(b, uint32(len(v.S)))
		b = append(b, v.S...)
	}
	return b
}

// Table runs a table function's call: fn calls emit once per row of its
// result, with one value per column of the signature's TABLE<...>.
func Table(n int32, fn func(args []Value, emit func(row ...Value)) error) int64 {
	args, err := decode(n, scratch[:0])
	if err != nil {
		return encode(Value{}, err)
	}
	scratch = args
	out = append(out[:0], tableTag, 0, 0, 0, 0)
	count := uint32(0)
	err = fn(args, func(row ...Value) {
		for _, v := range row {
			out = appendValue(out, v)
		}
		count++
	})
	if err != nil {
		return encode(Value{}, err)
	}
	binary.LittleEndian.PutUint32(out[1:], count)
	return pack(out)
}

var scratch []Value

// Scalar runs a scalar function's call: n bytes of arguments are in the
// buffer; it returns the packed result for the export to return.
func Scalar(n int32, fn func(args []Value) (Value, error)) int64 {
	args, err := decode(n, scratch[:0])
	if err != nil {
		return encode(Value{}, err)
	}
	scratch = args
	return encode(fn(args))
}

// Aggregate runs an aggregate's f_accumulate, f_retract or f_merge: the
// first value is the accumulator (NULL for a new one), then the row's
// arguments (or the other accumulator); fn returns the new accumulator.
// For f_result, fn sees the accumulator alone and returns the result.
func Aggregate(n int32, fn func(acc Value, args []Value) (Value, error)) int64 {
	args, err := decode(n, scratch[:0])
	if err != nil {
		return encode(Value{}, err)
	}
	scratch = args
	if len(args) == 0 {
		return encode(Value{}, errors.New("no accumulator"))
	}
	return encode(fn(args[0], args[1:]))
}
