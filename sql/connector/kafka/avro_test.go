package kafka_test

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/internal/testing/schemaregistry"
	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

func produceValues(t *testing.T, servers, topic string, values ...[]byte) {
	t.Helper()
	var recs []*kgo.Record
	for _, v := range values {
		// One key, one partition: the order kept (a changelog's updates).
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte("k"), Value: v})
	}
	produce(t, servers, recs...)
}

func confluent(id int, body []byte) []byte {
	return append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id)), body...)
}

func mustMarshal(t *testing.T, s hamba.Schema, v any) []byte {
	t.Helper()
	b, err := hamba.Marshal(s, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A SQL job reads 'avro-confluent' records that an independent writer
// (hamba/avro, with schemas it registered, one of them evolved) produced,
// and Debezium events in 'debezium-avro-confluent'; it writes
// 'avro-confluent' back, which an independent reader decodes with the
// schema it finds in the registry by the records' ids.
func TestAvroConfluentSQL(t *testing.T) {
	servers := cluster(t, "orders", "cdc", "out")
	reg, err := schemaregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()

	v1 := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"qty","type":"int"}]}`
	v2 := `{"type":"record","name":"Order","namespace":"shop","fields":[
		{"name":"id","type":"long"},{"name":"item","type":"string"},{"name":"qty","type":"long"},
		{"name":"coupon","type":["null","string"],"default":null}]}`
	id1, id2 := reg.Register("orders-value", "AVRO", v1), reg.Register("orders-value", "AVRO", v2)
	s1, _ := avro.Parse(v1)
	s2, _ := avro.Parse(v2)
	produceValues(t, servers, "orders",
		confluent(id1, mustMarshal(t, s1, map[string]any{"id": int64(1), "item": "apple", "qty": int32(3)})),
		confluent(id2, mustMarshal(t, s2, map[string]any{"id": int64(2), "item": "pear", "qty": int64(5), "coupon": map[string]any{"string": "X"}})),
		confluent(id1, mustMarshal(t, s1, map[string]any{"id": int64(3), "item": "fig", "qty": int32(1)})),
	)

	idc := reg.Register("cdc-value", "AVRO", debeziumEnvelope)
	sc, _ := avro.Parse(debeziumEnvelope)
	row := func(id int32, name string) map[string]any { return map[string]any{"id": id, "name": name} }
	produceValues(t, servers, "cdc",
		confluent(idc, debeziumEvent(t, sc, "r", nil, row(1, "a"))),
		confluent(idc, debeziumEvent(t, sc, "c", nil, row(2, "b"))),
		confluent(idc, debeziumEvent(t, sc, "u", row(1, "a"), row(1, "a2"))),
		confluent(idc, debeziumEvent(t, sc, "d", row(2, "b"), nil)),
		nil, // Debezium's tombstone after a delete
	)

	with := func(topic, format string, extra string) string {
		return fmt.Sprintf(`WITH ('connector' = 'kafka', 'topic' = '%s', 'properties.bootstrap.servers' = '%s', 'format' = '%s', '%s.url' = '%s'%s)`,
			topic, servers, format, format, reg.URL, extra)
	}
	bounded := `, 'scan.bounded.mode' = 'latest-offset'`
	got := mustSQL(t, `
CREATE TABLE orders (id BIGINT, item STRING, qty BIGINT) `+with("orders", "avro-confluent", bounded)+`;
CREATE TABLE customers (id INT, name STRING) `+with("cdc", "debezium-avro-confluent", bounded)+`;
CREATE TABLE out_orders (id BIGINT NOT NULL, item STRING, total BIGINT) `+with("out", "avro-confluent", "")+`;
INSERT INTO out_orders SELECT id, UPPER(item), qty * 10 FROM orders;
SELECT id, name FROM customers;
`)
	// The changelog of the customers table, as debezium-json gives it.
	want := []string{"+I[1, a]", "+I[2, b]", "+U[1, a2]", "-D[2, b]", "-U[1, a]"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("customers changelog:\n got %q\nwant %q", got, want)
	}

	// What the job wrote: Confluent's wire format, the schema registered
	// under out-value; decoded here by hamba with that schema.
	outID, _, ok := reg.Latest("out-value")
	if !ok {
		t.Fatal("the sink registered nothing under out-value")
	}
	outSchema, _ := reg.Schema(outID)
	ws, err := avro.Parse(outSchema.Text)
	if err != nil {
		t.Fatal(err)
	}
	var orders []string
	for _, v := range consumeValues(t, servers, "out", 3) {
		if v[0] != 0 || int(binary.BigEndian.Uint32(v[1:5])) != outID {
			t.Fatalf("record header % x, want magic 0 and id %d", v[:5], outID)
		}
		var m map[string]any
		if err := hamba.Unmarshal(ws, v[5:], &m); err != nil {
			t.Fatal(err)
		}
		orders = append(orders, fmt.Sprint(m["id"], " ", m["item"], " ", m["total"]))
	}
	slices.Sort(orders)
	if want := []string{"1 APPLE 30", "2 PEAR 50", "3 FIG 10"}; !slices.Equal(orders, want) {
		t.Fatalf("written orders %q, want %q", orders, want)
	}

	// And read back by SQL.
	got = mustSQL(t, `CREATE TABLE out_orders (id BIGINT, item STRING, total BIGINT) `+with("out", "avro-confluent", bounded)+`;
SELECT * FROM out_orders;`)
	if want := []string{"+I[1, APPLE, 30]", "+I[2, PEAR, 50]", "+I[3, FIG, 10]"}; !slices.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
}

// The Debezium envelope Debezium's AvroConverter registers for a
// PostgreSQL table (the row images, source, ts_ms, transaction).
const debeziumEnvelope = `{
  "type": "record", "name": "Envelope", "namespace": "dbserver1.public.customers",
  "fields": [
    {"name": "before", "type": ["null", {"type": "record", "name": "Value", "fields": [
        {"name": "id", "type": "int"}, {"name": "name", "type": "string"}]}], "default": null},
    {"name": "after", "type": ["null", "Value"], "default": null},
    {"name": "source", "type": {"type": "record", "name": "Source", "namespace": "io.debezium.connector.postgresql", "fields": [
        {"name": "version", "type": "string"}, {"name": "connector", "type": "string"}, {"name": "ts_ms", "type": "long"},
        {"name": "db", "type": "string"}, {"name": "lsn", "type": ["null", "long"], "default": null}]}},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": ["null", "long"], "default": null}
  ]
}`

func debeziumEvent(t *testing.T, s hamba.Schema, op string, before, after map[string]any) []byte {
	t.Helper()
	img := func(m map[string]any) any {
		if m == nil {
			return nil
		}
		return map[string]any{"dbserver1.public.customers.Value": m}
	}
	return mustMarshal(t, s, map[string]any{
		"before": img(before), "after": img(after), "op": op,
		"source": map[string]any{"version": "2.5.0.Final", "connector": "postgresql", "ts_ms": int64(1700000000000), "db": "app", "lsn": map[string]any{"long": int64(42)}},
		"ts_ms":  map[string]any{"long": int64(1700000000123)},
	})
}

// upsert-kafka with Avro keys and values through the registry: the key
// schema registered under '<topic>-key', the value's under
// '<topic>-value', deletes as tombstones.
func TestUpsertKafkaAvroConfluent(t *testing.T) {
	servers := cluster(t, "ua")
	reg, err := schemaregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	opts := []string{"key.format", "avro-confluent", "key.avro-confluent.url", reg.URL, "value.format", "avro-confluent", "value.avro-confluent.url", reg.URL}
	changes := []types.Row{row(types.Insert, 1, "a"), row(types.Insert, 2, "b"), row(types.UpdateBefore, 1, "a"), row(types.UpdateAfter, 1, "a2"), row(types.Delete, 2, "b")}
	write(t, tab("upsert-kafka", servers, "ua", []int{0}, opts...), changes)
	for _, subject := range []string{"ua-key", "ua-value"} {
		if _, _, ok := reg.Latest(subject); !ok {
			t.Fatalf("nothing registered under %s", subject)
		}
	}
	got, err := read(t, tab("upsert-kafka", servers, "ua", []int{0}, append(opts, "scan.bounded.mode", "latest-offset")...))
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]string{}
	for _, s := range got {
		k := s[2:strings.IndexByte(s, ':')]
		per[k] = append(per[k], s)
	}
	if !slices.Equal(per["1"], []string{"+U1:a", "+U1:a2"}) || !slices.Equal(per["2"], []string{"+U2:b", "-D2:null"}) {
		t.Fatalf("read %v", got)
	}
}
