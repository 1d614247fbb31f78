package avro_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

// benchRows is how many rows one op of the object-container benchmarks
// writes or reads: a file of several blocks.
const benchRows = 100_000

var ocfCodecs = []string{avro.CodecNull, avro.CodecDeflate, avro.CodecSnappy, avro.CodecZstandard}

// go test -run - -bench OCF -benchmem -cpu 1 ./sql/format/avro
//
// One op writes (reads) a file of 100,000 10-field records (benchRecord);
// records/s and MB/s (of the file) are per core.
func BenchmarkOCFWrite(b *testing.B) {
	schema, row := benchRecord()
	for _, codec := range ocfCodecs {
		b.Run(codec, func(b *testing.B) {
			s, err := avro.FileSchema(schema, avro.FileOptions{Mapping: avro.Mapping{Legacy: true}})
			if err != nil {
				b.Fatal(err)
			}
			enc, err := avro.NewRowEncoder(s, schema)
			if err != nil {
				b.Fatal(err)
			}
			var buf bytes.Buffer
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				buf.Reset()
				w, err := avro.NewOCFWriter(&buf, enc, codec)
				if err != nil {
					b.Fatal(err)
				}
				for i := range benchRows {
					row.Values[0].I = int64(i)
					if err := w.Write(row.Values); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.SetBytes(int64(buf.Len()))
			b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "records/s")
		})
	}
}

func BenchmarkOCFRead(b *testing.B) {
	schema, row := benchRecord()
	for _, codec := range ocfCodecs {
		b.Run(codec, func(b *testing.B) {
			rows := make([]types.Row, benchRows)
			for i := range rows {
				rows[i] = types.Row{Values: append([]types.Value(nil), row.Values...)}
				rows[i].Values[0].I = int64(i)
			}
			data := ocfFile(b, schema, codec, 0, rows)
			decs := decoders(b, schema)
			dst := make([]types.Row, 256)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				r, err := decs.Open(bytes.NewReader(data))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					k, err := r.Read(dst)
					n += k
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				if n != benchRows {
					b.Fatalf("read %d rows", n)
				}
			}
			b.ReportMetric(float64(b.N)*benchRows/b.Elapsed().Seconds(), "records/s")
		})
	}
}
