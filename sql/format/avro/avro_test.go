package avro_test

import (
	"bytes"
	"errors"
	"math/big"
	"strings"
	"testing"

	hamba "github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

func ptr(t types.Type) *types.Type { return &t }

// compile builds a format's decoder and encoder as a table's options
// would.
func compile(t *testing.T, schema types.Schema, opts map[string]string) (format.Decoder, format.Encoder) {
	t.Helper()
	return compileTB(t, schema, opts)
}

func compileTB(t testing.TB, schema types.Schema, opts map[string]string) (format.Decoder, format.Encoder) {
	t.Helper()
	o := connector.NewOptions(&connector.Table{Name: "t", Schema: schema, Options: opts})
	d, _ := format.NewDecoder(o, "format", schema)
	e, _ := format.NewEncoder(o, "format", schema)
	o.Declare("topic") // the Kafka connector's
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	return d, e
}

// compileDecoder builds a format's decoder only.
func compileDecoder(t *testing.T, schema types.Schema, opts map[string]string) format.Decoder {
	t.Helper()
	o := connector.NewOptions(&connector.Table{Name: "t", Schema: schema, Options: opts})
	d, _ := format.NewDecoder(o, "format", schema)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	return d
}

func compileErr(schema types.Schema, opts map[string]string) error {
	o := connector.NewOptions(&connector.Table{Name: "t", Schema: schema, Options: opts})
	format.NewDecoder(o, "format", schema)
	format.NewEncoder(o, "format", schema)
	o.Declare("topic")
	return o.Err()
}

func TestDerivedSchemaIsFlinks(t *testing.T) {
	schema := types.Schema{
		{Name: "a", Type: types.Type{Kind: types.Int, NotNull: true}},
		{Name: "b", Type: types.StringType},
		{Name: "c", Type: types.DecimalType(10, 2)},
		{Name: "d", Type: types.Timestamp3},
		{Name: "e", Type: types.RowOf(types.Field{Name: "x", Type: types.IntType})},
		{Name: "f", Type: types.Type{Kind: types.Array, NotNull: true, Elem: ptr(types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true})}},
		{Name: "g", Type: types.MapOf(types.StringType, types.BigIntType)},
		{Name: "h", Type: types.DateType},
		{Name: "i", Type: types.Type{Kind: types.Time, Precision: 3}},
		{Name: "j", Type: types.BytesType},
		{Name: "k", Type: types.Type{Kind: types.Float}},
		{Name: "l", Type: types.BooleanType},
	}
	// What Flink's AvroSchemaConverter.convertToSchema gives this table.
	want := `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
		{"name":"a","type":"int"},
		{"name":"b","type":["null","string"],"default":null},
		{"name":"c","type":["null",{"type":"bytes","logicalType":"decimal","precision":10,"scale":2}],"default":null},
		{"name":"d","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},
		{"name":"e","type":["null",{"type":"record","name":"record_e","fields":[{"name":"x","type":["null","int"],"default":null}]}],"default":null},
		{"name":"f","type":{"type":"array","items":"string"}},
		{"name":"g","type":["null",{"type":"map","values":["null","long"]}],"default":null},
		{"name":"h","type":["null",{"type":"int","logicalType":"date"}],"default":null},
		{"name":"i","type":["null",{"type":"int","logicalType":"time-millis"}],"default":null},
		{"name":"j","type":["null","bytes"],"default":null},
		{"name":"k","type":["null","float"],"default":null},
		{"name":"l","type":["null","boolean"],"default":null}]}`
	got, err := avro.DeriveSchema(schema, avro.Mapping{Legacy: true})
	if err != nil {
		t.Fatal(err)
	}
	ws, err := avro.Parse(want)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != ws.String() {
		t.Fatalf("derived schema\n%s\nwant (canonical)\n%s", got, ws)
	}
	// The canonical form drops defaults: nullable fields default to null,
	// NOT NULL ones have none.
	for i, f := range got.(*hamba.RecordSchema).Fields() {
		if f.HasDefault() != !schema[i].Type.NotNull || f.Default() != nil {
			t.Fatalf("field %s: default %v (has %v)", f.Name(), f.Default(), f.HasDefault())
		}
	}
	// The JSON registered keeps them.
	if j := avro.SchemaJSON(got); !strings.Contains(j, `"default":null`) || !strings.Contains(j, `"logicalType":"decimal"`) {
		t.Fatalf("schema JSON lacks defaults or logical types: %s", j)
	}
	// Non-legacy mapping: TIMESTAMP is a local timestamp.
	nl, err := avro.DeriveSchema(types.Schema{{Name: "d", Type: types.Timestamp3}, {Name: "l", Type: types.TimestampLTZ3}}, avro.Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	if s := nl.String(); !strings.Contains(s, "local-timestamp-millis") {
		// The canonical form drops logical types; look at the JSON.
		if j := avro.SchemaJSON(nl); !strings.Contains(j, `"local-timestamp-millis"`) || !strings.Contains(j, `"timestamp-millis"`) {
			t.Fatalf("non-legacy mapping: %s", j)
		}
	}
	if _, err := avro.DeriveSchema(types.Schema{{Name: "m", Type: types.MapOf(types.IntType, types.IntType)}}, avro.Mapping{}); err == nil {
		t.Fatal("a map with INT keys derived")
	}
}

// The bytes of a simple record, worked out by hand from the Avro spec.
func TestKnownBytes(t *testing.T) {
	schema := types.Schema{{Name: "id", Type: types.Type{Kind: types.Int, NotNull: true}}, {Name: "name", Type: types.StringType}}
	d, e := compile(t, schema, map[string]string{"format": "avro"})
	for _, c := range []struct {
		row  []types.Value
		want []byte
	}{
		{[]types.Value{{I: 1}, {S: "a"}}, []byte{0x02, 0x02, 0x02, 'a'}},
		{[]types.Value{{I: -3}, types.NullValue}, []byte{0x05, 0x00}},
		{[]types.Value{{I: 64}, {S: ""}}, []byte{0x80, 0x01, 0x02, 0x00}},
	} {
		got, skip, err := e.Encode(nil, &types.Row{Values: c.row})
		if err != nil || skip {
			t.Fatal(err, skip)
		}
		if !bytes.Equal(got, c.want) {
			t.Fatalf("encode %v: % x, want % x", c.row, got, c.want)
		}
		rows, err := d.Decode(c.want, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 1 || !rows[0].Equal(types.Row{Values: c.row}) {
			t.Fatalf("decode % x: %+v", c.want, rows)
		}
	}
	// NOT NULL columns refuse a NULL.
	if _, _, err := e.Encode(nil, &types.Row{Values: []types.Value{types.NullValue, {S: "x"}}}); !errors.Is(err, avro.ErrNull) || !strings.Contains(err.Error(), "'id'") {
		t.Fatalf("NULL in a NOT NULL column: %v", err)
	}
}

func allTypes() (types.Schema, []types.Value) {
	big38, _ := new(big.Int).SetString("-12345678901234567890123456789012345678", 10)
	schema := types.Schema{
		{Name: "b", Type: types.BooleanType},
		{Name: "ti", Type: types.Type{Kind: types.TinyInt}},
		{Name: "si", Type: types.Type{Kind: types.SmallInt}},
		{Name: "i", Type: types.IntType},
		{Name: "bi", Type: types.BigIntType},
		{Name: "f", Type: types.Type{Kind: types.Float}},
		{Name: "d", Type: types.DoubleType},
		{Name: "dec", Type: types.DecimalType(10, 2)},
		{Name: "bigdec", Type: types.DecimalType(38, 0)},
		{Name: "s", Type: types.StringType},
		{Name: "by", Type: types.BytesType},
		{Name: "dt", Type: types.DateType},
		{Name: "tm", Type: types.Type{Kind: types.Time, Precision: 3}},
		{Name: "ts", Type: types.Timestamp3},
		{Name: "ts6", Type: types.Type{Kind: types.Timestamp, Precision: 6}},
		{Name: "ltz", Type: types.TimestampLTZ3},
		{Name: "arr", Type: types.ArrayOf(types.IntType)},
		{Name: "m", Type: types.MapOf(types.StringType, types.StringType)},
		{Name: "r", Type: types.RowOf(types.Field{Name: "x", Type: types.IntType}, types.Field{Name: "y", Type: types.ArrayOf(types.RowOf(types.Field{Name: "z", Type: types.StringType}))})},
		{Name: "n", Type: types.StringType},
	}
	vals := []types.Value{
		types.BoolValue(true), {I: -128}, {I: 32767}, {I: -2147483648}, {I: 1 << 60},
		types.FloatValue(float64(float32(1.5))), types.FloatValue(-2.25),
		{I: -12345}, types.BigDecimalValue(big38),
		{S: "héllo"}, {S: "\x00\xff"},
		{I: 19000}, {I: 45296_123_000}, {I: 1_700_000_000_123_000}, {I: -1_234_567}, {I: 1_700_000_000_999_000},
		types.ListValue([]types.Value{{I: 1}, types.NullValue, {I: 3}}),
		types.ListValue([]types.Value{{S: "k"}, {S: "v"}, {S: "k2"}, types.NullValue}),
		types.ListValue([]types.Value{{I: 7}, types.ListValue([]types.Value{types.ListValue([]types.Value{{S: "zz"}})})}),
		types.NullValue,
	}
	return schema, vals
}

func TestRoundTripAllTypes(t *testing.T) {
	schema, vals := allTypes()
	d, e := compile(t, schema, map[string]string{"format": "avro"})
	b, _, err := e.Encode(nil, &types.Row{Values: vals})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := d.Decode(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || !rows[0].Equal(types.Row{Values: vals}) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", rows, vals)
	}
	// hamba (an independent decoder) reads what we wrote, with the values
	// Avro's spec gives.
	s, _ := avro.DeriveSchema(schema, avro.Mapping{Legacy: true})
	var m map[string]any
	if err := hamba.Unmarshal(s, b, &m); err != nil {
		t.Fatal(err)
	}
	if m["s"] != "héllo" || m["bi"] != int64(1<<60) || m["n"] != nil {
		t.Fatalf("hamba read %v", m)
	}
	dec, ok := m["dec"].(*big.Rat)
	if !ok || dec.FloatString(2) != "-123.45" {
		t.Fatalf("hamba read decimal %v (%T)", m["dec"], m["dec"])
	}
}

// A record written with an evolved schema reads against the table's: a
// field added (with a default), one removed, int promoted to long and
// float to double, a string read as bytes, fields reordered.
func TestSchemaEvolution(t *testing.T) {
	table := types.Schema{
		{Name: "id", Type: types.BigIntType},
		{Name: "name", Type: types.StringType},
		{Name: "score", Type: types.DoubleType},
		{Name: "gone", Type: types.StringType}, // not in the writer's schema: NULL
	}
	writer, err := avro.Parse(`{"type":"record","name":"r","fields":[
		{"name":"score","type":"float"},
		{"name":"added","type":"string","default":"x"},
		{"name":"id","type":"int"},
		{"name":"name","type":["null","string"],"default":null},
		{"name":"nested","type":{"type":"record","name":"n","fields":[{"name":"a","type":{"type":"array","items":"long"}},{"name":"m","type":{"type":"map","values":"string"}}]}}
	]}`)
	if err != nil {
		t.Fatal(err)
	}
	body, err := hamba.Marshal(writer, map[string]any{
		"score": float32(2.5), "added": "new", "id": int32(42),
		"name":   map[string]any{"string": "ann"},
		"nested": map[string]any{"a": []int64{1, 2, 3}, "m": map[string]any{"k": "v"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reader, _ := avro.DeriveSchema(table, avro.Mapping{Legacy: true})
	rd, err := avro.NewRowDecoder(writer, reader, table)
	if err != nil {
		t.Fatal(err)
	}
	vals := make([]types.Value, len(table))
	if ok, err := rd.DecodeValues(body, vals); err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := []types.Value{{I: 42}, {S: "ann"}, types.FloatValue(2.5), types.NullValue}
	if !(types.Row{Values: vals}).Equal(types.Row{Values: want}) {
		t.Fatalf("got %+v, want %+v", vals, want)
	}

	// A reader's default fills a column the writer lacks.
	readerWithDefault, _ := avro.Parse(`{"type":"record","name":"r","fields":[
		{"name":"id","type":"long"},{"name":"name","type":["null","string"]},{"name":"score","type":"double"},
		{"name":"gone","type":"string","default":"dflt"}]}`)
	rd, err = avro.NewRowDecoder(writer, readerWithDefault, table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.DecodeValues(body, vals); err != nil || vals[3].S != "dflt" {
		t.Fatalf("default: %+v, %v", vals[3], err)
	}

	// A NOT NULL column without a writer's field nor a default does not
	// resolve; nor does a narrowing (long into INT).
	strict := types.Schema{{Name: "missing", Type: types.Type{Kind: types.Int, NotNull: true}}}
	if _, err := avro.NewRowDecoder(writer, nil, strict); err == nil || !strings.Contains(err.Error(), "'missing'") {
		t.Fatalf("missing NOT NULL column: %v", err)
	}
	narrow, _ := avro.Parse(`{"type":"record","name":"r","fields":[{"name":"id","type":"long"}]}`)
	if _, err := avro.NewRowDecoder(narrow, nil, types.Schema{{Name: "id", Type: types.IntType}}); err == nil || !strings.Contains(err.Error(), "does not read into INT") {
		t.Fatalf("long into INT: %v", err)
	}
}

func TestMalformed(t *testing.T) {
	schema := types.Schema{{Name: "id", Type: types.IntType}, {Name: "name", Type: types.StringType}}
	d, _ := compile(t, schema, map[string]string{"format": "avro"})
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{[]byte{0x02}, "avro: field 'id': truncated record at byte 1"},
		{[]byte{0x02, 0x02, 0x02, 0x0a, 'a'}, "avro: field 'name': truncated record at byte 5"},
		{[]byte{0x06}, "avro: field 'id': union index 3 out of range (2 branches) at byte 0"},
		{[]byte{0x00, 0x00, 0x00}, "avro: 1 bytes after the record at byte 2"},
		{[]byte{0x02, 0x02, 0x02, 0x01}, "avro: field 'name': negative length -1 at byte 3"},
		{[]byte{0x02, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "avro: field 'id': varint overflows a long at byte 10"},
	} {
		_, err := d.Decode(c.in, nil)
		if err == nil || err.Error() != c.want {
			t.Errorf("% x: %v, want %q", c.in, err, c.want)
		}
		var de *avro.DecodeError
		if !errors.As(err, &de) {
			t.Errorf("% x: %T is not a DecodeError", c.in, err)
		}
	}
	// ignore-parse-errors (a weir extension) skips them.
	d, _ = compile(t, schema, map[string]string{"format": "avro", "avro.ignore-parse-errors": "true"})
	_, err := d.Decode([]byte{0x02}, nil)
	var skip *format.SkipError
	if !errors.As(err, &skip) {
		t.Fatalf("ignore-parse-errors: %v", err)
	}
	// An empty record is a tombstone: no row.
	if rows, err := d.Decode(nil, nil); err != nil || len(rows) != 0 {
		t.Fatalf("empty record: %v, %v", rows, err)
	}
}

func TestExplicitSchemaAndOptions(t *testing.T) {
	schema := types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "kind", Type: types.StringType}}
	opts := map[string]string{
		"format":      "avro",
		"avro.schema": `{"type":"record","name":"ev","fields":[{"name":"id","type":"long"},{"name":"kind","type":{"type":"enum","name":"k","symbols":["A","B"]}},{"name":"note","type":["null","string"],"default":null}]}`,
		"avro.codec":  "snappy",
	}
	d, e := compile(t, schema, opts)
	row := types.Row{Values: []types.Value{{I: 7}, {S: "B"}}}
	b, _, err := e.Encode(nil, &row)
	if err != nil {
		t.Fatal(err)
	}
	// long 7, enum index 1, note null.
	if !bytes.Equal(b, []byte{0x0e, 0x02, 0x00}) {
		t.Fatalf("encoded % x", b)
	}
	rows, err := d.Decode(b, nil)
	if err != nil || len(rows) != 1 || !rows[0].Equal(row) {
		t.Fatalf("decoded %+v, %v", rows, err)
	}
	if _, _, err := e.Encode(nil, &types.Row{Values: []types.Value{{I: 1}, {S: "C"}}}); err == nil || !strings.Contains(err.Error(), "not a symbol") {
		t.Fatalf("unknown symbol: %v", err)
	}
	if err := compileErr(schema, map[string]string{"format": "avro", "avro.encoding": "json"}); err == nil || !strings.Contains(err.Error(), "json") {
		t.Fatalf("avro.encoding json: %v", err)
	}
	if err := compileErr(schema, map[string]string{"format": "avro", "avro.nope": "1"}); err == nil || !strings.Contains(err.Error(), "avro.nope") {
		t.Fatalf("unknown option: %v", err)
	}
}
