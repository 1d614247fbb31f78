package adclicks

import (
	"context"
	"testing"
)

// go test -bench . -benchtime 3x ./internal/adclicks/
func BenchmarkWeirP2(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := RunWeir(context.Background(), BenchConfig{N: DefaultN, DelayMs: DelayMs, Parallelism: 2}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(DefaultN)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

func BenchmarkBaseline(b *testing.B) {
	for i := 0; i < b.N; i++ {
		RunBaseline(DefaultN, DelayMs)
	}
	b.ReportMetric(float64(DefaultN)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
