// Package types holds the SQL layer's data types and its row: the logical
// types of Flink SQL (Type), the kind of change a row carries (RowKind) and a
// row laid out as a slice of fixed-size values (Row, Value) so that compiled
// expressions read and write fields by index, without maps, reflection or a
// boxed interface per field.
//
// The parser, the planner and the table connectors share these definitions;
// they are the contract between them.
package types

import (
	"fmt"
	"strings"
)

// Kind is the root of a logical type, as Flink's LogicalTypeRoot.
type Kind uint8

// The logical types. Each kind lists how its value is held in a Value.
const (
	Null         Kind = iota // the type of the NULL literal; no value
	Boolean                  // I: 0 or 1
	TinyInt                  // I
	SmallInt                 // I
	Int                      // I
	BigInt                   // I
	Float                    // I: math.Float64bits of the value (widened)
	Double                   // I: math.Float64bits
	Decimal                  // I: unscaled value when Precision <= 18; else I, or X: *big.Int (see Value)
	Char                     // S
	Varchar                  // S (STRING is VARCHAR(2147483647))
	Binary                   // S: the bytes
	Varbinary                // S: the bytes (BYTES is VARBINARY(2147483647))
	Date                     // I: days since 1970-01-01
	Time                     // I: microseconds of the day
	Timestamp                // I: microseconds since 1970-01-01 00:00:00 (no zone)
	TimestampLTZ             // I: microseconds since the epoch (UTC instant)
	Interval                 // I: milliseconds (day-time) or months (year-month), see Type.Months
	Array                    // X: []Value
	Map                      // X: []Value of key, value, key, value...
	Structured               // ROW: X: []Value, one per field
	Multiset                 // X: []Value
)

// MaxLength is the length of STRING and BYTES.
const MaxLength = 2147483647

var kindNames = [...]string{
	Null: "NULL", Boolean: "BOOLEAN", TinyInt: "TINYINT", SmallInt: "SMALLINT", Int: "INT",
	BigInt: "BIGINT", Float: "FLOAT", Double: "DOUBLE", Decimal: "DECIMAL", Char: "CHAR",
	Varchar: "VARCHAR", Binary: "BINARY", Varbinary: "VARBINARY", Date: "DATE", Time: "TIME",
	Timestamp: "TIMESTAMP", TimestampLTZ: "TIMESTAMP_LTZ", Interval: "INTERVAL", Array: "ARRAY",
	Map: "MAP", Structured: "ROW", Multiset: "MULTISET",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Type is a logical type. The zero Type is the nullable NULL type.
type Type struct {
	Kind Kind
	// NotNull is set for NOT NULL types (Flink's types are nullable unless
	// declared otherwise).
	NotNull bool
	// Precision: DECIMAL's digits, TIME/TIMESTAMP's fractional digits.
	Precision int
	// Scale: DECIMAL's fractional digits.
	Scale int
	// Length: CHAR, VARCHAR, BINARY, VARBINARY.
	Length int
	// Months is set for a year-month INTERVAL (its value counts months).
	Months bool
	// Elem is the element type of ARRAY and MULTISET, the value type of MAP.
	Elem *Type
	// Key is the key type of MAP.
	Key *Type
	// Fields are the fields of ROW (Kind Structured).
	Fields []Field
	// TimeAttr marks a time attribute column: RowtimeAttr for the column a
	// WATERMARK is declared on, ProctimeAttr for PROCTIME().
	TimeAttr TimeAttr
}

// TimeAttr says whether a column is a time attribute (Flink's *ROWTIME* and
// *PROCTIME* markers).
type TimeAttr uint8

const (
	NoTimeAttr TimeAttr = iota
	RowtimeAttr
	ProctimeAttr
)

// Field is a named field of a ROW or a column of a table.
type Field struct {
	Name string
	Type Type
	// Description is the field's COMMENT, if any.
	Description string
}

// Common types.
var (
	BooleanType   = Type{Kind: Boolean}
	IntType       = Type{Kind: Int}
	BigIntType    = Type{Kind: BigInt}
	DoubleType    = Type{Kind: Double}
	StringType    = Type{Kind: Varchar, Length: MaxLength}
	BytesType     = Type{Kind: Varbinary, Length: MaxLength}
	DateType      = Type{Kind: Date}
	Timestamp3    = Type{Kind: Timestamp, Precision: 3}
	TimestampLTZ3 = Type{Kind: TimestampLTZ, Precision: 3}
)

// DecimalType returns DECIMAL(p, s).
func DecimalType(p, s int) Type { return Type{Kind: Decimal, Precision: p, Scale: s} }

// ArrayOf returns ARRAY<elem>.
func ArrayOf(elem Type) Type { return Type{Kind: Array, Elem: &elem} }

// MapOf returns MAP<key, value>.
func MapOf(key, value Type) Type { return Type{Kind: Map, Key: &key, Elem: &value} }

// RowOf returns ROW<fields...>.
func RowOf(fields ...Field) Type { return Type{Kind: Structured, Fields: fields} }

// Nullable returns t without NOT NULL.
func (t Type) Nullable() Type { t.NotNull = false; return t }

// IsNumeric reports whether t is an exact or approximate number.
func (t Type) IsNumeric() bool {
	switch t.Kind {
	case TinyInt, SmallInt, Int, BigInt, Float, Double, Decimal:
		return true
	}
	return false
}

// IsInteger reports whether t is TINYINT, SMALLINT, INT or BIGINT.
func (t Type) IsInteger() bool {
	return t.Kind >= TinyInt && t.Kind <= BigInt
}

// IsString reports whether t is CHAR or VARCHAR.
func (t Type) IsString() bool { return t.Kind == Char || t.Kind == Varchar }

// BigDecimal reports whether a DECIMAL of this type may hold a *big.Int
// (precision above 18 digits): its values are in X as a *big.Int, or, when
// X is nil, in I (an unscaled value that fits an int64; see Value).
func (t Type) BigDecimal() bool { return t.Kind == Decimal && t.Precision > 18 }

// String spells the type as Flink's SQL does ("DECIMAL(10, 2)",
// "ROW<`a` INT, `b` STRING>", "TIMESTAMP(3) NOT NULL").
func (t Type) String() string {
	var b strings.Builder
	t.write(&b)
	return b.String()
}

func (t Type) write(b *strings.Builder) {
	switch t.Kind {
	case Decimal:
		fmt.Fprintf(b, "DECIMAL(%d, %d)", t.Precision, t.Scale)
	case Char, Binary:
		fmt.Fprintf(b, "%s(%d)", t.Kind, t.Length)
	case Varchar:
		if t.Length == MaxLength || t.Length == 0 {
			b.WriteString("STRING")
		} else {
			fmt.Fprintf(b, "VARCHAR(%d)", t.Length)
		}
	case Varbinary:
		if t.Length == MaxLength || t.Length == 0 {
			b.WriteString("BYTES")
		} else {
			fmt.Fprintf(b, "VARBINARY(%d)", t.Length)
		}
	case Time, Timestamp, TimestampLTZ:
		fmt.Fprintf(b, "%s(%d)", t.Kind, t.Precision)
		switch t.TimeAttr {
		case RowtimeAttr:
			b.WriteString(" *ROWTIME*")
		case ProctimeAttr:
			b.WriteString(" *PROCTIME*")
		}
	case Interval:
		if t.Months {
			b.WriteString("INTERVAL YEAR TO MONTH")
		} else {
			b.WriteString("INTERVAL DAY TO SECOND")
		}
	case Array, Multiset:
		b.WriteString(t.Kind.String())
		b.WriteByte('<')
		if t.Elem != nil {
			t.Elem.write(b)
		}
		b.WriteByte('>')
	case Map:
		b.WriteString("MAP<")
		if t.Key != nil {
			t.Key.write(b)
		}
		b.WriteString(", ")
		if t.Elem != nil {
			t.Elem.write(b)
		}
		b.WriteByte('>')
	case Structured:
		b.WriteString("ROW<")
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteByte('`')
			b.WriteString(strings.ReplaceAll(f.Name, "`", "``"))
			b.WriteString("` ")
			f.Type.write(b)
		}
		b.WriteByte('>')
	default:
		b.WriteString(t.Kind.String())
	}
	if t.NotNull {
		b.WriteString(" NOT NULL")
	}
}

// Schema is the row type of a table or a query result: its columns in order.
type Schema []Field

// Index returns the position of the column named name (case-insensitive, as
// Flink's default identifiers are not), or -1.
func (s Schema) Index(name string) int {
	for i, f := range s {
		if f.Name == name {
			return i
		}
	}
	for i, f := range s {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// Names returns the column names.
func (s Schema) Names() []string {
	out := make([]string, len(s))
	for i, f := range s {
		out[i] = f.Name
	}
	return out
}
