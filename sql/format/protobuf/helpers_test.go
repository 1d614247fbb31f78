package protobuf_test

import (
	"context"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/json"
	"github.com/weirstream/weir/sql/format/protobuf"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// schemaOf parses a column list ("id BIGINT, name STRING").
func schemaOf(t testing.TB, cols string) types.Schema {
	t.Helper()
	rt, err := parser.ParseType("ROW<" + cols + ">")
	if err != nil {
		t.Fatalf("%s: %v", cols, err)
	}
	return rt.Fields
}

// eventColumns are columns for every field of weir.test.Event.
const eventColumns = "id BIGINT, name STRING, delta INT, `count` INT, score DOUBLE, ratio FLOAT, ok BOOLEAN, payload BYTES, " +
	"color STRING, `where` ROW<x INT, y INT, label STRING, kind STRING, marks ARRAY<INT>>, ids ARRAY<INT>, tags ARRAY<STRING>, " +
	"path ARRAY<ROW<x INT, y INT>>, counts MAP<STRING, BIGINT>, points MAP<INT, ROW<x INT, label STRING>>, " +
	"text STRING, number BIGINT, maybe INT, `at` TIMESTAMP_LTZ(6), f64 BIGINT, sf32 INT, " +
	"`inner` ROW<note STRING, level INT, deep ROW<colors ARRAY<STRING>>>, s64 BIGINT, u64 BIGINT, far INT"

func eventSchema(t testing.TB) types.Schema { return schemaOf(t, eventColumns) }

func compileEvent(t testing.TB) *protobuf.Schema {
	t.Helper()
	s, err := protobuf.Compile(context.Background(), "weir/test/event.proto", []string{protoDir})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func eventMessage(t testing.TB) protoreflect.MessageDescriptor {
	t.Helper()
	md, err := compileEvent(t).Message("com.weir.test.EventProtos$Event")
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func decodeOne(t testing.TB, d format.Decoder, b []byte) types.Row {
	t.Helper()
	rows, err := d.Decode(b, nil)
	if err != nil {
		t.Fatalf("Decode(%x): %v", b, err)
	}
	if len(rows) != 1 {
		t.Fatalf("Decode(%x): %d rows", b, len(rows))
	}
	return rows[0]
}

// rowJSON shows a row as the json format writes it.
func rowJSON(t testing.TB, schema types.Schema, r types.Row) string {
	t.Helper()
	e, err := json.NewEncoder(schema, json.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := e.Encode(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rowFromJSON reads a row as the json format does.
func rowFromJSON(t testing.TB, schema types.Schema, s string) types.Row {
	t.Helper()
	d, err := json.NewDecoder(schema, json.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return decodeOne(t, d, []byte(s))
}

// eventCases are messages in protoc's text format and the rows weir reads
// them as (columns eventColumns).
var eventCases = []struct {
	name      string
	text      string
	json      string
	sameBytes bool // weir writes the row back byte for byte as protoc
}{
	{
		name: "empty",
		text: ``,
		json: `{"id":0,"name":"","delta":0,"count":0,"score":0,"ratio":0,"ok":false,"payload":"","color":"COLOR_UNSPECIFIED",` +
			`"where":null,"ids":[],"tags":[],"path":[],"counts":{},"points":{},"text":null,"number":null,"maybe":null,` +
			`"at":null,"f64":0,"sf32":0,"inner":null,"s64":0,"u64":0,"far":0}`,
		sameBytes: true,
	},
	{
		name: "scalars",
		text: `id: 7 name: "h\303\251llo" delta: -5 count: 4294967295 score: 2.5 ratio: 0.25 ok: true payload: "\001\002"
			color: GREEN f64: 18446744073709551615 sf32: -3 s64: -9000000000 u64: 9223372036854775808 far: 12
			maybe: 0 number: 42`,
		json: `{"id":7,"name":"héllo","delta":-5,"count":-1,"score":2.5,"ratio":0.25,"ok":true,"payload":"AQI=","color":"GREEN",` +
			`"where":null,"ids":[],"tags":[],"path":[],"counts":{},"points":{},"text":null,"number":42,"maybe":0,` +
			`"at":null,"f64":-1,"sf32":-3,"inner":null,"s64":-9000000000,"u64":-9223372036854775808,"far":12}`,
		sameBytes: true,
	},
	{
		name: "nested",
		text: `where { x: 1 y: 2 label: "a" kind: A marks: [3, 4] }
			ids: [1, -1, 2147483647] tags: "x" tags: "" path { x: 5 } path { x: 6 y: 0 }
			counts { key: "a" value: 1 } counts { key: "b" value: -2 }
			points { key: 9 value { x: 10 } }
			text: "t"
			at { seconds: 1700000000 nanos: 123456000 }
			inner { note: "n" level: HIGH deep { colors: [RED, GREEN, COLOR_UNSPECIFIED] } }`,
		json: `{"id":0,"name":"","delta":0,"count":0,"score":0,"ratio":0,"ok":false,"payload":"","color":"COLOR_UNSPECIFIED",` +
			`"where":{"x":1,"y":2,"label":"a","kind":"A","marks":[3,4]},"ids":[1,-1,2147483647],"tags":["x",""],` +
			`"path":[{"x":5,"y":null},{"x":6,"y":0}],"counts":{"a":1,"b":-2},"points":{"9":{"x":10,"label":null}},` +
			`"text":"t","number":null,"maybe":null,"at":"2023-11-14 22:13:20.123456Z","f64":0,"sf32":0,` +
			`"inner":{"note":"n","level":1,"deep":{"colors":["RED","GREEN","COLOR_UNSPECIFIED"]}},"s64":0,"u64":0,"far":0}`,
	},
	{
		name: "negative-timestamp",
		text: `at { seconds: -1 nanos: 500000000 } where { x: -7 }`,
		json: `{"id":0,"name":"","delta":0,"count":0,"score":0,"ratio":0,"ok":false,"payload":"","color":"COLOR_UNSPECIFIED",` +
			`"where":{"x":-7,"y":null,"label":null,"kind":null,"marks":[]},"ids":[],"tags":[],"path":[],"counts":{},"points":{},` +
			`"text":null,"number":null,"maybe":null,"at":"1969-12-31 23:59:59.5Z","f64":0,"sf32":0,"inner":null,"s64":0,"u64":0,"far":0}`,
		sameBytes: true,
	},
}
