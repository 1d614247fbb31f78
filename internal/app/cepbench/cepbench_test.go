package cepbench

import (
	"context"
	"testing"
)

func TestRunSmall(t *testing.T) {
	c := Default()
	c.Events, c.Keys, c.Patterns = 200_000, 1000, 2
	r, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Matches == 0 {
		t.Fatal("no matches")
	}
}

// BenchmarkDetect: go test -bench Detect -cpuprofile cpu.out ./internal/app/cepbench
func BenchmarkDetect(b *testing.B) {
	c := Default()
	c.Events = 1_000_000
	for i := 0; i < b.N; i++ {
		if _, err := Run(context.Background(), c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(c.Events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
