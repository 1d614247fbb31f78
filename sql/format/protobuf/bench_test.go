package protobuf_test

import (
	"testing"

	"github.com/weirstream/weir/internal/testing/schemaregistry"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/protobuf"
	"github.com/weirstream/weir/sql/types"
)

// benchColumns are the ten fields of weir.test.Bench.
const benchColumns = "id BIGINT, name STRING, `count` INT, price DOUBLE, active BOOLEAN, ts BIGINT, category STRING, ratio FLOAT, color STRING, tag BYTES"

func benchRow() types.Row {
	return types.Row{Kind: types.Insert, Values: []types.Value{
		{I: 1234567}, {S: "weir stream processor"}, {I: 42}, types.FloatValue(19.99), types.BoolValue(true),
		{I: 1733500000000}, {S: "books"}, types.FloatValue(0.5), {S: "GREEN"}, {S: "\x01\x02\x03\x04"},
	}}
}

func benchCodecs(b *testing.B) (*protobuf.Decoder, *protobuf.Encoder) {
	s := compileEvent(b)
	md, err := s.Message("com.weir.test.EventProtos$Bench")
	if err != nil {
		b.Fatal(err)
	}
	schema := schemaOf(b, benchColumns)
	d, err := protobuf.NewDecoder(schema, md, protobuf.Options{})
	if err != nil {
		b.Fatal(err)
	}
	e, err := protobuf.NewEncoder(schema, md, protobuf.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return d, e
}

// BenchmarkDecode decodes a 10-field message into a row (records/s per
// core with -cpu 1).
func BenchmarkDecode(b *testing.B) {
	d, e := benchCodecs(b)
	row := benchRow()
	rec, _, err := e.Encode(nil, &row)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	var rows []types.Row
	for b.Loop() {
		if rows, err = d.Decode(rec, rows[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkEncode encodes a 10-field row into a message.
func BenchmarkEncode(b *testing.B) {
	_, e := benchCodecs(b)
	row := benchRow()
	var buf []byte
	var err error
	for b.Loop() {
		if buf, _, err = e.Encode(buf[:0], &row); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkDecodeConfluent decodes the message framed in Confluent's
// wire format, its writer schema from the registry (fetched once).
func BenchmarkDecodeConfluent(b *testing.B) {
	srv, err := schemaregistry.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	schema := schemaOf(b, benchColumns)
	o := confluentOptions(schema, srv.URL, "protobuf-confluent.message-class-name", "weir.test.Bench")
	e, _ := format.NewEncoder(o, "format", schema)
	o = confluentOptions(schema, srv.URL, "protobuf-confluent.message-class-name", "", "protobuf-confluent.proto-file", "")
	d, _ := format.NewDecoder(o, "format", schema)
	if err := o.Err(); err != nil {
		b.Fatal(err)
	}
	row := benchRow()
	rec, _, err := e.Encode(nil, &row)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	var rows []types.Row
	for b.Loop() {
		if rows, err = d.Decode(rec, rows[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}
