package protobuf_test

import (
	"encoding/binary"
	stdjson "encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/weirstream/weir/internal/testing/schemaregistry"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func registry(t *testing.T) *schemaregistry.Server {
	t.Helper()
	srv, err := schemaregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// confluentOptions are a Kafka table's options for topic with format
// 'protobuf-confluent' (kv adds or, with "", removes options).
func confluentOptions(schema types.Schema, url string, kv ...string) *connector.Options {
	m := map[string]string{"connector": "kafka", "topic": "ev", "format": "protobuf-confluent",
		"protobuf-confluent.url": url, "protobuf-confluent.proto-path": protoDir,
		"protobuf-confluent.proto-file":         "weir/test/event.proto",
		"protobuf-confluent.message-class-name": "com.weir.test.EventProtos$Event"}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			delete(m, kv[i])
		} else {
			m[kv[i]] = kv[i+1]
		}
	}
	return connector.NewOptions(&connector.Table{Name: "ev", Schema: schema, Options: m})
}

// TestConfluentRoundTrip: the encoder registers event.proto under
// '<topic>-value' with its import as a reference and frames records with
// the id; Go's protobuf reads the body; the decoder reads the records
// with the writer's schema from the registry (fetched once) or with the
// local .proto.
func TestConfluentRoundTrip(t *testing.T) {
	srv := registry(t)
	schema := schemaOf(t, "id BIGINT, name STRING, `where` ROW<x INT, y INT>, color STRING, path ARRAY<ROW<x INT>>")
	o := confluentOptions(schema, srv.URL)
	enc, _ := format.NewEncoder(o, "format", schema)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	in := []string{
		`{"id":1,"name":"a","where":{"x":1,"y":2},"color":"RED","path":[{"x":3}]}`,
		`{"id":2,"name":"","where":null,"color":"COLOR_UNSPECIFIED","path":[]}`,
	}
	var recs [][]byte
	var wg sync.WaitGroup
	recs = make([][]byte, len(in))
	for i, js := range in {
		row := rowFromJSON(t, schema, js)
		wg.Add(1)
		go func() { // concurrent first records: one registration
			defer wg.Done()
			b, _, err := enc.Encode(nil, &row)
			if err != nil {
				t.Error(err)
			}
			recs[i] = b
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if n := srv.Hits("POST /subjects/{subject}/versions"); n != 2 {
		t.Errorf("%d registrations, want 2 (common.proto, then event.proto)", n)
	}
	// The subject holds the file's text and its reference.
	var latest struct {
		ID         int    `json:"id"`
		Schema     string `json:"schema"`
		SchemaType string `json:"schemaType"`
		References []struct {
			Name, Subject string
			Version       int
		} `json:"references"`
	}
	resp, err := http.Get(srv.URL + "/subjects/ev-value/versions/latest")
	if err != nil {
		t.Fatal(err)
	}
	err = stdjson.NewDecoder(resp.Body).Decode(&latest)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(protoDir, "weir/test/event.proto"))
	if err != nil {
		t.Fatal(err)
	}
	if latest.SchemaType != "PROTOBUF" || latest.Schema != string(text) || len(latest.References) != 1 ||
		latest.References[0].Name != "weir/test/common.proto" || latest.References[0].Subject != "weir/test/common.proto" {
		t.Errorf("ev-value: %+v", latest)
	}
	// Confluent's header: magic 0, the id, the index path [0] as one 0.
	md := eventMessage(t)
	for i, rec := range recs {
		if len(rec) < 6 || rec[0] != 0 || int(binary.BigEndian.Uint32(rec[1:5])) != latest.ID || rec[5] != 0 {
			t.Fatalf("record %d: header %x, want 00 %08x 00", i, rec[:min(6, len(rec))], latest.ID)
		}
		m := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(rec[6:], m); err != nil {
			t.Fatalf("Go's protobuf does not read record %d: %v", i, err)
		}
		want := dynamicpb.NewMessage(md)
		texts := []string{`id: 1 name: "a" where { x: 1 y: 2 } color: RED path { x: 3 }`, `id: 2`}
		if err := prototext.Unmarshal([]byte(texts[i]), want); err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(m, want) {
			t.Errorf("record %d reads as %v, want %v", i, m, want)
		}
	}
	for _, local := range []bool{false, true} {
		kv := []string{"protobuf-confluent.proto-file", "", "protobuf-confluent.message-class-name", ""}
		if local {
			kv = nil
		}
		o := confluentOptions(schema, srv.URL, kv...)
		dec, _ := format.NewDecoder(o, "format", schema)
		if err := o.Err(); err != nil {
			t.Fatal(err)
		}
		for i, rec := range recs {
			for range 2 {
				if got := rowJSON(t, schema, decodeOne(t, dec, rec)); got != in[i] {
					t.Errorf("local .proto %v: record %d reads as %s, want %s", local, i, got, in[i])
				}
			}
		}
	}
	if n := srv.Hits("GET /schemas/ids/{id}"); n != 1 {
		t.Errorf("the schema was fetched %d times, want once", n)
	}
	// A nested message's index path: Bench is the file's second message.
	o = confluentOptions(schemaOf(t, "id BIGINT"), srv.URL, "protobuf-confluent.message-class-name", "weir.test.Bench")
	benc, _ := format.NewEncoder(o, "format", schemaOf(t, "id BIGINT"))
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	b, _, err := benc.Encode(nil, &types.Row{Values: []types.Value{{I: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 7 || b[5] != 2 || b[6] != 2 { // count 1, index 1, zigzag
		t.Errorf("Bench's record %x: want the index path [1] as 02 02", b)
	}
}

// TestConfluentWriterSchema: a record of a schema another producer
// registered (an evolved message, nested at index path [1, 0]) reads by
// column names; bad headers and unknown ids are errors, skipped with
// ignore-parse-errors.
func TestConfluentWriterSchema(t *testing.T) {
	srv := registry(t)
	id := srv.Register("other-value", "PROTOBUF", `syntax = "proto3";
package evolved;
import "google/protobuf/timestamp.proto";
message Unused { int32 a = 1; }
message Outer {
  message Event {
    int64 id = 1;
    string name = 2;
    string added = 30;
    google.protobuf.Timestamp at = 31;
  }
}`)
	schema := schemaOf(t, "id BIGINT, name STRING")
	rec := append([]byte{0}, binary.BigEndian.AppendUint32(nil, uint32(id))...)
	rec = append(rec, 4, 2, 0) // index path [1, 0]
	rec = protowire.AppendVarint(protowire.AppendTag(rec, 1, protowire.VarintType), 5)
	rec = protowire.AppendString(protowire.AppendTag(rec, 2, protowire.BytesType), "n")
	rec = protowire.AppendString(protowire.AppendTag(rec, 30, protowire.BytesType), "x")
	for _, skip := range []string{"false", "true"} {
		o := confluentOptions(schema, srv.URL, "protobuf-confluent.proto-file", "", "protobuf-confluent.message-class-name", "",
			"protobuf-confluent.ignore-parse-errors", skip)
		dec, _ := format.NewDecoder(o, "format", schema)
		if err := o.Err(); err != nil {
			t.Fatal(err)
		}
		if got := rowJSON(t, schema, decodeOne(t, dec, rec)); got != `{"id":5,"name":"n"}` {
			t.Errorf("evolved writer: %s", got)
		}
		unknown := append([]byte{0, 0, 0, 3, 0xe7, 0}, rec[8:]...) // id 999
		for name, c := range map[string]struct {
			rec  []byte
			want string
			skip bool
		}{
			"magic":   {append([]byte{1}, rec[1:]...), "not in Confluent's wire format", true},
			"short":   {[]byte{0, 0, 0}, "not in Confluent's wire format", true},
			"index":   {append(rec[:5:5], 0x7f), "a bad message index count", true},
			"path":    {append(append(rec[:5:5], 2, 20), rec[8:]...), "no message at index path [10]", false},
			"unknown": {unknown, "schema id 999: fetching it from the registry", false},
			"body":    {append(rec[:8:8], 0x08), "truncated message", true},
		} {
			_, err := dec.Decode(c.rec, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: %v, want %q", name, err, c.want)
				continue
			}
			if skipped := errors.As(err, new(*format.SkipError)); skipped != (skip == "true" && c.skip) {
				t.Errorf("%s (ignore-parse-errors %s): skipped %v: %v", name, skip, skipped, err)
			}
		}
	}
	// Writing needs the file; without auto-registration it must be there.
	o := confluentOptions(schema, srv.URL, "protobuf-confluent.auto.register.schemas", "false")
	enc, _ := format.NewEncoder(o, "format", schema)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := enc.Encode(nil, &types.Row{Values: []types.Value{{I: 1}, {S: "a"}}}); err == nil ||
		!strings.Contains(err.Error(), "auto.register.schemas is false") {
		t.Errorf("lookup without registration: %v", err)
	}
}
