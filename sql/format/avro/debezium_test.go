package avro_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	hamba "github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

// The schema Debezium's AvroConverter registers for a PostgreSQL table's
// events: the row images a named record used twice, source, ts_ms and
// transaction beside them.
const debeziumEnvelope = `{
  "type": "record", "name": "Envelope", "namespace": "dbserver1.public.customers",
  "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "int"},
        {"name": "name", "type": "string"},
        {"name": "email", "type": ["null", "string"], "default": null}]}], "default": null},
    {"name": "after", "type": ["null", "Value"], "default": null},
    {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
        {"name": "version", "type": "string"},
        {"name": "connector", "type": "string"},
        {"name": "name", "type": "string"},
        {"name": "ts_ms", "type": "long"},
        {"name": "snapshot", "type": [{"type": "string", "connect.default": "false", "connect.name": "io.debezium.data.Enum", "connect.parameters": {"allowed": "true,last,false,incremental"}}, "null"], "default": "false"},
        {"name": "db", "type": "string"},
        {"name": "lsn", "type": ["null", "long"], "default": null}]}},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": null},
    {"name": "transaction", "type": ["null", {"type": "record", "name": "block", "namespace": "event", "fields": [
        {"name": "id", "type": "string"}, {"name": "total_order", "type": "long"}, {"name": "data_collection_order", "type": "long"}]}], "default": null}
  ]
}`

var customers = types.Schema{{Name: "id", Type: types.IntType}, {Name: "name", Type: types.StringType}}

func customer(k types.RowKind, id int64, name string) types.Row {
	return types.Row{Kind: k, Values: []types.Value{{I: id}, {S: name}}}
}

func debeziumEvent(t *testing.T, s hamba.Schema, op string, before, after map[string]any) []byte {
	t.Helper()
	src := map[string]any{"version": "2.5.0.Final", "connector": "postgresql", "name": "dbserver1", "ts_ms": int64(1700000000000),
		"snapshot": map[string]any{"string": "false"}, "db": "app", "lsn": map[string]any{"long": int64(23456)}}
	ev := map[string]any{"op": op, "source": src, "ts_ms": map[string]any{"long": int64(1700000000123)}, "transaction": nil}
	img := func(m map[string]any) any {
		if m == nil {
			return nil
		}
		return map[string]any{"dbserver1.public.customers.Value": m}
	}
	ev["before"], ev["after"] = img(before), img(after)
	b, err := hamba.Marshal(s, ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDebeziumDecode(t *testing.T) {
	reg := registry(t)
	id := reg.Register("dbserver1.public.customers-value", "AVRO", debeziumEnvelope)
	s, err := avro.Parse(debeziumEnvelope)
	if err != nil {
		t.Fatal(err)
	}
	row := func(id int32, name string) map[string]any {
		return map[string]any{"id": id, "name": name, "email": map[string]any{"string": name + "@x"}}
	}
	d := compileDecoder(t, customers, map[string]string{"format": "debezium-avro-confluent", "debezium-avro-confluent.url": reg.URL})
	in := [][]byte{
		withHeader(id, debeziumEvent(t, s, "r", nil, row(1, "a"))),
		withHeader(id, debeziumEvent(t, s, "c", nil, row(2, "b"))),
		withHeader(id, debeziumEvent(t, s, "u", row(1, "a"), row(1, "a2"))),
		withHeader(id, debeziumEvent(t, s, "d", row(2, "b"), nil)),
		nil, // a tombstone
	}
	want := []types.Row{
		customer(types.Insert, 1, "a"), customer(types.Insert, 2, "b"),
		customer(types.UpdateBefore, 1, "a"), customer(types.UpdateAfter, 1, "a2"), customer(types.Delete, 2, "b"),
	}
	var got []types.Row
	for _, b := range in {
		if got, err = d.Decode(b, got); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	for _, c := range []struct {
		in   []byte
		want string
	}{
		{withHeader(id, debeziumEvent(t, s, "u", nil, row(1, "a"))), "debezium-avro-confluent: field 'before': null in an update: the before-image is needed (a PostgreSQL table needs REPLICA IDENTITY FULL)"},
		{withHeader(id, debeziumEvent(t, s, "d", nil, nil)), "debezium-avro-confluent: field 'before': null in a delete (the source table logs no before-image)"},
		{withHeader(id, debeziumEvent(t, s, "t", nil, nil)), "debezium-avro-confluent: field 'op': unsupported op 't' (not a row change)"},
		{withHeader(id, debeziumEvent(t, s, "c", nil, nil)), "debezium-avro-confluent: field 'after': null in an event with op 'c'"},
	} {
		if _, err := d.Decode(c.in, nil); err == nil || err.Error() != c.want {
			t.Errorf("%v, want %q", err, c.want)
		}
	}
	// ignore-parse-errors (as debezium-json's) skips such events and
	// records that are not in the wire format.
	d = compileDecoder(t, customers, map[string]string{"format": "debezium-avro-confluent", "debezium-avro-confluent.url": reg.URL,
		"debezium-avro-confluent.ignore-parse-errors": "true"})
	var skip *format.SkipError
	for _, in := range [][]byte{withHeader(id, debeziumEvent(t, s, "t", nil, nil)), {7, 7}, withHeader(id, []byte{1})} {
		if rows, err := d.Decode(in, nil); !errors.As(err, &skip) || len(rows) != 0 {
			t.Errorf("% x: %v, %v", in, rows, err)
		}
	}
}

// Written as Flink writes: +I and +U as creates, -U and -D as deletes; read
// back, the same table.
func TestDebeziumEncode(t *testing.T) {
	reg := registry(t)
	opts := map[string]string{"connector": "kafka", "topic": "cust", "format": "debezium-avro-confluent", "debezium-avro-confluent.url": reg.URL}
	d, e := compile(t, customers, opts)
	in := []types.Row{
		customer(types.Insert, 1, "a"), customer(types.UpdateBefore, 1, "a"), customer(types.UpdateAfter, 1, "b"), customer(types.Delete, 1, "b"),
	}
	want := []types.Row{
		customer(types.Insert, 1, "a"), customer(types.Delete, 1, "a"), customer(types.Insert, 1, "b"), customer(types.Delete, 1, "b"),
	}
	var got []types.Row
	for i := range in {
		b, _, err := e.Encode(nil, &in[i])
		if err != nil {
			t.Fatal(err)
		}
		if got, err = d.Decode(b, got); err != nil {
			t.Fatal(err)
		}
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	id, _, ok := reg.Latest("cust-value")
	if !ok {
		t.Fatal("nothing registered under cust-value")
	}
	// Flink's envelope: a nullable record of before, after, op.
	sc, _ := reg.Schema(id)
	ps, err := avro.Parse(sc.Text)
	if err != nil {
		t.Fatal(err)
	}
	wantSchema := `["null",{"name":"org.apache.flink.avro.generated.record","type":"record","fields":[` +
		`{"name":"before","type":["null",{"name":"org.apache.flink.avro.generated.record_before","type":"record","fields":[{"name":"id","type":["null","int"]},{"name":"name","type":["null","string"]}]}]},` +
		`{"name":"after","type":["null",{"name":"org.apache.flink.avro.generated.record_after","type":"record","fields":[{"name":"id","type":["null","int"]},{"name":"name","type":["null","string"]}]}]},` +
		`{"name":"op","type":["null","string"]}]}]`
	if ps.String() != wantSchema {
		t.Fatalf("registered\n%s\nwant\n%s", ps.String(), wantSchema)
	}
	if !strings.Contains(sc.Text, `"default":null`) {
		t.Fatalf("no defaults in %s", sc.Text)
	}
}

// Debezium's default time.precision.mode writes times as plain ints and
// longs named by "connect.name": read as what they stand for.
func TestDebeziumTimeTypes(t *testing.T) {
	reg := registry(t)
	const schema = `{"type":"record","name":"Envelope","namespace":"db.public.t","fields":[
	  {"name":"before","type":["null",{"type":"record","name":"Value","fields":[
	    {"name":"id","type":"int"},
	    {"name":"created","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTimestamp"}},
	    {"name":"at_ms","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.Timestamp"}},
	    {"name":"at_ns","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.NanoTimestamp"}},
	    {"name":"born","type":{"type":"int","connect.version":1,"connect.name":"io.debezium.time.Date"}},
	    {"name":"t","type":{"type":"long","connect.version":1,"connect.name":"io.debezium.time.MicroTime"}},
	    {"name":"tz","type":["null",{"type":"string","connect.version":1,"connect.name":"io.debezium.time.ZonedTimestamp"}],"default":null}]}],"default":null},
	  {"name":"after","type":["null","Value"],"default":null},
	  {"name":"op","type":"string"}]}`
	id := reg.Register("t-value", "AVRO", schema)
	s, err := avro.Parse(schema)
	if err != nil {
		t.Fatal(err)
	}
	created := int64(1_700_000_000_123_456) // micros
	body, err := hamba.Marshal(s, map[string]any{"before": nil, "op": "c", "after": map[string]any{"db.public.t.Value": map[string]any{
		"id": int32(1), "created": created, "at_ms": int64(1_700_000_000_123), "at_ns": int64(1_700_000_000_123_456_789),
		"born": int32(19000), "t": int64(3_723_000_001), "tz": map[string]any{"string": "2024-01-02T05:04:05.678+02:00"}}}})
	if err != nil {
		t.Fatal(err)
	}
	table := types.Schema{
		{Name: "id", Type: types.IntType},
		{Name: "created", Type: types.Type{Kind: types.Timestamp, Precision: 6}},
		{Name: "at_ms", Type: types.Timestamp3},
		{Name: "at_ns", Type: types.Type{Kind: types.Timestamp, Precision: 6}},
		{Name: "born", Type: types.DateType},
		{Name: "t", Type: types.Type{Kind: types.Time, Precision: 3}},
		{Name: "tz", Type: types.TimestampLTZ3},
	}
	d := compileDecoder(t, table, map[string]string{"format": "debezium-avro-confluent", "debezium-avro-confluent.url": reg.URL})
	rows, err := d.Decode(withHeader(id, body), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := types.Row{Kind: types.Insert, Values: []types.Value{
		{I: 1}, {I: created}, {I: 1_700_000_000_123_000}, {I: 1_700_000_000_123_456}, {I: 19000}, {I: 3_723_000_001},
		{I: time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC).UnixMicro()},
	}}
	if len(rows) != 1 || !rows[0].Equal(want) {
		t.Fatalf("got %+v\nwant %+v", rows, want)
	}
	body, err = hamba.Marshal(s, map[string]any{"before": nil, "op": "c", "after": map[string]any{"db.public.t.Value": map[string]any{
		"id": int32(1), "created": created, "at_ms": int64(0), "at_ns": int64(0), "born": int32(0), "t": int64(0),
		"tz": map[string]any{"string": "yesterday"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Decode(withHeader(id, body), nil); err == nil || !strings.Contains(err.Error(), "field 'after.tz'") {
		t.Fatalf("a bad zoned timestamp: %v", err)
	}
}
