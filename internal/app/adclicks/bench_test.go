package adclicks

import (
	"context"
	"testing"
	"time"
)

// go test -run XXX -bench . -benchtime 3x ./internal/app/adclicks/
//
// Besides events/s (wall clock), each benchmark reports the process's CPU
// time per event (user + system, all goroutines), the figure that holds on
// a shared machine where wall-clock rates follow the load.
func BenchmarkWeirP2(b *testing.B) { benchWeir(b, 1) }

// BenchmarkWeirP2TwoSplits reads the generator as two splits (SplitSource),
// so two goroutines generate and partition.
func BenchmarkWeirP2TwoSplits(b *testing.B) { benchWeir(b, 2) }

func benchWeir(b *testing.B, splits int) {
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := RunWeir(context.Background(), BenchConfig{N: DefaultN, DelayMs: DelayMs, Parallelism: 2, Splits: splits}); err != nil {
			b.Fatal(err)
		}
	}
	report(b, cpuTime()-cpu0)
}

func BenchmarkBaseline(b *testing.B) {
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		RunBaseline(DefaultN, DelayMs)
	}
	report(b, cpuTime()-cpu0)
}

func report(b *testing.B, cpu time.Duration) {
	events := float64(DefaultN) * float64(b.N)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/events, "cpu-ns/event")
}
