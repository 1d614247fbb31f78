package parquet

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// benchSchema is a 10-column row: the target is Parquet writes of
// at least 100 MB/s per core for such a row.
var benchSchema = types.Schema{
	{Name: "id", Type: types.BigIntType},
	{Name: "user_id", Type: types.BigIntType},
	{Name: "qty", Type: types.Type{Kind: types.Int}},
	{Name: "price", Type: types.DecimalType(10, 2)},
	{Name: "score", Type: types.Type{Kind: types.Double}},
	{Name: "ok", Type: types.Type{Kind: types.Boolean}},
	{Name: "day", Type: types.Type{Kind: types.Date}},
	{Name: "ts", Type: types.Type{Kind: types.Timestamp, Precision: 3}},
	{Name: "name", Type: types.StringType},
	{Name: "url", Type: types.StringType},
}

func benchRows(n int) []types.Row {
	rows := make([]types.Row, n)
	for i := range rows {
		rows[i] = types.Row{Values: []types.Value{
			types.IntValue(int64(i)), types.IntValue(int64(i % 10007)), types.IntValue(int64(i % 100)),
			types.IntValue(int64(i * 13 % 1000000)), types.FloatValue(float64(i) / 7), types.BoolValue(i%3 == 0),
			types.IntValue(int64(20000 + i%365)), types.IntValue(1_700_000_000_000_000 + int64(i)*1000),
			types.StringValue(fmt.Sprintf("user-%06d", i%50000)), types.StringValue(fmt.Sprintf("https://example.com/items/%d?ref=%d", i, i%97)),
		}}
	}
	return rows
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWrite writes 100,000 rows of 10 columns per op: MB/s is of the
// Parquet bytes written (uncompressed and with SNAPPY), rows/s printed.
func BenchmarkWrite(b *testing.B) {
	rows := benchRows(100_000)
	for _, codec := range []string{"UNCOMPRESSED", "SNAPPY"} {
		b.Run(codec, func(b *testing.B) {
			opts := DefaultOptions()
			opts.Compression = codec
			opts.setCodec()
			cols := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
			var size int64
			b.ReportAllocs()
			for range b.N {
				cw := &countWriter{}
				w, err := NewWriter(cw, benchSchema, cols, opts)
				if err != nil {
					b.Fatal(err)
				}
				for _, r := range rows {
					if err := w.Write(r); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Finish(); err != nil {
					b.Fatal(err)
				}
				size = cw.n
			}
			b.SetBytes(size)
			b.ReportMetric(float64(len(rows)*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkRead reads a file of 100,000 such rows: every column, and two
// of them (the others are not decoded); rows/s is printed.
func BenchmarkRead(b *testing.B) {
	rows := benchRows(100_000)
	var buf bytes.Buffer
	w, err := NewWriter(&buf, benchSchema, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, r := range rows {
		w.Write(r)
	}
	if err := w.Finish(); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "bench.parquet")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name    string
		targets []Target
	}{
		{"all", targets(10)},
		{"id,url", []Target{{Col: 0, Field: -1}, {Col: 9, Field: -1}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]types.Row, 512)
			n := 0
			b.ReportAllocs()
			for range b.N {
				r, err := OpenFile(path, nil, benchSchema, c.targets, nil)
				if err != nil {
					b.Fatal(err)
				}
				for {
					k, err := r.Read(context.Background(), dst)
					n += k
					if err == io.EOF {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				r.Close()
			}
			if n != len(rows)*b.N {
				b.Fatalf("%d rows read, want %d", n, len(rows)*b.N)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
