package format

import (
	"strconv"

	"github.com/weirstream/weir/sql/types"
)

// Printer formats rows as Flink's Row.toString does, which is what
// Flink's 'print' connector and a changelog printed by the SQL client
// show: the kind and the fields, "+I[1, foo, 2020-04-15T08:05:01.500]".
// NULL is "null", ARRAY "[a, b]", MAP "{k=v, ...}", a nested ROW
// "+I[...]", timestamps as Java's LocalDateTime (TIMESTAMP_LTZ as an
// Instant, with a 'Z'), DATE "2020-04-15", DOUBLE as Java's
// Double.toString, DECIMAL plain with its scale, BYTES "[1, 2]".
type Printer struct {
	row func(dst []byte, vals []types.Value) []byte
}

// NewPrinter compiles a printer of rows of schema.
func NewPrinter(schema types.Schema) *Printer {
	return &Printer{row: printRow(schema)}
}

// Append appends the text of row.
func (p *Printer) Append(dst []byte, row *types.Row) []byte {
	dst = append(dst, row.Kind.String()...)
	return p.row(dst, row.Values)
}

func printRow(fields []types.Field) func(dst []byte, vals []types.Value) []byte {
	ps := make([]func([]byte, *types.Value) []byte, len(fields))
	for i, f := range fields {
		ps[i] = printer(f.Type)
	}
	return func(dst []byte, vals []types.Value) []byte {
		dst = append(dst, '[')
		for i := range vals {
			if i > 0 {
				dst = append(dst, ", "...)
			}
			if vals[i].Null || i >= len(ps) {
				dst = append(dst, "null"...)
				continue
			}
			dst = ps[i](dst, &vals[i])
		}
		return append(dst, ']')
	}
}

func printer(t types.Type) func([]byte, *types.Value) []byte {
	switch t.Kind {
	case types.Structured:
		r := printRow(t.Fields)
		return func(dst []byte, v *types.Value) []byte { return r(append(dst, "+I"...), v.List()) }
	case types.Array, types.Multiset:
		var elem func([]byte, *types.Value) []byte
		if t.Elem != nil {
			elem = printer(*t.Elem)
		}
		return func(dst []byte, v *types.Value) []byte {
			vals := v.List()
			dst = append(dst, '[')
			for i := range vals {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				if vals[i].Null || elem == nil {
					dst = append(dst, "null"...)
				} else {
					dst = elem(dst, &vals[i])
				}
			}
			return append(dst, ']')
		}
	case types.Map:
		key, val := printer(types.StringType), printer(types.StringType)
		if t.Key != nil {
			key = printer(*t.Key)
		}
		if t.Elem != nil {
			val = printer(*t.Elem)
		}
		return func(dst []byte, v *types.Value) []byte {
			vals := v.List()
			dst = append(dst, '{')
			for i := 0; i+1 < len(vals); i += 2 {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				if vals[i].Null {
					dst = append(dst, "null"...)
				} else {
					dst = key(dst, &vals[i])
				}
				dst = append(dst, '=')
				if vals[i+1].Null {
					dst = append(dst, "null"...)
				} else {
					dst = val(dst, &vals[i+1])
				}
			}
			return append(dst, '}')
		}
	case types.Binary, types.Varbinary:
		return func(dst []byte, v *types.Value) []byte {
			dst = append(dst, '[')
			for i := 0; i < len(v.S); i++ {
				if i > 0 {
					dst = append(dst, ", "...)
				}
				dst = strconv.AppendInt(dst, int64(int8(v.S[i])), 10) // Java bytes are signed
			}
			return append(dst, ']')
		}
	case types.Timestamp:
		return func(dst []byte, v *types.Value) []byte { return appendJavaDateTime(dst, v.I) }
	case types.TimestampLTZ:
		return func(dst []byte, v *types.Value) []byte { return append(appendJavaDateTime(dst, v.I), 'Z') }
	case types.Time:
		return func(dst []byte, v *types.Value) []byte { return appendJavaTime(dst, v.I) }
	}
	if enc, err := TextEncoder(t, ' '); err == nil {
		return enc
	}
	return func(dst []byte, v *types.Value) []byte { return append(dst, '?') }
}

// appendJavaDateTime writes as LocalDateTime.toString: 2020-04-15T08:05,
// 2020-04-15T08:05:01, 2020-04-15T08:05:01.500, ...T08:05:01.000123.
func appendJavaDateTime(dst []byte, us int64) []byte {
	days := us / microsPerDay
	tod := us % microsPerDay
	if tod < 0 {
		days--
		tod += microsPerDay
	}
	dst = AppendDate(dst, days)
	dst = append(dst, 'T')
	return appendJavaTime(dst, tod)
}

func appendJavaTime(dst []byte, tod int64) []byte {
	s := tod / microsPerSecond
	dst = append2(dst, s/3600)
	dst = append(dst, ':')
	dst = append2(dst, s/60%60)
	frac := tod % microsPerSecond
	if s%60 == 0 && frac == 0 {
		return dst
	}
	dst = append(dst, ':')
	dst = append2(dst, s%60)
	if frac == 0 {
		return dst
	}
	dst = append(dst, '.')
	if frac%1000 == 0 {
		ms := frac / 1000
		return append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10))
	}
	var buf [6]byte
	for i := 5; i >= 0; i-- {
		buf[i] = byte('0' + frac%10)
		frac /= 10
	}
	return append(dst, buf[:]...)
}
