package protobuf_test

// Checks against Google's protoc (Debian's protobuf-compiler), an
// implementation nobody here wrote: the descriptors weir compiles at run
// time equal protoc's, weir decodes what protoc encodes from text format,
// and protoc decodes what weir encodes to the same text.
//
// protoc is installed by scripts/protoc.sh (WEIR_PROTOC names another
// binary). Without it the tests skip, unless WEIR_REQUIRE_PROTOC=1
// (scripts/test.sh) makes that a failure.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/types/descriptorpb"

	"github.com/weirstream/weir/sql/format/protobuf"
)

const protoDir = "testdata/proto"

// protocPath returns protoc's path, or skips (fails, with
// WEIR_REQUIRE_PROTOC=1) the test when there is none.
func protocPath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("WEIR_PROTOC")
	if path != "" {
		if _, err := exec.LookPath(path); err != nil {
			t.Fatalf("WEIR_PROTOC=%s: %v", path, err)
		}
		return path
	}
	if p, err := exec.LookPath("protoc"); err == nil {
		return p
	}
	if os.Getenv("WEIR_REQUIRE_PROTOC") == "1" {
		t.Fatal("no protoc found and WEIR_REQUIRE_PROTOC=1: run bash scripts/protoc.sh install")
	}
	t.Skip("no protoc found (bash scripts/protoc.sh install; WEIR_REQUIRE_PROTOC=1 makes this a failure)")
	return ""
}

// protoc runs protoc in the test protos' directory with stdin and
// returns its standard output.
func protoc(t testing.TB, stdin []byte, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, protocPath(t), append([]string{"-I."}, args...)...)
	cmd.Dir = protoDir
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("protoc %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.Bytes()
}

func protocEncode(t testing.TB, message, text string) []byte {
	t.Helper()
	return protoc(t, []byte(text), "--encode="+message, "weir/test/event.proto")
}

func protocDecode(t testing.TB, message string, bin []byte) string {
	t.Helper()
	return string(protoc(t, bin, "--decode="+message, "weir/test/event.proto"))
}

// TestCompileAgreesWithProtoc: the FileDescriptorProtos weir compiles at
// run time, the imports and the well-known Timestamp included, are those
// of protoc's descriptor set (source info left out: protoc writes none
// without --include_source_info).
func TestCompileAgreesWithProtoc(t *testing.T) {
	for _, file := range []string{"weir/test/event.proto", "legacy_v2.proto", "clash.proto"} {
		t.Run(file, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "set.pb")
			protoc(t, nil, "--include_imports", "--descriptor_set_out="+out, file)
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			var want descriptorpb.FileDescriptorSet
			if err := proto.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			s, err := protobuf.Compile(context.Background(), file, []string{protoDir})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]*descriptorpb.FileDescriptorProto{}
			for _, fd := range s.Files {
				p := protodesc.ToFileDescriptorProto(fd)
				p.SourceCodeInfo = nil
				got[p.GetName()] = p
			}
			if len(got) != len(want.File) {
				t.Errorf("weir compiled %d files, protoc %d", len(got), len(want.File))
			}
			for _, w := range want.File {
				w.SourceCodeInfo = nil
				g := got[w.GetName()]
				if g == nil {
					t.Errorf("weir did not compile %s", w.GetName())
					continue
				}
				if !proto.Equal(g, w) {
					t.Errorf("%s: weir's descriptor differs from protoc's\nweir:\n%s\nprotoc:\n%s", w.GetName(),
						prototext.Format(g), prototext.Format(w))
				}
			}
		})
	}
}

// TestDecodeWhatProtocEncodes: protoc encodes text-format messages; weir
// decodes them to the expected rows (shown as JSON); weir encodes those
// rows, and protoc decodes weir's bytes to the text it decodes its own to.
func TestDecodeWhatProtocEncodes(t *testing.T) {
	schema := eventSchema(t)
	md := eventMessage(t)
	dec, err := protobuf.NewDecoder(schema, md, protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := protobuf.NewEncoder(schema, md, protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range eventCases {
		t.Run(c.name, func(t *testing.T) {
			bin := protocEncode(t, "weir.test.Event", c.text)
			row := decodeOne(t, dec, bin)
			if got := rowJSON(t, schema, row); got != c.json {
				t.Errorf("decoded\n got %s\nwant %s", got, c.json)
			}
			out, _, err := enc.Encode(nil, &row)
			if err != nil {
				t.Fatal(err)
			}
			want := protocDecode(t, "weir.test.Event", bin)
			if got := protocDecode(t, "weir.test.Event", out); got != want {
				t.Errorf("protoc decodes what weir wrote as\n%s\nwant (what protoc decodes its own bytes to)\n%s", got, want)
			}
			if c.sameBytes && !bytes.Equal(out, bin) {
				t.Errorf("weir wrote\n%x\nprotoc\n%x", out, bin)
			}
		})
	}
}

// TestProtocDecodesNullElements: NULL has no place in a repeated field or
// a map; weir writes the default (the string literal option for strings)
// as Flink does, and leaves out NULL fields.
func TestProtocDecodesNullElements(t *testing.T) {
	schema := schemaOf(t, "id BIGINT, name STRING, tags ARRAY<STRING>, ids ARRAY<INT>, counts MAP<STRING, BIGINT>, path ARRAY<ROW<x INT, y INT>>, maybe INT, color STRING")
	enc, err := protobuf.NewEncoder(schema, eventMessage(t), protobuf.Options{WriteNullStringLiteral: "<null>"})
	if err != nil {
		t.Fatal(err)
	}
	row := rowFromJSON(t, schema, `{"id": 1, "name": null, "tags": ["a", null], "ids": [null, 3], "counts": {"k": null},
		"path": [null, {"x": 2, "y": null}], "maybe": null, "color": "RED"}`)
	out, _, err := enc.Encode(nil, &row)
	if err != nil {
		t.Fatal(err)
	}
	got := protocDecode(t, "weir.test.Event", out)
	want := protocDecode(t, "weir.test.Event", protocEncode(t, "weir.test.Event",
		`id: 1 color: RED ids: [0, 3] tags: "a" tags: "<null>" path {} path { x: 2 } counts { key: "k" value: 0 }`))
	if got != want {
		t.Errorf("protoc decodes\n%s\nwant\n%s", got, want)
	}
}

// TestOneofAndMergeAsProtoc: records that are concatenations (a field
// again, the other member of a oneof) read as protoc merges them.
func TestOneofAndMergeAsProtoc(t *testing.T) {
	schema := schemaOf(t, "text STRING, number BIGINT, `where` ROW<x INT, y INT, marks ARRAY<INT>>, ids ARRAY<INT>, name STRING")
	dec, err := protobuf.NewDecoder(schema, eventMessage(t), protobuf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := func(texts ...string) []byte {
		var b []byte
		for _, s := range texts {
			b = append(b, protocEncode(t, "weir.test.Event", s)...)
		}
		return b
	}
	for _, c := range []struct {
		parts []string
		json  string
	}{
		{[]string{`text: "a"`, `number: 5`}, `{"text":null,"number":5,"where":null,"ids":[],"name":""}`},
		{[]string{`number: 5`, `text: "a"`}, `{"text":"a","number":null,"where":null,"ids":[],"name":""}`},
		{[]string{`where { x: 1 marks: 1 } ids: 1 name: "a"`, `where { y: 3 marks: [2, 3] } ids: [2] name: "b"`},
			`{"text":null,"number":null,"where":{"x":1,"y":3,"marks":[1,2,3]},"ids":[1,2],"name":"b"}`},
	} {
		bin := cat(c.parts...)
		if got := rowJSON(t, schema, decodeOne(t, dec, bin)); got != c.json {
			t.Errorf("%q: got %s, want %s", c.parts, got, c.json)
		}
	}
}
