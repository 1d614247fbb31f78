package schemaregistry

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// The registry is checked through franz-go's client, which speaks
// Confluent's API as the formats do.
func TestRegistry(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cl, err := sr.NewClient(sr.URLs(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	a := sr.Schema{Schema: `{"type": "record", "name": "a", "fields": []}`}
	id1, err := cl.RegisterSchema(ctx, "t-value", a, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	// The same schema (whitespace aside) gets the same id, under any subject.
	a2 := sr.Schema{Schema: `{"type":"record","name":"a","fields":[]}`}
	if id, err := cl.RegisterSchema(ctx, "t-value", a2, -1, -1); err != nil || id != id1 {
		t.Fatalf("same schema again: id %d, %v; want %d", id, err, id1)
	}
	if id, err := cl.RegisterSchema(ctx, "u-value", a, -1, -1); err != nil || id != id1 {
		t.Fatalf("same schema, other subject: id %d, %v; want %d", id, err, id1)
	}
	b := sr.Schema{Schema: `{"type":"record","name":"b","fields":[]}`}
	id2, err := cl.RegisterSchema(ctx, "t-value", b, -1, -1)
	if err != nil || id2 == id1 {
		t.Fatalf("another schema: id %d, %v", id2, err)
	}
	p := sr.Schema{Schema: "syntax = \"proto3\"; message M {}", Type: sr.TypeProtobuf}
	id3, err := cl.RegisterSchema(ctx, "p-value", p, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.SchemaByID(ctx, id3)
	if err != nil || got.Type != sr.TypeProtobuf || got.Schema != p.Schema {
		t.Fatalf("protobuf by id: %+v, %v", got, err)
	}
	got, err = cl.SchemaByID(ctx, id1)
	if err != nil || got.Type != sr.TypeAvro || got.Schema != a.Schema {
		t.Fatalf("avro by id: %+v, %v", got, err)
	}
	vs, err := cl.SubjectVersions(ctx, "t-value")
	if err != nil || len(vs) != 2 || vs[0] != 1 || vs[1] != 2 {
		t.Fatalf("versions: %v, %v", vs, err)
	}
	ss, err := cl.SchemaByVersion(ctx, "t-value", -1)
	if err != nil || ss.ID != id2 || ss.Version != 2 {
		t.Fatalf("latest: %+v, %v", ss, err)
	}
	ss, err = cl.SchemaByVersion(ctx, "t-value", 1)
	if err != nil || ss.ID != id1 {
		t.Fatalf("version 1: %+v, %v", ss, err)
	}
	ss, err = cl.LookupSchema(ctx, "t-value", b)
	if err != nil || ss.ID != id2 || ss.Version != 2 {
		t.Fatalf("lookup: %+v, %v", ss, err)
	}
	// CreateSchema registers and then asks for the id's usages.
	ss, err = cl.CreateSchema(ctx, "v-value", b)
	if err != nil || ss.ID != id2 || ss.Subject != "v-value" || ss.Version != 1 {
		t.Fatalf("create: %+v, %v", ss, err)
	}

	code := func(err error) int {
		var re *sr.ResponseError
		if !errors.As(err, &re) {
			t.Fatalf("not a response error: %v", err)
		}
		return re.ErrorCode
	}
	if _, err := cl.SchemaByID(ctx, 99); code(err) != 40403 {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := cl.SubjectVersions(ctx, "nope"); code(err) != 40401 {
		t.Fatalf("unknown subject: %v", err)
	}
	if _, err := cl.SchemaByVersion(ctx, "t-value", 7); code(err) != 40402 {
		t.Fatalf("unknown version: %v", err)
	}
	if _, err := cl.LookupSchema(ctx, "t-value", p); code(err) != 40403 {
		t.Fatalf("lookup of an unregistered schema: %v", err)
	}
	if _, err := cl.RegisterSchema(ctx, "t-value", sr.Schema{Schema: "{not json"}, -1, -1); code(err) != 42201 {
		t.Fatalf("invalid schema: %v", err)
	}
	if s.Hits("GET /schemas/ids/{id}") != 3 {
		t.Fatalf("hits by id: %d, want 3", s.Hits("GET /schemas/ids/{id}"))
	}
	resp, err := http.Get(s.URL + "/schemas/ids/1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != ContentType {
		t.Fatalf("content type %q", ct)
	}
}

func TestBasicAuth(t *testing.T) {
	s, err := Start(BasicAuth("fred", "secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	schema := sr.Schema{Schema: `"string"`}
	anon, _ := sr.NewClient(sr.URLs(s.URL))
	var re *sr.ResponseError
	if _, err := anon.RegisterSchema(ctx, "x", schema, -1, -1); !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without credentials: %v", err)
	}
	wrong, _ := sr.NewClient(sr.URLs(s.URL), sr.BasicAuth("fred", "nope"))
	if _, err := wrong.RegisterSchema(ctx, "x", schema, -1, -1); !errors.As(err, &re) || re.StatusCode != http.StatusUnauthorized {
		t.Fatalf("wrong password: %v", err)
	}
	cl, _ := sr.NewClient(sr.URLs(s.URL), sr.BasicAuth("fred", "secret"))
	if _, err := cl.RegisterSchema(ctx, "x", schema, -1, -1); err != nil {
		t.Fatal(err)
	}
}
