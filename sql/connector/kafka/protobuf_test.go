package kafka_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/weirstream/weir/internal/testing/schemaregistry"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/format/protobuf"
)

// TestProtobufSQL: a SQL job reads a topic of protobuf messages and writes
// another; Go's protobuf runtime (dynamicpb), not weir, writes the input
// and reads the output. A record that does not parse is skipped with
// 'protobuf.ignore-parse-errors'.
func TestProtobufSQL(t *testing.T) {
	servers := cluster(t, "pb-in", "pb-out")
	dir, err := filepath.Abs("../../format/protobuf/testdata/proto")
	if err != nil {
		t.Fatal(err)
	}
	s, err := protobuf.Compile(context.Background(), "weir/test/event.proto", []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	md, err := s.Message("weir.test.Event")
	if err != nil {
		t.Fatal(err)
	}
	msg := func(text string) *dynamicpb.Message {
		t.Helper()
		m := dynamicpb.NewMessage(md)
		if err := prototext.Unmarshal([]byte(text), m); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return m
	}
	in := []string{
		`id: 1 name: "ada" tags: "x" tags: "y" where { x: 1 y: 2 } color: RED counts { key: "a" value: 5 } at { seconds: 1700000000 nanos: 250000000 }`,
		`id: 2 name: "bob" color: GREEN`,
		`id: 3 where { x: -4 }`,
	}
	var recs []*kgo.Record
	for i, text := range in {
		b, err := proto.Marshal(msg(text))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: "pb-in", Value: b})
		if i == 1 {
			recs = append(recs, &kgo.Record{Topic: "pb-in", Value: []byte{0x08, 0x80}}) // truncated: skipped
		}
	}
	produce(t, servers, recs...)

	opts := `'connector' = 'kafka', 'properties.bootstrap.servers' = '` + servers + `', 'format' = 'protobuf',
		'protobuf.proto-path' = '` + dir + `', 'protobuf.proto-file' = 'weir/test/event.proto',
		'protobuf.message-class-name' = 'com.weir.test.EventProtos$Event'`
	cols := "id BIGINT, name STRING, tags ARRAY<STRING>, `where` ROW<x INT, y INT>, color STRING, counts MAP<STRING, BIGINT>, `at` TIMESTAMP_LTZ(6)"
	script := `CREATE TABLE src (` + cols + `) WITH (` + opts + `, 'topic' = 'pb-in', 'scan.startup.mode' = 'earliest-offset',
		'scan.bounded.mode' = 'latest-offset', 'protobuf.ignore-parse-errors' = 'true');
CREATE TABLE dst (` + cols + `) WITH (` + opts + `, 'topic' = 'pb-out');
INSERT INTO dst SELECT id * 10, UPPER(name), tags, ` + "`where`" + `, CASE WHEN color = 'RED' THEN 'GREEN' ELSE color END, counts,
	` + "`at`" + ` + INTERVAL '1' SECOND FROM src;
`
	job, err := sql.NewSession().Plan(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}

	want := []string{
		// proto3 leaves out an empty string, a zero and a NULL: id 3's
		// name reads as "" (proto3 has no absent string) and is not
		// written back.
		`id: 10 name: "ADA" tags: "x" tags: "y" where { x: 1 y: 2 } color: GREEN counts { key: "a" value: 5 } at { seconds: 1700000001 nanos: 250000000 }`,
		`id: 20 name: "BOB" color: GREEN`,
		`id: 30 where { x: -4 }`,
	}
	got := consumeValues(t, servers, "pb-out", len(want))
	var gotText []string
	for _, b := range got {
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(b, m); err != nil {
			t.Fatalf("Go's protobuf does not read what weir wrote (%x): %v", b, err)
		}
		gotText = append(gotText, pbCanonical(t, md, m))
	}
	var wantText []string
	for _, w := range want {
		wantText = append(wantText, pbCanonical(t, md, msg(w)))
	}
	slices.Sort(gotText)
	slices.Sort(wantText)
	if !slices.Equal(gotText, wantText) {
		t.Fatalf("pb-out holds\n%s\nwant\n%s", strings.Join(gotText, "\n"), strings.Join(wantText, "\n"))
	}
}

// pbCanonical is m in one stable form: its deterministic encoding read back
// and printed (prototext's spacing varies between runs of a program, not
// within one).
func pbCanonical(t *testing.T, md protoreflect.MessageDescriptor, m proto.Message) string {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	back := dynamicpb.NewMessage(md)
	if err := proto.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	return prototext.MarshalOptions{}.Format(back)
}

const shopProto = `syntax = "proto3";
package shop;
message Order {
  int64 id = 1;
  string item = 2;
  int32 qty = 3;
  repeated string tags = 4;
  string note = 5;
}
`

// TestProtobufConfluentSQL: a SQL job reads records in Confluent's
// framing with the writer's schema from the registry (another producer
// registered it), and writes records framed with the id of the same
// schema, registered from a local .proto under '<topic>-value'.
func TestProtobufConfluentSQL(t *testing.T) {
	servers := cluster(t, "pbc-in", "pbc-out")
	srv, err := schemaregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shop.proto"), []byte(shopProto), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := protobuf.Compile(context.Background(), "shop.proto", []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	md, err := s.Message("shop.Order")
	if err != nil {
		t.Fatal(err)
	}
	id := srv.Register("pbc-in-value", "PROTOBUF", shopProto)
	header := binary.BigEndian.AppendUint32([]byte{0}, uint32(id))
	header = append(header, 0) // the file's first message
	msg := func(text string) *dynamicpb.Message {
		t.Helper()
		m := dynamicpb.NewMessage(md)
		if err := prototext.Unmarshal([]byte(text), m); err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		return m
	}
	var recs []*kgo.Record
	for _, text := range []string{`id: 1 item: "pen" qty: 2 tags: "a" note: "n"`, `id: 2 item: "ink" qty: 0`, `id: 3 item: "cap" qty: 5`} {
		b, err := proto.Marshal(msg(text))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: "pbc-in", Value: append(append([]byte(nil), header...), b...)})
	}
	produce(t, servers, recs...)

	script := `CREATE TABLE src (id BIGINT, item STRING, qty INT, tags ARRAY<STRING>) WITH (
  'connector' = 'kafka', 'topic' = 'pbc-in', 'properties.bootstrap.servers' = '` + servers + `',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset',
  'format' = 'protobuf-confluent', 'protobuf-confluent.url' = '` + srv.URL + `');
CREATE TABLE dst (id BIGINT, item STRING, qty INT, tags ARRAY<STRING>) WITH (
  'connector' = 'kafka', 'topic' = 'pbc-out', 'properties.bootstrap.servers' = '` + servers + `',
  'format' = 'protobuf-confluent', 'protobuf-confluent.url' = '` + srv.URL + `',
  'protobuf-confluent.proto-path' = '` + dir + `', 'protobuf-confluent.proto-file' = 'shop.proto',
  'protobuf-confluent.message-class-name' = 'shop.Shop$Order');
INSERT INTO dst SELECT id, UPPER(item), qty * 2, tags FROM src WHERE qty > 0;
`
	job, err := sql.NewSession().Plan(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range consumeValues(t, servers, "pbc-out", 2) {
		// The same schema text is the same id under any subject.
		if len(b) < 6 || string(b[:6]) != string(header) {
			t.Fatalf("record %x: want the header %x", b, header)
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(b[6:], m); err != nil {
			t.Fatalf("Go's protobuf does not read %x: %v", b, err)
		}
		got = append(got, pbCanonical(t, md, m))
	}
	want := []string{pbCanonical(t, md, msg(`id: 1 item: "PEN" qty: 4 tags: "a"`)), pbCanonical(t, md, msg(`id: 3 item: "CAP" qty: 10`))}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("pbc-out holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Fetched once per decoder (the plan may have one per subtask), not
	// per record.
	if n := srv.Hits("GET /schemas/ids/{id}"); n < 1 || n >= len(recs) {
		t.Errorf("the writer schema was fetched %d times for %d records", n, len(recs))
	}
}

// TestProtobufSQLErrors: what is wrong with a protobuf table's options
// reaches the SQL user when the statement is planned.
func TestProtobufSQLErrors(t *testing.T) {
	dir, err := filepath.Abs("../../format/protobuf/testdata/proto")
	if err != nil {
		t.Fatal(err)
	}
	for opts, want := range map[string]string{
		`'protobuf.proto-file' = '../protobuf.go', 'protobuf.message-class-name' = 'x'`:                            "the path is not inside the proto path",
		`'protobuf.proto-file' = 'bad/broken.proto', 'protobuf.message-class-name' = 'x'`:                          "bad/broken.proto:6:3",
		`'protobuf.proto-file' = 'weir/test/event.proto', 'protobuf.message-class-name' = 'com.weir.test.Nope'`:    "no message 'com.weir.test.Nope' in weir/test/event.proto",
		`'protobuf.proto-file' = 'weir/test/event.proto', 'protobuf.message-class-name' = 'weir.test.Event.Inner'`: "column 'id': message weir.test.Event.Inner has no field id",
		`'protobuf.proto-file' = 'weir/test/event.proto'`:                                                          "missing required option 'protobuf.message-class-name'",
	} {
		script := `CREATE TABLE src (id BIGINT) WITH ('connector' = 'kafka', 'topic' = 't', 'properties.bootstrap.servers' = '127.0.0.1:1',
  'scan.bounded.mode' = 'latest-offset', 'format' = 'protobuf', 'protobuf.proto-path' = '` + dir + `', ` + opts + `);
CREATE TABLE dst (id BIGINT) WITH ('connector' = 'print');
INSERT INTO dst SELECT id FROM src;
`
		_, err := sql.NewSession().Plan(script)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", opts, err, want)
		}
	}
}
