package protobuf_test

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/weirstream/weir/sql/format/protobuf"
)

// modelColumns read every field of weir.test.Event in a form that keeps
// all of it: enums as numbers, the Timestamp as its ROW, Point's label
// aside (a proto2 string: Java, and weir, read invalid UTF-8 as U+FFFD).
const modelColumns = "id BIGINT, name STRING, delta INT, `count` INT, score DOUBLE, ratio FLOAT, ok BOOLEAN, payload BYTES, " +
	"color INT, `where` ROW<x INT, y INT, label STRING, kind INT, marks ARRAY<INT>>, ids ARRAY<INT>, tags ARRAY<STRING>, " +
	"path ARRAY<ROW<x INT, y INT, label STRING, kind INT, marks ARRAY<INT>>>, counts MAP<STRING, BIGINT>, " +
	"points MAP<INT, ROW<x INT, y INT, label STRING, kind INT, marks ARRAY<INT>>>, text STRING, number BIGINT, maybe INT, " +
	"`at` ROW<seconds BIGINT, nanos INT>, f64 BIGINT, sf32 INT, `inner` ROW<note STRING, level INT, deep ROW<colors ARRAY<INT>>>, " +
	"s64 BIGINT, u64 BIGINT, far INT"

// FuzzDecodeAgreesWithGoProtobuf checks weir's decoder and encoder against
// Go's protobuf runtime (dynamicpb), the naive model: a record Go parses
// weir parses too (or refuses a known field with a wrong wire type, which
// Go keeps as unknown), and what weir writes back from the row Go parses
// as the same message (compared in Go's deterministic encoding).
func FuzzDecodeAgreesWithGoProtobuf(f *testing.F) {
	md := eventMessage(f)
	schema := schemaOf(f, modelColumns)
	dec, err := protobuf.NewDecoder(schema, md, protobuf.Options{})
	if err != nil {
		f.Fatal(err)
	}
	enc, err := protobuf.NewEncoder(schema, md, protobuf.Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range eventCases {
		m := dynamicpb.NewMessage(md)
		if err := prototext.Unmarshal([]byte(c.text), m); err != nil {
			f.Fatalf("%s: %v", c.name, err)
		}
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(append(b, b...)) // merged: repeated fields twice, messages merged
	}
	tag := protowire.AppendTag
	f.Add([]byte{})
	f.Add(protowire.AppendVarint(tag(nil, 100000, protowire.VarintType), 5))                        // far
	f.Add(append(tag(nil, 11, protowire.VarintType), 1))                                            // ids unpacked
	f.Add(append(tag(nil, 9, protowire.VarintType), 77))                                            // an unknown Color number
	f.Add(append(tag(nil, 10, protowire.BytesType), 4, 0x08, 1, 0x20, 9))                           // Point.kind unknown (closed)
	f.Add(append(tag(nil, 10, protowire.BytesType), 5, 0x08, 1, 0x2a, 1, 0x80))                     // truncated packed
	f.Add(append(tag(nil, 14, protowire.BytesType), 6, 0x0a, 1, 'k', 0x10, 1, 0))                   // map entry
	f.Add(append(tag(nil, 3, protowire.StartGroupType), 0x0c))                                      // a group for a varint
	f.Add(tag(append(tag(nil, 60, protowire.StartGroupType), 0x08, 1), 60, protowire.EndGroupType)) // an unknown group
	f.Add(append(tag(nil, 15, protowire.BytesType), 6, 0x08, 2, 0x12, 2, 0x10, 1))                  // points, value without x
	f.Add(append(tag(nil, 2, protowire.BytesType), 2, 0xc3, 0x28))                                  // invalid UTF-8
	f.Add(append(tag(nil, 17, protowire.VarintType), append([]byte{5}, tag(nil, 16, protowire.BytesType)...)...))
	det := proto.MarshalOptions{Deterministic: true}
	f.Fuzz(func(t *testing.T, b []byte) {
		orig := dynamicpb.NewMessage(md)
		gerr, panicked := goUnmarshal(b, orig)
		rows, werr := dec.Decode(b, nil)
		if panicked {
			return // Go's protobuf fails on its own (a map entry's key of the wrong wire type)
		}
		if gerr != nil {
			if werr == nil {
				t.Fatalf("Go refuses %x (%v), weir reads it", b, gerr)
			}
			return
		}
		if werr != nil {
			if !strings.Contains(werr.Error(), "wire type") {
				t.Fatalf("weir refuses %x that Go reads: %v", b, werr)
			}
			return
		}
		out, _, err := enc.Encode(nil, &rows[0])
		if err != nil {
			t.Fatalf("encoding the row of %x: %v", b, err)
		}
		back := dynamicpb.NewMessage(md)
		if err := proto.Unmarshal(out, back); err != nil {
			t.Fatalf("Go refuses what weir wrote for %x: %v (%x)", b, err, out)
		}
		want, err := det.Marshal(orig)
		if err != nil {
			t.Fatal(err)
		}
		got, err := det.Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) && !goDeviates(orig) {
			t.Fatalf("record %x\nGo reads:\n%v\nweir wrote back:\n%v", b, prototext.Format(orig), prototext.Format(back))
		}
	})
}

// goDeviates reports whether m holds what Go's protobuf reads otherwise
// than Java and C++ (and weir): a proto2 string that is not UTF-8 (Java
// reads U+FFFD in its place) or a closed (proto2) enum's unknown number (Go
// keeps it in the field, where the others keep it as an unknown field:
// Go's documented divergence, its enums are all open).
func goDeviates(m protoreflect.Message) bool {
	bad := false
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		m.Range(func(f protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case f.IsMap():
				v.Map().Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
					if f.MapValue().Message() != nil {
						walk(v.Message())
					}
					return true
				})
			case f.IsList():
				for i := 0; i < v.List().Len(); i++ {
					switch {
					case f.Message() != nil:
						walk(v.List().Get(i).Message())
					case f.Enum() != nil && f.Enum().IsClosed():
						bad = bad || f.Enum().Values().ByNumber(v.List().Get(i).Enum()) == nil
					}
				}
			case f.Enum() != nil && f.Enum().IsClosed():
				bad = bad || f.Enum().Values().ByNumber(v.Enum()) == nil
			case f.Message() != nil:
				walk(v.Message())
			case f.Kind() == protoreflect.StringKind && f.Syntax() == protoreflect.Proto2:
				bad = bad || !utf8.ValidString(v.String())
			}
			return !bad
		})
	}
	walk(m)
	return bad
}

// goUnmarshal is Go's proto.Unmarshal, recovering from its panics: some
// malformed map entries panic in dynamicpb (google.golang.org/protobuf
// v1.36.12).
func goUnmarshal(b []byte, m proto.Message) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			panicked = true
		}
	}()
	return proto.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, m), false
}
