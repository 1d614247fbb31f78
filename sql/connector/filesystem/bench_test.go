package filesystem_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// BenchmarkJSONSource reads a file of JSON lines through the source's
// reader (the format's decoder and the line reader): rows/s is printed.
func BenchmarkJSONSource(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bids.jsonl")
	var sb strings.Builder
	const lines = 100_000
	for i := range lines {
		fmt.Fprintf(&sb, `{"id": %d, "name": "bidder-%d", "ts": "2020-04-15 08:05:%02d.%03d"}`+"\n", i, i%1000, i%60, i%1000)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	src, err := connector.CreateSource(table("bids", map[string]string{"connector": "filesystem", "path": path, "format": "json"}))
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	sp, _ := src.Source.Splits(ctx)
	dst := make([]types.Row, 512)
	b.SetBytes(int64(sb.Len()))
	b.ResetTimer()
	rows := 0
	for range b.N {
		r, err := src.Source.Open(ctx, sp[0])
		if err != nil {
			b.Fatal(err)
		}
		for {
			n, err := r.Read(ctx, dst)
			rows += n
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
	b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "rows/s")
}
