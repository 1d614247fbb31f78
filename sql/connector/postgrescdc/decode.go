package postgrescdc

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/weirstream/weir/internal/datetime"
	"github.com/weirstream/weir/sql/types"
)

// PostgreSQL type OIDs (pg_type.oid; fixed for built-in types).
const (
	oidBool        = 16
	oidBytea       = 17
	oidChar        = 18
	oidName        = 19
	oidInt8        = 20
	oidInt2        = 21
	oidInt4        = 23
	oidText        = 25
	oidJSON        = 114
	oidXML         = 142
	oidCidr        = 650
	oidFloat4      = 700
	oidFloat8      = 701
	oidMacaddr     = 829
	oidInet        = 869
	oidBpchar      = 1042
	oidVarchar     = 1043
	oidDate        = 1082
	oidTime        = 1083
	oidTimestamp   = 1114
	oidTimestamptz = 1184
	oidNumeric     = 1700
	oidUUID        = 2950
	oidJSONB       = 3802

	// firstUserOID is PostgreSQL's FirstNormalObjectId: types created by
	// users (enums, domains, extensions' types such as citext) have OIDs
	// from here on, and are read as their text form.
	firstUserOID = 16384
)

var oidNames = map[uint32]string{
	oidBool: "boolean", oidBytea: "bytea", oidChar: "\"char\"", oidName: "name", oidInt8: "bigint",
	oidInt2: "smallint", oidInt4: "integer", oidText: "text", oidJSON: "json", oidXML: "xml",
	oidCidr: "cidr", oidFloat4: "real", oidFloat8: "double precision", oidMacaddr: "macaddr",
	oidInet: "inet", oidBpchar: "character", oidVarchar: "character varying", oidDate: "date",
	oidTime: "time", oidTimestamp: "timestamp", oidTimestamptz: "timestamptz", oidNumeric: "numeric",
	oidUUID: "uuid", oidJSONB: "jsonb",
	26: "oid", 1186: "interval", 1266: "timetz", 790: "money", 1560: "bit", 1562: "varbit",
}

// arrayElem maps the OIDs of the one-dimensional array types read as
// ARRAY to their element's OID.
var arrayElem = map[uint32]uint32{
	1000: oidBool, 1001: oidBytea, 1005: oidInt2, 1007: oidInt4, 1016: oidInt8, 1009: oidText,
	1014: oidBpchar, 1015: oidVarchar, 1021: oidFloat4, 1022: oidFloat8, 1182: oidDate,
	1183: oidTime, 1115: oidTimestamp, 1185: oidTimestamptz, 1231: oidNumeric, 2951: oidUUID,
}

// typeName names a PostgreSQL type for messages.
func typeName(oid uint32) string {
	if n, ok := oidNames[oid]; ok {
		return n
	}
	if e, ok := arrayElem[oid]; ok {
		return typeName(e) + "[]"
	}
	if oid >= firstUserOID {
		return fmt.Sprintf("a user-defined type (OID %d)", oid)
	}
	return fmt.Sprintf("type OID %d", oid)
}

// parseFn decodes a value in PostgreSQL's text format.
type parseFn func(b []byte) (types.Value, error)

// supported reports whether a declared SQL type can be read from
// PostgreSQL at all (checked when the table is planned).
func supported(t types.Type) bool {
	switch t.Kind {
	case types.Boolean, types.SmallInt, types.Int, types.BigInt, types.Float, types.Double,
		types.Decimal, types.Char, types.Varchar, types.Binary, types.Varbinary, types.Date,
		types.Time, types.Timestamp, types.TimestampLTZ:
		return true
	case types.Array:
		return t.Elem != nil && t.Elem.Kind != types.Array && supported(*t.Elem)
	}
	return false
}

// errMismatch says a column's PostgreSQL type cannot be read as its
// declared type; the caller adds the table and column.
var errMismatch = errors.New("type mismatch")

// converter returns the decoder of a PostgreSQL column of type oid into
// declared type t, or errMismatch.
func converter(t types.Type, oid uint32) (parseFn, error) {
	is := func(oids ...uint32) bool {
		for _, o := range oids {
			if o == oid {
				return true
			}
		}
		return false
	}
	switch t.Kind {
	case types.Boolean:
		if is(oidBool) {
			return parseBool, nil
		}
	case types.SmallInt:
		if is(oidInt2) {
			return parseInt, nil
		}
	case types.Int:
		if is(oidInt2, oidInt4) {
			return parseInt, nil
		}
	case types.BigInt:
		if is(oidInt2, oidInt4, oidInt8) {
			return parseInt, nil
		}
	case types.Float, types.Double:
		if is(oidFloat4) || (t.Kind == types.Double && is(oidFloat8)) {
			return parseFloat, nil
		}
	case types.Decimal:
		if is(oidNumeric, oidInt2, oidInt4, oidInt8) {
			p, s := t.Precision, t.Scale
			return func(b []byte) (types.Value, error) { return parseDecimal(b, p, s) }, nil
		}
	case types.Char, types.Varchar:
		if is(oidText, oidVarchar, oidBpchar, oidName, oidChar, oidUUID, oidJSON, oidJSONB, oidXML, oidInet, oidCidr, oidMacaddr) || oid >= firstUserOID {
			return parseString, nil
		}
	case types.Binary, types.Varbinary:
		if is(oidBytea) {
			return parseBytea, nil
		}
	case types.Date:
		if is(oidDate) {
			return parseDate, nil
		}
	case types.Time:
		if is(oidTime) {
			return parseTime, nil
		}
	case types.Timestamp:
		if is(oidTimestamp) {
			return parseTimestamp, nil
		}
	case types.TimestampLTZ:
		if is(oidTimestamptz) {
			return parseTimestamptz, nil
		}
	case types.Array:
		if elemOID, ok := arrayElem[oid]; ok && t.Elem != nil {
			elem, err := converter(*t.Elem, elemOID)
			if err != nil {
				return nil, err
			}
			return func(b []byte) (types.Value, error) { return parseArray(b, elem) }, nil
		}
	}
	return nil, errMismatch
}

func parseBool(b []byte) (types.Value, error) {
	switch string(b) {
	case "t":
		return types.BoolValue(true), nil
	case "f":
		return types.BoolValue(false), nil
	}
	return types.Value{}, fmt.Errorf("not a boolean: %q", b)
}

func parseInt(b []byte) (types.Value, error) {
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return types.Value{}, fmt.Errorf("not an integer: %q", b)
	}
	return types.IntValue(n), nil
}

func parseFloat(b []byte) (types.Value, error) {
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return types.Value{}, fmt.Errorf("not a number: %q", b)
	}
	return types.FloatValue(f), nil
}

func parseString(b []byte) (types.Value, error) { return types.StringValue(string(b)), nil }

func parseBytea(b []byte) (types.Value, error) {
	// bytea_output = 'hex' (PostgreSQL's default since 9.0).
	if len(b) < 2 || b[0] != '\\' || b[1] != 'x' {
		return types.Value{}, fmt.Errorf("bytea not in hex format (set bytea_output = 'hex'): %.20q", b)
	}
	out := make([]byte, hex.DecodedLen(len(b)-2))
	if _, err := hex.Decode(out, b[2:]); err != nil {
		return types.Value{}, fmt.Errorf("bytea: %v", err)
	}
	return types.StringValue(string(out)), nil
}

// parseDecimal reads numeric text exactly as DECIMAL(p, s): a value with
// non-zero digits beyond the scale, or more than p digits in all, is an
// error rather than rounded or truncated, as are NaN and infinities.
func parseDecimal(b []byte, p, s int) (types.Value, error) {
	str := string(b)
	neg := false
	switch {
	case strings.HasPrefix(str, "-"):
		neg, str = true, str[1:]
	case strings.HasPrefix(str, "+"):
		str = str[1:]
	}
	intPart, frac, _ := strings.Cut(str, ".")
	if intPart == "" && frac == "" {
		return types.Value{}, fmt.Errorf("not a number: %q", b)
	}
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return types.Value{}, fmt.Errorf("%q is not a finite number DECIMAL(%d, %d) can hold", b, p, s)
			}
		}
	}
	if len(frac) > s {
		if strings.Trim(frac[s:], "0") != "" {
			return types.Value{}, fmt.Errorf("%s has more than %d fractional digits: DECIMAL(%d, %d) cannot hold it exactly", b, s, p, s)
		}
		frac = frac[:s]
	}
	digits := strings.TrimLeft(intPart+frac+strings.Repeat("0", s-len(frac)), "0")
	if len(digits) > p {
		return types.Value{}, fmt.Errorf("%s does not fit DECIMAL(%d, %d)", b, p, s)
	}
	if digits == "" {
		digits = "0"
	}
	if p <= 18 {
		n, _ := strconv.ParseInt(digits, 10, 64) // at most 18 digits
		if neg {
			n = -n
		}
		return types.IntValue(n), nil
	}
	u, _ := new(big.Int).SetString(digits, 10)
	if neg {
		u.Neg(u)
	}
	return types.BigDecimalValue(u), nil
}

// The temporal types arrive as PostgreSQL prints them (DateStyle ISO):
// the forms of datetime.Postgres and datetime.PostgresTZ. Infinity and BC
// dates are errors that say so.

func parseDate(b []byte) (types.Value, error) {
	d, err := datetime.ParseDate(b, datetime.Postgres)
	if err != nil {
		return types.Value{}, err
	}
	return types.IntValue(d), nil
}

// parseTime reads a time as microseconds of the day; '24:00:00' is the
// end of the day.
func parseTime(b []byte) (types.Value, error) {
	us, err := datetime.ParseTime(b, datetime.Postgres)
	if err != nil {
		return types.Value{}, err
	}
	return types.IntValue(us), nil
}

// parseTimestamp reads a timestamp without time zone as microseconds
// since 1970-01-01 00:00:00 (the wall clock, no zone).
func parseTimestamp(b []byte) (types.Value, error) {
	us, err := datetime.ParseTimestamp(b, datetime.Postgres)
	if err != nil {
		return types.Value{}, err
	}
	return types.IntValue(us), nil
}

// parseTimestamptz reads a timestamp with time zone, printed in the
// session's zone with its offset ("+01", "+05:30", "-00:53:28"), as the
// instant in microseconds since the epoch.
func parseTimestamptz(b []byte) (types.Value, error) {
	us, err := datetime.ParseTimestampTZ(b, datetime.PostgresTZ)
	if err != nil {
		return types.Value{}, err
	}
	return types.IntValue(us), nil
}

// parseArray reads a one-dimensional array literal ({1,2,NULL},
// {"a b","c\"d"}) with elem decoding each element.
func parseArray(b []byte, elem parseFn) (types.Value, error) {
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return types.Value{}, fmt.Errorf("array %.40q: only one-dimensional arrays with default bounds are supported", b)
	}
	body := b[1 : len(b)-1]
	out := []types.Value{}
	if len(body) == 0 {
		return types.ListValue(out), nil
	}
	var buf []byte
	for i := 0; i <= len(body); {
		buf = buf[:0]
		quoted := false
		if i < len(body) && body[i] == '{' {
			return types.Value{}, fmt.Errorf("array %.40q: multi-dimensional arrays are not supported", b)
		}
		if i < len(body) && body[i] == '"' {
			quoted = true
			i++
			for i < len(body) && body[i] != '"' {
				if body[i] == '\\' && i+1 < len(body) {
					i++
				}
				buf = append(buf, body[i])
				i++
			}
			if i >= len(body) {
				return types.Value{}, fmt.Errorf("array %.40q: unterminated quoted element", b)
			}
			i++ // closing quote
		} else {
			for i < len(body) && body[i] != ',' {
				buf = append(buf, body[i])
				i++
			}
		}
		if i < len(body) && body[i] != ',' {
			return types.Value{}, fmt.Errorf("array %.40q: malformed", b)
		}
		i++ // the comma, or past the end
		if !quoted && string(buf) == "NULL" {
			out = append(out, types.NullValue)
			continue
		}
		v, err := elem(buf)
		if err != nil {
			return types.Value{}, fmt.Errorf("array element %d: %w", len(out)+1, err)
		}
		out = append(out, v)
	}
	return types.ListValue(out), nil
}
