package format

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"

	"github.com/weirstream/weir/sql/types"
)

// TextDecoder returns a function reading a value of scalar type t from its
// text form (a CSV field, a JSON string, a map key): numbers as written,
// BOOLEAN 'true'/'false' (any case), DATE 'yyyy-MM-dd', TIME 'HH:mm:ss[.SSS]',
// TIMESTAMP and TIMESTAMP_LTZ 'yyyy-MM-dd HH:mm:ss[.SSS]' (or ISO-8601's 'T',
// or a whole number of epoch milliseconds, UTC), BINARY/BYTES base64,
// strings as they are. It fails for ARRAY, MAP and ROW.
func TextDecoder(t types.Type) (func(b []byte, v *types.Value) error, error) {
	switch t.Kind {
	case types.Boolean:
		return func(b []byte, v *types.Value) error {
			b = bytes.TrimSpace(b)
			switch {
			case bytes.EqualFold(b, []byte("true")):
				*v = types.Value{I: 1}
			case bytes.EqualFold(b, []byte("false")):
				*v = types.Value{}
			default:
				return fmt.Errorf("'%s' is not a BOOLEAN", b)
			}
			return nil
		}, nil
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		bits := map[types.Kind]int{types.TinyInt: 8, types.SmallInt: 16, types.Int: 32, types.BigInt: 64}[t.Kind]
		name := t.Kind.String()
		return func(b []byte, v *types.Value) error {
			n, ok := ParseInt(bytes.TrimSpace(b), bits)
			if !ok {
				return fmt.Errorf("'%s' is not a %s", b, name)
			}
			*v = types.Value{I: n}
			return nil
		}, nil
	case types.Float, types.Double:
		bits := 64
		if t.Kind == types.Float {
			bits = 32
		}
		name := t.Kind.String()
		return func(b []byte, v *types.Value) error {
			f, err := strconv.ParseFloat(string(bytes.TrimSpace(b)), bits)
			if err != nil {
				return fmt.Errorf("'%s' is not a %s", b, name)
			}
			*v = types.FloatValue(f)
			return nil
		}, nil
	case types.Decimal:
		return func(b []byte, v *types.Value) error {
			d, err := ParseDecimal(bytes.TrimSpace(b), t)
			if err != nil {
				return fmt.Errorf("'%s': %v", b, err)
			}
			*v = d
			return nil
		}, nil
	case types.Char, types.Varchar:
		return func(b []byte, v *types.Value) error {
			*v = types.Value{S: string(b)}
			return nil
		}, nil
	case types.Binary, types.Varbinary:
		return func(b []byte, v *types.Value) error {
			out := make([]byte, base64.StdEncoding.DecodedLen(len(b)))
			n, err := base64.StdEncoding.Decode(out, b)
			if err != nil {
				return fmt.Errorf("'%s' is not base64 (BYTES are written in base64)", b)
			}
			*v = types.Value{S: string(out[:n])}
			return nil
		}, nil
	case types.Date:
		return func(b []byte, v *types.Value) error {
			d, err := ParseDate(bytes.TrimSpace(b))
			if err != nil {
				return fmt.Errorf("'%s' is %v", b, err)
			}
			*v = types.Value{I: d}
			return nil
		}, nil
	case types.Time:
		return func(b []byte, v *types.Value) error {
			d, err := ParseTime(bytes.TrimSpace(b))
			if err != nil {
				return fmt.Errorf("'%s' is %v", b, err)
			}
			*v = types.Value{I: truncMicros(d, t.Precision)}
			return nil
		}, nil
	case types.Timestamp, types.TimestampLTZ:
		p := t.Precision
		return func(b []byte, v *types.Value) error {
			b = bytes.TrimSpace(b)
			if ms, ok := ParseInt(b, 64); ok {
				*v = types.Value{I: truncMicros(ms*1000, p)}
				return nil
			}
			us, err := ParseTimestamp(b, p)
			if err != nil {
				return fmt.Errorf("'%s' is %v or epoch milliseconds", b, err)
			}
			*v = types.Value{I: us}
			return nil
		}, nil
	case types.Interval:
		return func(b []byte, v *types.Value) error {
			n, ok := ParseInt(bytes.TrimSpace(b), 64)
			if !ok {
				return fmt.Errorf("'%s' is not an INTERVAL (a number of %s)", b, map[bool]string{false: "milliseconds", true: "months"}[t.Months])
			}
			*v = types.Value{I: n}
			return nil
		}, nil
	}
	return nil, fmt.Errorf("type %s has no text form", t)
}

// ParseInt reads a decimal integer that fits in bits bits, without
// allocating.
func ParseInt(b []byte, bits int) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	neg := false
	if b[0] == '-' || b[0] == '+' {
		neg = b[0] == '-'
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	limit := uint64(1) << (bits - 1)
	if neg {
		if u > limit {
			return 0, false
		}
		return -int64(u), true
	}
	if u >= limit {
		return 0, false
	}
	return int64(u), true
}

// TextEncoder returns a function appending the text form of a non-NULL
// value of scalar type t (the forms TextDecoder reads; timestamps with sep
// between date and time, TIMESTAMP_LTZ with a trailing 'Z'). It fails for
// ARRAY, MAP and ROW.
func TextEncoder(t types.Type, sep byte) (func(dst []byte, v *types.Value) []byte, error) {
	switch t.Kind {
	case types.Boolean:
		return func(dst []byte, v *types.Value) []byte { return strconv.AppendBool(dst, v.I != 0) }, nil
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Interval:
		return func(dst []byte, v *types.Value) []byte { return strconv.AppendInt(dst, v.I, 10) }, nil
	case types.Float:
		return func(dst []byte, v *types.Value) []byte { return AppendFloat(dst, v.Float(), 32) }, nil
	case types.Double:
		return func(dst []byte, v *types.Value) []byte { return AppendFloat(dst, v.Float(), 64) }, nil
	case types.Decimal:
		return func(dst []byte, v *types.Value) []byte { return AppendDecimal(dst, *v, t) }, nil
	case types.Char, types.Varchar:
		return func(dst []byte, v *types.Value) []byte { return append(dst, v.S...) }, nil
	case types.Binary, types.Varbinary:
		return func(dst []byte, v *types.Value) []byte {
			return base64.StdEncoding.AppendEncode(dst, []byte(v.S))
		}, nil
	case types.Date:
		return func(dst []byte, v *types.Value) []byte { return AppendDate(dst, v.I) }, nil
	case types.Time:
		return func(dst []byte, v *types.Value) []byte { return AppendTime(dst, v.I, t.Precision) }, nil
	case types.Timestamp:
		return func(dst []byte, v *types.Value) []byte { return AppendTimestamp(dst, v.I, t.Precision, sep) }, nil
	case types.TimestampLTZ:
		return func(dst []byte, v *types.Value) []byte {
			return append(AppendTimestamp(dst, v.I, t.Precision, sep), 'Z')
		}, nil
	}
	return nil, fmt.Errorf("type %s has no text form", t)
}

// AppendFloat appends f as Java's Double.toString (bits 64) or
// Float.toString (bits 32) write it, as Flink prints them: plain notation
// with at least one fractional digit for 1e-3 <= |f| < 1e7 ("1.0",
// "0.25"), computerized scientific notation otherwise ("1.0E10",
// "1.5E-4"); "NaN", "Infinity", "-Infinity".
func AppendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "NaN"...)
	case math.IsInf(f, 1):
		return append(dst, "Infinity"...)
	case math.IsInf(f, -1):
		return append(dst, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	a := math.Abs(f)
	if a >= 1e-3 && a < 1e7 {
		n := len(dst)
		dst = strconv.AppendFloat(dst, f, 'f', -1, bits)
		if bytes.IndexByte(dst[n:], '.') < 0 {
			dst = append(dst, '.', '0')
		}
		return dst
	}
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits) // -1.2345e+07
	i := bytes.IndexByte(e, 'e')
	mant, exp := e[:i], e[i+1:]
	dst = append(dst, mant...)
	if bytes.IndexByte(mant, '.') < 0 {
		dst = append(dst, '.', '0')
	}
	dst = append(dst, 'E')
	if exp[0] == '-' {
		dst = append(dst, '-')
	}
	exp = exp[1:]
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	return append(dst, exp...)
}
