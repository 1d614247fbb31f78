package avro

import (
	"encoding/json"
	"fmt"

	"github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/types"
)

// RecordName is the full name of the record a table's schema derives to,
// as Flink's AvroSchemaConverter names it; a nested ROW column c is the
// record RecordName + "_c" (and its own nested rows add their names in
// turn), so that every record of a schema has a name of its own.
const RecordName = "org.apache.flink.avro.generated.record"

// Mapping says how timestamps derive, as Flink's
// 'avro.timestamp_mapping.legacy'.
type Mapping struct {
	// Legacy (Flink's default): TIMESTAMP is timestamp-millis (micros
	// beyond precision 3, where Flink refuses); TIMESTAMP_LTZ, which
	// Flink's legacy mapping refuses, is timestamp-millis/micros as well.
	// Otherwise TIMESTAMP is local-timestamp-millis/micros and
	// TIMESTAMP_LTZ timestamp-millis/micros.
	Legacy bool
}

// DeriveSchema converts a table's columns into the Avro schema Flink's
// AvroSchemaConverter gives them: a record named RecordName; a nullable
// column is the union ["null", T] with default null; NOT NULL columns
// have no default.
func DeriveSchema(schema types.Schema, m Mapping) (avro.Schema, error) {
	return deriveRecord(schema, RecordName, m, false)
}

// DeriveType converts one logical type, naming records from name.
func DeriveType(t types.Type, name string, m Mapping) (avro.Schema, error) {
	return deriveType(t, name, m)
}

func deriveRecord(fields []types.Field, name string, m Mapping, nullable bool) (avro.Schema, error) {
	fs := make([]*avro.Field, 0, len(fields))
	for _, f := range fields {
		ft, err := deriveType(f.Type, name+"_"+f.Name, m)
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", f.Name, err)
		}
		var opts []avro.SchemaOption
		if !f.Type.NotNull {
			opts = append(opts, avro.WithDefault(nil))
		}
		af, err := avro.NewField(f.Name, ft, opts...)
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", f.Name, err)
		}
		fs = append(fs, af)
	}
	ns, local := splitName(name)
	rec, err := avro.NewRecordSchema(local, ns, fs)
	if err != nil {
		return nil, err
	}
	if nullable {
		return nullableOf(rec)
	}
	return rec, nil
}

func splitName(full string) (ns, name string) {
	for i := len(full) - 1; i >= 0; i-- {
		if full[i] == '.' {
			return full[:i], full[i+1:]
		}
	}
	return "", full
}

func nullableOf(s avro.Schema) (avro.Schema, error) {
	return avro.NewUnionSchema([]avro.Schema{avro.NewNullSchema(), s})
}

func deriveType(t types.Type, name string, m Mapping) (avro.Schema, error) {
	var s avro.Schema
	switch t.Kind {
	case types.Null:
		return avro.NewNullSchema(), nil
	case types.Boolean:
		s = avro.NewPrimitiveSchema(avro.Boolean, nil)
	case types.TinyInt, types.SmallInt, types.Int:
		s = avro.NewPrimitiveSchema(avro.Int, nil)
	case types.BigInt:
		s = avro.NewPrimitiveSchema(avro.Long, nil)
	case types.Float:
		s = avro.NewPrimitiveSchema(avro.Float, nil)
	case types.Double:
		s = avro.NewPrimitiveSchema(avro.Double, nil)
	case types.Char, types.Varchar:
		s = avro.NewPrimitiveSchema(avro.String, nil)
	case types.Binary, types.Varbinary:
		s = avro.NewPrimitiveSchema(avro.Bytes, nil)
	case types.Decimal:
		s = avro.NewPrimitiveSchema(avro.Bytes, avro.NewDecimalLogicalSchema(t.Precision, t.Scale))
	case types.Date:
		s = avro.NewPrimitiveSchema(avro.Int, avro.NewPrimitiveLogicalSchema(avro.Date))
	case types.Time:
		if t.Precision > 3 {
			return nil, fmt.Errorf("Avro does not support %s (precision above 3)", t)
		}
		s = avro.NewPrimitiveSchema(avro.Int, avro.NewPrimitiveLogicalSchema(avro.TimeMillis))
	case types.Timestamp, types.TimestampLTZ:
		if t.Precision > 6 {
			return nil, fmt.Errorf("Avro does not support %s (precision above 6)", t)
		}
		lt := avro.TimestampMillis
		if t.Precision > 3 {
			lt = avro.TimestampMicros
		}
		if t.Kind == types.Timestamp && !m.Legacy {
			lt = avro.LocalTimestampMillis
			if t.Precision > 3 {
				lt = avro.LocalTimestampMicros
			}
		}
		s = avro.NewPrimitiveSchema(avro.Long, avro.NewPrimitiveLogicalSchema(lt))
	case types.Array:
		items, err := deriveType(*t.Elem, name, m)
		if err != nil {
			return nil, err
		}
		s = avro.NewArraySchema(items)
	case types.Map, types.Multiset:
		var key, val types.Type
		if t.Kind == types.Map {
			key, val = *t.Key, *t.Elem
		} else {
			key, val = *t.Elem, types.Type{Kind: types.Int, NotNull: true}
		}
		if !key.IsString() {
			return nil, fmt.Errorf("Avro maps have string keys: %s is not supported", t)
		}
		vs, err := deriveType(val, name, m)
		if err != nil {
			return nil, err
		}
		s = avro.NewMapSchema(vs)
	case types.Structured:
		return deriveRecord(t.Fields, name, m, !t.NotNull)
	default:
		return nil, fmt.Errorf("no Avro type for %s", t)
	}
	if !t.NotNull {
		return nullableOf(s)
	}
	return s, nil
}

// SchemaJSON is the full JSON text of s (defaults and logical types
// included), as it is registered: hamba's String is the parsing
// canonical form, which drops defaults.
func SchemaJSON(s avro.Schema) string {
	b, err := json.Marshal(s)
	if err != nil {
		return s.String()
	}
	return string(b)
}

// Parse parses an Avro schema's JSON text with a cache of its own, so that
// schemas that reuse a record name (every table's derives to RecordName)
// never see each other's definitions.
func Parse(text string) (avro.Schema, error) {
	return avro.ParseWithCache(text, "", &avro.SchemaCache{})
}
