package avro_test

import (
	"testing"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// A 10-field record, the benchmark shape: ids, strings, numbers,
// a flag and a timestamp, most of them nullable (the derived schema's
// unions).
func benchRecord() (types.Schema, types.Row) {
	schema := types.Schema{
		{Name: "id", Type: types.Type{Kind: types.BigInt, NotNull: true}},
		{Name: "user_id", Type: types.BigIntType},
		{Name: "name", Type: types.StringType},
		{Name: "email", Type: types.StringType},
		{Name: "price", Type: types.DoubleType},
		{Name: "qty", Type: types.IntType},
		{Name: "active", Type: types.BooleanType},
		{Name: "ts", Type: types.Timestamp3},
		{Name: "category", Type: types.StringType},
		{Name: "score", Type: types.Type{Kind: types.Float}},
	}
	row := types.Row{Values: []types.Value{
		{I: 123456789}, {I: 42}, {S: "Alice Example"}, {S: "alice@example.com"}, types.FloatValue(19.99),
		{I: 3}, types.BoolValue(true), {I: 1_700_000_000_123_000}, {S: "books"}, types.FloatValue(4.5),
	}}
	return schema, row
}

func perSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// go test -run - -bench . -benchmem -cpu 1 ./sql/format/avro
func BenchmarkDecode(b *testing.B) {
	schema, row := benchRecord()
	o := map[string]string{"format": "avro"}
	d, e := compileB(b, schema, o)
	rec, _, err := e.Encode(nil, &row)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(rec)))
	b.ReportAllocs()
	dst := make([]types.Row, 0, 1)
	b.ResetTimer()
	for range b.N {
		dst, err = d.Decode(rec, dst[:0])
		if err != nil {
			b.Fatal(err)
		}
	}
	perSecond(b)
}

func BenchmarkEncode(b *testing.B) {
	schema, row := benchRecord()
	_, e := compileB(b, schema, map[string]string{"format": "avro"})
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var err error
		buf, _, err = e.Encode(buf[:0], &row)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
	perSecond(b)
}

// The Confluent wire format adds a header and a cache lookup by id.
func BenchmarkConfluentDecode(b *testing.B) {
	reg := registry(b)
	schema, row := benchRecord()
	d, e := compileB(b, schema, map[string]string{"connector": "kafka", "topic": "bench", "format": "avro-confluent", "avro-confluent.url": reg.URL})
	rec, _, err := e.Encode(nil, &row)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	dst := make([]types.Row, 0, 1)
	b.ResetTimer()
	for range b.N {
		if dst, err = d.Decode(rec, dst[:0]); err != nil {
			b.Fatal(err)
		}
	}
	perSecond(b)
}

func BenchmarkConfluentEncode(b *testing.B) {
	reg := registry(b)
	schema, row := benchRecord()
	_, e := compileB(b, schema, map[string]string{"connector": "kafka", "topic": "bench", "format": "avro-confluent", "avro-confluent.url": reg.URL})
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var err error
		if buf, _, err = e.Encode(buf[:0], &row); err != nil {
			b.Fatal(err)
		}
	}
	perSecond(b)
}

func compileB(b *testing.B, schema types.Schema, opts map[string]string) (format.Decoder, format.Encoder) {
	b.Helper()
	return compileTB(b, schema, opts)
}
