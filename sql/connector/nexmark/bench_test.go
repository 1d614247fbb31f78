package nexmark_test

import (
	"context"
	"testing"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// BenchmarkSource generates events and converts them to rows of the
// ddl's nested schema: events/s is printed.
func BenchmarkSource(b *testing.B) {
	src, err := connector.CreateSource(&connector.Table{Name: "nexmark", Schema: ddl, Options: map[string]string{"connector": "nexmark"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	sp, _ := src.Source.Splits(ctx)
	r, err := src.Source.Open(ctx, sp[0])
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	dst := make([]types.Row, 512)
	b.ResetTimer()
	events := 0
	for events < b.N {
		n, err := r.Read(ctx, dst)
		if err != nil {
			b.Fatal(err)
		}
		events += n
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
