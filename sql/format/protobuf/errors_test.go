package protobuf_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/protobuf"
	"github.com/weirstream/weir/sql/types"
)

// TestBadRecords: a record that does not decode says what is wrong and
// where; with ignore-parse-errors it is a *format.SkipError.
func TestBadRecords(t *testing.T) {
	schema := schemaOf(t, "id BIGINT, name STRING, `where` ROW<x INT, y INT>, ids ARRAY<INT>")
	md := eventMessage(t)
	tag := protowire.AppendTag
	for _, c := range []struct {
		name string
		rec  []byte
		want string
	}{
		{"truncated varint", []byte{0x08, 0x80}, "field id (1) at byte 0: truncated message"},
		{"truncated tag", []byte{0x80}, "at byte 0: truncated message"},
		{"truncated string", append(tag(nil, 2, protowire.BytesType), 5, 'a'), "field name (2) at byte 0: truncated message"},
		{"truncated unknown field", append(tag(nil, 50, protowire.BytesType), 9), "field 50 at byte 0: truncated message"},
		{"wrong wire type", protowire.AppendString(tag(nil, 1, protowire.BytesType), "x"),
			"field id (1) at byte 0: wire type length-delimited (2), but the field's type is read as varint (0)"},
		{"wrong wire type nested", append(tag(nil, 10, protowire.BytesType), 2, 0x0d, 0),
			"field where (10) at byte 0: field x (1) at byte 0: wire type fixed32 (5), but the field's type is read as varint (0)"},
		{"required missing", append(tag(nil, 10, protowire.BytesType), 2, 0x10, 3),
			"field where: required field x is missing"},
		{"invalid utf-8", protowire.AppendString(tag(nil, 2, protowire.BytesType), "\xff"),
			"field name (2) at byte 0: string field is not valid UTF-8"},
		{"field number 0", []byte{0x00, 0x01}, "at byte 0: invalid field number"},
		{"packed truncated", append(tag(nil, 11, protowire.BytesType), 3, 0x01, 0x80), "field ids (11) at byte 0: truncated message"},
	} {
		for _, skip := range []bool{false, true} {
			d, err := protobuf.NewDecoder(schema, md, protobuf.Options{IgnoreParseErrors: skip})
			if err != nil {
				t.Fatal(err)
			}
			rows, err := d.Decode(c.rec, nil)
			if err == nil {
				t.Errorf("%s: decoded %v", c.name, rows)
				continue
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "protobuf: message weir.test.Event: ") {
				t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
			}
			var se *format.SkipError
			if errors.As(err, &se) != skip || len(rows) != 0 {
				t.Errorf("%s (ignore-parse-errors %v): %T %v, %d rows", c.name, skip, err, err, len(rows))
			}
		}
	}
}

// TestBadSchemas: columns that the message has not, or of a type its
// field does not map to, are refused when the table is planned.
func TestBadSchemas(t *testing.T) {
	md := eventMessage(t)
	for cols, want := range map[string]string{
		"nope INT":                          "column 'nope': message weir.test.Event has no field nope (its fields: id, name,",
		"name INT":                          "column 'name' is INT but the protobuf field name is string: want STRING (VARCHAR or CHAR)",
		"id INT":                            "column 'id' is INT but the protobuf field id is int64: want BIGINT",
		"`count` BIGINT":                    "column 'count' is BIGINT but the protobuf field count is uint32: want INT",
		"ids INT":                           "column 'ids' is INT but the protobuf field ids is repeated: want ARRAY",
		"ids ARRAY<STRING>":                 "column 'ids' element is STRING but the protobuf field ids is int32: want INT",
		"counts MAP<STRING, INT>":           "column 'counts' map value is INT but the protobuf field value is int64: want BIGINT",
		"`where` ROW<x INT, z INT>":         "column 'where': column 'z': message weir.common.Point has no field z",
		"`at` BIGINT":                       "want ROW<seconds BIGINT, nanos INT>, TIMESTAMP or TIMESTAMP_LTZ",
		"color BOOLEAN":                     "column 'color' is BOOLEAN but the protobuf field color is enum weir.test.Color: want STRING",
		"`inner` ROW<deep ROW<colors INT>>": "column 'inner': column 'deep': column 'colors' is INT but the protobuf field colors is repeated: want ARRAY",
	} {
		schema := schemaOf(t, cols)
		_, derr := protobuf.NewDecoder(schema, md, protobuf.Options{})
		_, eerr := protobuf.NewEncoder(schema, md, protobuf.Options{})
		for _, err := range []error{derr, eerr} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v, want %q", cols, err, want)
			}
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	schema := schemaOf(t, "color STRING, tags ARRAY<STRING>")
	e, err := protobuf.NewEncoder(schema, eventMessage(t), protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := types.Row{Values: []types.Value{{S: "BLUE"}, types.NullValue}}
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "column 'color': 'BLUE' is not a value of enum weir.test.Color") {
		t.Errorf("unknown enum name: %v", err)
	}
}

// TestMessageNames: Flink's message-class-name is the Java class protoc
// generates, and the protobuf full name works too.
func TestMessageNames(t *testing.T) {
	for file, names := range map[string]map[string]string{
		"weir/test/event.proto": {
			"com.weir.test.EventProtos$Event":              "weir.test.Event",
			"com.weir.test.EventProtos.Event":              "weir.test.Event",
			"weir.test.Event":                              "weir.test.Event",
			"com.weir.test.EventProtos$Event$Inner":        "weir.test.Event.Inner",
			"com.weir.test.EventProtos$Event$Inner$Deep":   "weir.test.Event.Inner.Deep",
			"weir.test.Event.Inner.Deep":                   "weir.test.Event.Inner.Deep",
			"weir.common.Point":                            "weir.common.Point", // an import's
			"weir.common.Point$Kind":                       "",                  // an enum, no message
			"com.weir.test.Event":                          "",                  // not java_multiple_files
			"com.weir.test.EventProtos$Event$Inner$Nope":   "",
			"com.weir.test.EventProtos$Event$CountsEntry":  "", // a map's entry is no class
			"weir.test.EventProtos$Event":                  "",
			"com.weir.test.EventProtos$Event$Inner$Deep$x": "",
		},
		"legacy_v2.proto": {
			"LegacyV2$Legacy":      "Legacy",
			"LegacyV2$Legacy$Item": "Legacy.Item",
			"Legacy.Item":          "Legacy.Item",
			"Legacy":               "Legacy",
		},
		"clash.proto": {
			"clash.ClashOuterClass$Clash": "clash.Clash",
			"clash.Clash$Clash":           "",
		},
	} {
		s, err := protobuf.Compile(context.Background(), file, []string{protoDir})
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range names {
			md, err := s.Message(name)
			switch {
			case want == "" && err == nil:
				t.Errorf("%s: %s found as %s", file, name, md.FullName())
			case want == "" && !strings.Contains(err.Error(), "no message '"+name+"' in "+file):
				t.Errorf("%s: %s: %v", file, name, err)
			case want != "" && err != nil:
				t.Errorf("%s: %s: %v", file, name, err)
			case want != "" && string(md.FullName()) != want:
				t.Errorf("%s: %s is %s, want %s", file, name, md.FullName(), want)
			}
		}
	}
	// java_multiple_files: the class is in the package.
	s := compileEvent(t)
	if md, err := s.Message("weir.common.Point"); err != nil || md.FullName() != "weir.common.Point" {
		t.Errorf("Point: %v", err)
	}
	if _, err := s.Message("Nope"); err == nil || !strings.Contains(err.Error(), "Java class names: ") ||
		!strings.Contains(err.Error(), "com.weir.test.EventProtos$Event") {
		t.Errorf("unknown message: %v", err)
	}
}

// TestProtoPathConfined: the .proto file and its imports are read inside
// the proto path only.
func TestProtoPathConfined(t *testing.T) {
	root := t.TempDir()
	inside := filepath.Join(root, "protos")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, text string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(root, "secret.proto"), `syntax = "proto3"; message Secret { string s = 1; }`)
	write(filepath.Join(inside, "ok.proto"), `syntax = "proto3"; message Ok { string s = 1; }`)
	write(filepath.Join(inside, "climbs.proto"), `syntax = "proto3"; import "../secret.proto"; message C { Secret s = 1; }`)
	write(filepath.Join(inside, "linked.proto"), `syntax = "proto3"; import "link.proto"; message L { Secret s = 1; }`)
	if err := os.Symlink(filepath.Join(root, "secret.proto"), filepath.Join(inside, "link.proto")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := protobuf.Compile(ctx, "ok.proto", []string{inside}); err != nil {
		t.Fatalf("ok.proto: %v", err)
	}
	for _, file := range []string{"../secret.proto", filepath.Join(root, "secret.proto"), "climbs.proto", "link.proto", "linked.proto"} {
		_, err := protobuf.Compile(ctx, file, []string{inside})
		if !errors.Is(err, protobuf.ErrOutsideProtoPath) {
			t.Errorf("%s: %v, want ErrOutsideProtoPath", file, err)
		}
	}
	if _, err := protobuf.Compile(ctx, "missing.proto", []string{inside}); err == nil || !strings.Contains(err.Error(), "missing.proto: file does not exist in the proto path") {
		t.Errorf("missing file: %v", err)
	}
}

// TestCompileErrors: a .proto that does not compile says where, as protoc.
func TestCompileErrors(t *testing.T) {
	_, err := protobuf.Compile(context.Background(), "bad/broken.proto", []string{protoDir})
	if err == nil || !strings.Contains(err.Error(), `bad/broken.proto:6:3: `) || !strings.Contains(err.Error(), `strin`) {
		t.Errorf("broken.proto: %v", err)
	}
}

// TestFactory: the format through its table options, as SQL declares it.
func TestFactory(t *testing.T) {
	schema := schemaOf(t, "id BIGINT, name STRING")
	opts := func(kv ...string) *connector.Options {
		m := map[string]string{"connector": "x", "format": "protobuf",
			"protobuf.proto-file": "weir/test/event.proto", "protobuf.proto-path": "/nonexistent;" + protoDir,
			"protobuf.message-class-name": "com.weir.test.EventProtos$Event"}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return connector.NewOptions(&connector.Table{Name: "t", Schema: schema, Options: m})
	}
	o := opts("protobuf.proto-path", protoDir, "protobuf.ignore-parse-errors", "true")
	d, _ := format.NewDecoder(o, "format", schema)
	e, _ := format.NewEncoder(o, "format", schema)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	row := types.Row{Values: []types.Value{{I: 5}, {S: "x"}}}
	b, _, err := e.Encode(nil, &row)
	if err != nil {
		t.Fatal(err)
	}
	if got := rowJSON(t, schema, decodeOne(t, d, b)); got != `{"id":5,"name":"x"}` {
		t.Errorf("round trip: %s", got)
	}
	if _, err := d.Decode([]byte{0x80}, nil); !errors.As(err, new(*format.SkipError)) {
		t.Errorf("ignore-parse-errors: %v", err)
	}
	for _, c := range []struct {
		kv   []string
		want string
	}{
		{[]string{"protobuf.message-class-name", ""}, "missing required option 'protobuf.message-class-name'"},
		{[]string{"protobuf.proto-file", ""}, "missing required option 'protobuf.proto-file'"},
		{[]string{"protobuf.proto-path", protoDir}, ""},
		{[]string{"protobuf.message-class-name", "x.Y"}, "no message 'x.Y' in weir/test/event.proto"},
		{[]string{"protobuf.proto-file", "bad/broken.proto"}, "bad/broken.proto:6:3"},
		{[]string{"protobuf.proto-file", "../protobuf.go"}, "not inside the proto path"},
		{[]string{"protobuf.read-default-values", "maybe"}, "protobuf.read-default-values"},
	} {
		o := opts(c.kv...)
		format.NewDecoder(o, "format", schema)
		err := o.Err()
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.kv, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.kv, err, c.want)
		}
	}
}

// TestReadDefaultValues: with the option, fields with presence that the
// record lacks read as their defaults (proto2's declared ones), a message
// as its default instance; without, as NULL. NOT NULL columns always read
// the default.
func TestReadDefaultValues(t *testing.T) {
	schema := schemaOf(t, "maybe INT, text STRING, `where` ROW<x INT, y INT, label STRING, kind STRING, marks ARRAY<INT>>, name STRING, number BIGINT NOT NULL")
	md := eventMessage(t)
	for _, c := range []struct {
		opt  protobuf.Options
		rec  []byte
		want string
	}{
		{protobuf.Options{}, []byte{}, `{"maybe":null,"text":null,"where":null,"name":"","number":0}`},
		{protobuf.Options{ReadDefaultValues: true}, []byte{},
			`{"maybe":0,"text":"","where":{"x":0,"y":7,"label":"origin","kind":"B","marks":[]},"name":"","number":0}`},
		{protobuf.Options{ReadDefaultValues: true}, []byte{0x52, 0x02, 0x08, 0x03}, // where { x: 3 }
			`{"maybe":0,"text":"","where":{"x":3,"y":7,"label":"origin","kind":"B","marks":[]},"name":"","number":0}`},
		{protobuf.Options{}, []byte{0x52, 0x04, 0x08, 0x03, 0x20, 0x09}, // where { x: 3 kind: 9 (unknown, closed) }
			`{"maybe":null,"text":null,"where":{"x":3,"y":null,"label":null,"kind":null,"marks":[]},"name":"","number":0}`},
	} {
		d, err := protobuf.NewDecoder(schema, md, c.opt)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowJSON(t, schema, decodeOne(t, d, c.rec)); got != c.want {
			t.Errorf("%+v %x:\n got %s\nwant %s", c.opt, c.rec, got, c.want)
		}
	}
	// A nil record (a tombstone) is no row.
	d, _ := protobuf.NewDecoder(schema, md, protobuf.Options{})
	if rows, err := d.Decode(nil, nil); err != nil || len(rows) != 0 {
		t.Errorf("nil record: %v %v", rows, err)
	}
}

// TestTimestampColumns: a google.protobuf.Timestamp reads into TIMESTAMP
// and TIMESTAMP_LTZ columns truncated to their precision, and is written
// back from them; as a ROW it is its two fields, as Flink reads it.
func TestTimestampColumns(t *testing.T) {
	md := eventMessage(t)
	// at { seconds: -2 nanos: 123456789 }: 1969-12-31 23:59:58.123456789
	rec := []byte{0x9a, 0x01, 16, 0x08, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x10, 0x95, 0x9a, 0xef, 0x3a}
	for cols, want := range map[string]string{
		"`at` TIMESTAMP_LTZ(6)":               `{"at":"1969-12-31 23:59:58.123456Z"}`,
		"`at` TIMESTAMP(3)":                   `{"at":"1969-12-31 23:59:58.123"}`,
		"`at` TIMESTAMP(0)":                   `{"at":"1969-12-31 23:59:58"}`,
		"`at` ROW<seconds BIGINT, nanos INT>": `{"at":{"seconds":-2,"nanos":123456789}}`,
	} {
		schema := schemaOf(t, cols)
		d, err := protobuf.NewDecoder(schema, md, protobuf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		row := decodeOne(t, d, rec)
		if got := rowJSON(t, schema, row); got != want {
			t.Errorf("%s: got %s, want %s", cols, got, want)
		}
		e, err := protobuf.NewEncoder(schema, md, protobuf.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, _, err := e.Encode(nil, &row)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowJSON(t, schema, decodeOne(t, d, out)); got != want {
			t.Errorf("%s: written and read back as %s, want %s", cols, got, want)
		}
	}
}

// TestConcurrentUse: one decoder and one encoder serve goroutines at once
// (run with -race), each getting what it gets alone.
func TestConcurrentUse(t *testing.T) {
	schema := schemaOf(t, modelColumns)
	md := eventMessage(t)
	d, err := protobuf.NewDecoder(schema, md, protobuf.Options{ReadDefaultValues: true})
	if err != nil {
		t.Fatal(err)
	}
	e, err := protobuf.NewEncoder(schema, md, protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs := [][]byte{
		{},
		append(protowire.AppendTag(nil, 15, protowire.BytesType), 6, 0x08, 2, 0x12, 2, 0x08, 1), // points { key: 2 value { x: 1 } }
		append(protowire.AppendTag(nil, 13, protowire.BytesType), 4, 0x08, 1, 0x10, 2),          // path { x: 1 y: 2 }
	}
	want := make([]string, len(recs))
	for i, r := range recs {
		want[i] = rowJSON(t, schema, decodeOne(t, d, r))
	}
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			for n := range 200 {
				i := (g + n) % len(recs)
				rows, err := d.Decode(recs[i], nil)
				if err != nil {
					done <- err
					return
				}
				if _, _, err := e.Encode(nil, &rows[0]); err != nil {
					done <- err
					return
				}
				if got := rowJSON(t, schema, rows[0]); got != want[i] {
					done <- errors.New("record " + string(rune('0'+i)) + ": " + got + ", want " + want[i])
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
