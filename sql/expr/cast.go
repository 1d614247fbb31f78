package expr

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/datetime"
	"github.com/weirstream/weir/sql/types"
)

// Timestamps are microseconds since the epoch; TIMESTAMP (without zone)
// reads and prints in UTC, and TIMESTAMP_LTZ's session zone is UTC (Flink
// uses the session's 'table.local-time-zone'; weir has only UTC for now).

func microsToTime(us int64) time.Time { return time.UnixMicro(us).UTC() }

// FormatValue prints a value of type t as Flink's print connector and SQL
// client do: NULL as "NULL"... strings bare, timestamps
// "2024-01-02 03:04:05.678", decimals with their scale, rows as (a, b).
func FormatValue(v types.Value, t types.Type) string {
	if v.Null {
		return "NULL"
	}
	switch t.Kind {
	case types.Boolean:
		if v.Bool() {
			return "TRUE"
		}
		return "FALSE"
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt:
		return strconv.FormatInt(v.I, 10)
	case types.Float, types.Double:
		return formatDouble(v.Float())
	case types.Decimal:
		if t.BigDecimal() {
			return formatDecimal(decBig(v, t), t.Scale)
		}
		return formatDecimal64(v.I, t.Scale)
	case types.Char, types.Varchar, types.Binary, types.Varbinary:
		return v.S
	case types.Date:
		return time.Unix(v.I*86400, 0).UTC().Format("2006-01-02")
	case types.Time:
		return formatTimestamp(v.I, t.Precision)[11:]
	case types.Timestamp, types.TimestampLTZ:
		return formatTimestamp(v.I, t.Precision)
	case types.Interval:
		if t.Months {
			return fmt.Sprintf("+%d-%02d", v.I/12, v.I%12)
		}
		return (time.Duration(v.I) * time.Millisecond).String()
	case types.Multiset:
		return formatMultiset(v.List(), *t.Elem) // funcs_collections.go
	case types.Array:
		var b strings.Builder
		b.WriteByte('[')
		for i, e := range v.List() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(FormatValue(e, *t.Elem))
		}
		b.WriteByte(']')
		return b.String()
	case types.Map:
		var b strings.Builder
		b.WriteByte('{')
		l := v.List()
		for i := 0; i+1 < len(l); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(FormatValue(l[i], *t.Key) + "=" + FormatValue(l[i+1], *t.Elem))
		}
		b.WriteByte('}')
		return b.String()
	case types.Structured:
		var b strings.Builder
		b.WriteByte('(')
		for i, e := range v.List() {
			if i > 0 {
				b.WriteString(", ")
			}
			if i < len(t.Fields) {
				b.WriteString(FormatValue(e, t.Fields[i].Type))
			}
		}
		b.WriteByte(')')
		return b.String()
	}
	return fmt.Sprint(v.I)
}

// formatDouble prints as Java's Double.toString (1.0, 0.5, 1.0E10).
func formatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	a := math.Abs(f)
	if a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	exp = strings.TrimPrefix(exp, "+")
	return mant + "E" + exp
}

func formatTimestamp(us int64, precision int) string {
	t := microsToTime(us)
	s := t.Format("2006-01-02 15:04:05")
	if precision > 0 {
		frac := fmt.Sprintf("%06d", t.Nanosecond()/1000)
		if precision < 6 {
			frac = frac[:precision]
		}
		s += "." + frac
	}
	return s
}

// parseTimestamp reads a string as a TIMESTAMP: the forms of datetime.SQL
// ('yyyy-MM-dd[ HH:mm[:ss[.fffffffff]]]', a 'T' for the space, RFC 3339
// with a zone, ...) around white space, as UTC microseconds.
func parseTimestamp(s string) (int64, bool) {
	us, err := datetime.ParseTimestamp(strings.TrimSpace(s), datetime.SQL)
	return us, err == nil
}

// parseTime reads a string 'HH:mm:ss[.fraction]' around white space as
// microseconds of the day.
func parseTime(s string) (int64, bool) {
	us, err := datetime.ParseTime(strings.TrimSpace(s), datetime.SQL)
	return us, err == nil
}

// parseDate reads a string 'yyyy-MM-dd' around white space as days since
// 1970-01-01.
func parseDate(s string) (int64, bool) {
	d, err := datetime.ParseDate(strings.TrimSpace(s), datetime.SQL)
	return d, err == nil
}

// javaLong is Java's (long) of a double: truncated toward zero, NaN 0,
// saturating at the ends of BIGINT (Go's conversion is undefined there).
func javaLong(f float64) int64 {
	switch {
	case f != f:
		return 0
	case f >= 9223372036854775807:
		return math.MaxInt64
	case f <= -9223372036854775808:
		return math.MinInt64
	}
	return int64(f)
}

// parseInteger reads a string as an integer of the given bits, around
// white space: a fraction of digits is dropped, as Flink's string to
// integer cast does ('1.9' is 1); out of range is not a number.
func parseInteger(s string, bits int) (int64, bool) {
	s = strings.TrimSpace(s)
	if whole, frac, ok := strings.Cut(s, "."); ok {
		if strings.TrimLeft(frac, "0123456789") != "" || whole == "" || whole == "-" || whole == "+" {
			return 0, false
		}
		s = whole
	}
	n, err := strconv.ParseInt(s, 10, bits)
	return n, err == nil
}

// CastFn returns the conversion of a value of type from to type to, or an
// error when SQL has no such cast. Failed string conversions give NULL
// (TRY_CAST, and the planner's implicit casts); an explicit CAST wraps it
// to fail the job instead, as Flink's does (strictCast).
func CastFn(from, to types.Type) (func(types.Value) types.Value, error) {
	id := func(v types.Value) types.Value { return v }
	if from.Kind == types.Null {
		return func(types.Value) types.Value { return types.NullValue }, nil
	}
	switch {
	case to.Kind == from.Kind && to.Kind != types.Decimal:
		return id, nil
	case to.IsString():
		return func(v types.Value) types.Value {
			if v.Null {
				return v
			}
			return types.StringValue(FormatValue(v, from))
		}, nil
	case to.Kind == types.Boolean:
		switch {
		case from.IsInteger():
			return func(v types.Value) types.Value { return types.BoolValue(v.I != 0) }, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				switch strings.ToLower(strings.TrimSpace(v.S)) {
				case "true", "t", "yes", "y", "1":
					return types.BoolValue(true)
				case "false", "f", "no", "n", "0":
					return types.BoolValue(false)
				}
				return types.NullValue
			}, nil
		}
	case to.IsInteger():
		// to a narrower integer the low bits are kept, as Java's primitive
		// casts (and Flink's) do: CAST(300 AS TINYINT) is 44; a double
		// goes through BIGINT first, saturating, as Java's (long) does;
		// a string out of the type's range is an error (NULL here)
		sh := wrapShift(to.Kind)
		switch {
		case from.Kind == types.Boolean, from.IsInteger() && wrapShift(from.Kind) >= sh:
			return id, nil
		case from.IsInteger():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(v.I << sh >> sh)
			}, nil
		case from.Kind == types.Float || from.Kind == types.Double:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(javaLong(v.Float()) << sh >> sh)
			}, nil
		case from.Kind == types.Decimal:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				if !from.BigDecimal() {
					return types.IntValue(v.I / pow10[from.Scale] << sh >> sh)
				}
				u := decBig(v, from)
				u.Quo(u, bigPow10(from.Scale))
				return types.IntValue(int64(u.Uint64()) << sh >> sh) // the low 64 bits, as BigDecimal.longValue
			}, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				n, ok := parseInteger(v.S, 64-int(sh))
				if !ok {
					return types.NullValue
				}
				return types.IntValue(n)
			}, nil
		case from.Kind == types.Timestamp || from.Kind == types.TimestampLTZ:
			// seconds since the epoch, as Flink's CAST(ts AS BIGINT)
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(FloorDiv(v.I, 1e6) << sh >> sh)
			}, nil
		}
	case to.Kind == types.Double || to.Kind == types.Float:
		switch {
		case from.IsInteger():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.FloatValue(float64(v.I))
			}, nil
		case from.Kind == types.Float || from.Kind == types.Double:
			return id, nil
		case from.Kind == types.Decimal:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.FloatValue(decFloat(v, from))
			}, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				f, err := strconv.ParseFloat(strings.TrimSpace(v.S), 64)
				if err != nil {
					return types.NullValue
				}
				return types.FloatValue(f)
			}, nil
		}
	case to.Kind == types.Decimal:
		switch {
		case from.IsInteger() || from.Kind == types.Decimal:
			src := decimalOf(from)
			if int64Layout(from) && !to.BigDecimal() {
				return func(v types.Value) types.Value {
					if v.Null {
						return v
					}
					if u, ok := rescale64(v.I, src.Scale, to.Scale); ok {
						if u <= maxUnscaled64(to.Precision) && u >= -maxUnscaled64(to.Precision) {
							return types.Value{I: u}
						}
						return types.NullValue
					}
					return decValue(rescale(big.NewInt(v.I), src.Scale, to.Scale), to)
				}, nil
			}
			if from.Kind == types.Decimal && from.BigDecimal() && to.BigDecimal() &&
				from.Scale == to.Scale && from.Precision <= to.Precision {
				// a wider type of the same scale holds every value as it is
				// (big.Ints are never changed in place)
				return func(v types.Value) types.Value { return v }, nil
			}
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				if u, ok := decInt64(v, from); ok {
					// the int64 fast path (decimal_fast.go)
					if r, ok := rescale64(u, src.Scale, to.Scale); ok {
						return decResult64(r, to)
					}
				}
				return decValue(rescale(decBig(v, from), src.Scale, to.Scale), to)
			}, nil
		case from.Kind == types.Float || from.Kind == types.Double:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				u, ok := parseDecimal(strconv.FormatFloat(v.Float(), 'g', -1, 64), to.Scale)
				if !ok {
					return types.NullValue
				}
				return decValue(u, to)
			}, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				u, ok := parseDecimal(v.S, to.Scale)
				if !ok {
					return types.NullValue
				}
				return decValue(u, to)
			}, nil
		}
	case to.Kind == types.Timestamp || to.Kind == types.TimestampLTZ:
		switch {
		case from.Kind == types.Timestamp || from.Kind == types.TimestampLTZ:
			return id, nil
		case from.Kind == types.Date:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(v.I * 86400e6)
			}, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				us, ok := parseTimestamp(v.S)
				if !ok {
					return types.NullValue
				}
				return types.IntValue(us)
			}, nil
		case from.IsInteger():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(v.I * 1e6)
			}, nil
		}
	case to.Kind == types.Date:
		switch {
		case from.Kind == types.Timestamp || from.Kind == types.TimestampLTZ:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(FloorDiv(v.I, 86400e6))
			}, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				d, ok := parseDate(v.S)
				if !ok {
					return types.NullValue
				}
				return types.IntValue(d)
			}, nil
		}
	case to.Kind == types.Time:
		trunc := func(us int64) int64 { return us - us%pow10[6-min(max(to.Precision, 0), 6)] }
		switch {
		case from.Kind == types.Time:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(trunc(v.I))
			}, nil
		case from.Kind == types.Timestamp || from.Kind == types.TimestampLTZ:
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				return types.IntValue(trunc(v.I - FloorDiv(v.I, 86400e6)*86400e6))
			}, nil
		case from.IsString():
			return func(v types.Value) types.Value {
				if v.Null {
					return v
				}
				us, ok := parseTime(v.S)
				if !ok {
					return types.NullValue
				}
				return types.IntValue(trunc(us))
			}, nil
		}
	case to.Kind == types.Varbinary || to.Kind == types.Binary:
		if from.IsString() || from.Kind == types.Binary || from.Kind == types.Varbinary {
			return id, nil
		}
	case to.Kind == from.Kind:
		return id, nil
	}
	return nil, fmt.Errorf("cannot cast %s to %s", from, to)
}

func maxUnscaled64(p int) int64 {
	if p >= 19 {
		return math.MaxInt64
	}
	return pow10[p] - 1
}

// FloorDiv divides rounding towards negative infinity.
func FloorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}
