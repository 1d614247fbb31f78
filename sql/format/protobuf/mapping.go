package protobuf

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/sql/types"
)

// timestampName is google.protobuf.Timestamp, which a TIMESTAMP or
// TIMESTAMP_LTZ column may read and write (a weir extension; a ROW<seconds
// BIGINT, nanos INT> column reads it as Flink does).
const timestampName protoreflect.FullName = "google.protobuf.Timestamp"

// checkScalar reports whether a column of type t can hold a singular
// value of field f (its element for a repeated field), as Flink's
// protobuf format maps the types.
func checkScalar(f protoreflect.FieldDescriptor, t types.Type) error {
	k := t.Kind
	ok := false
	var want string
	switch f.Kind() {
	case protoreflect.BoolKind:
		ok, want = k == types.Boolean, "BOOLEAN"
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		ok, want = k == types.Int, "INT"
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		ok, want = k == types.BigInt, "BIGINT"
	case protoreflect.FloatKind:
		ok, want = k == types.Float, "FLOAT"
	case protoreflect.DoubleKind:
		ok, want = k == types.Double, "DOUBLE"
	case protoreflect.StringKind:
		ok, want = k == types.Varchar || k == types.Char, "STRING (VARCHAR or CHAR)"
	case protoreflect.BytesKind:
		ok, want = k == types.Varbinary || k == types.Binary, "BYTES (VARBINARY or BINARY)"
	case protoreflect.EnumKind:
		switch k {
		case types.Varchar, types.Char, types.TinyInt, types.SmallInt, types.Int, types.BigInt:
			ok = true
		}
		want = "STRING (the value's name) or TINYINT, SMALLINT, INT or BIGINT (its number)"
	case protoreflect.GroupKind:
		return fmt.Errorf("is %s but the protobuf field %s is a group (delimited message), which weir does not read or write", t, f.Name())
	case protoreflect.MessageKind:
		if f.Message().FullName() == timestampName && (k == types.Timestamp || k == types.TimestampLTZ) {
			return nil
		}
		ok, want = k == types.Structured, "ROW"
		if f.Message().FullName() == timestampName {
			want = "ROW<seconds BIGINT, nanos INT>, TIMESTAMP or TIMESTAMP_LTZ"
		}
	}
	if !ok {
		return fmt.Errorf("is %s but the protobuf field %s is %s: want %s", t, f.Name(), kindName(f), want)
	}
	return nil
}

func kindName(f protoreflect.FieldDescriptor) string {
	switch f.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return "message " + string(f.Message().FullName())
	case protoreflect.EnumKind:
		return "enum " + string(f.Enum().FullName())
	}
	return f.Kind().String()
}

// field finds the protobuf field of a column: by its exact name, as Flink
// matches them.
func field(md protoreflect.MessageDescriptor, col types.Field) (protoreflect.FieldDescriptor, error) {
	if f := md.Fields().ByName(protoreflect.Name(col.Name)); f != nil {
		return f, nil
	}
	names := make([]string, md.Fields().Len())
	for i := range names {
		names[i] = string(md.Fields().Get(i).Name())
	}
	return nil, fmt.Errorf("column '%s': message %s has no field %s (its fields: %s)", col.Name, md.FullName(), col.Name, strings.Join(names, ", "))
}

// checkField checks a column against its field, repeated and map fields
// included.
func checkField(f protoreflect.FieldDescriptor, t types.Type) error {
	switch {
	case f.IsMap():
		if t.Kind != types.Map {
			return fmt.Errorf("is %s but the protobuf field %s is a map: want MAP", t, f.Name())
		}
		if err := checkScalar(f.MapKey(), *t.Key); err != nil {
			return fmt.Errorf("map key %w", err)
		}
		if err := checkScalar(f.MapValue(), *t.Elem); err != nil {
			return fmt.Errorf("map value %w", err)
		}
		return nil
	case f.IsList():
		if t.Kind != types.Array {
			return fmt.Errorf("is %s but the protobuf field %s is repeated: want ARRAY", t, f.Name())
		}
		if err := checkScalar(f, *t.Elem); err != nil {
			return fmt.Errorf("element %w", err)
		}
		return nil
	}
	return checkScalar(f, t)
}
