package nexmark

import (
	"context"
	"syscall"
	"testing"
	"time"
)

// BenchmarkPacedReader reads split 0 of 2 of a source paced at 3.3 M
// events/s (Nexmark q8's latency run on the idle 2-core machine) for
// 300 ms of wall time per op, in batches of 1,024, and reports the reads
// per 1,000 events and the process's CPU per event (generator and pacing:
// nothing else runs).
func BenchmarkPacedReader(b *testing.B) {
	const rate = 3.3e6
	var reads, events int64
	var cpu time.Duration
	dst := make([]Event, 1024)
	for i := 0; i < b.N; i++ {
		src := Source(GeneratorConfig{Events: -1, Seed: 1, EventRate: rate, RateLimit: rate, Splits: 2})
		r, err := src.Open(context.Background(), genSplit(0))
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuNow()
		end := time.Now().Add(300 * time.Millisecond)
		for time.Now().Before(end) {
			k, err := r.Read(context.Background(), dst)
			if err != nil {
				b.Fatal(err)
			}
			reads++
			events += int64(k)
		}
		cpu += cpuNow() - c0
		r.Close()
	}
	b.ReportMetric(float64(reads)*1000/float64(events), "reads/1000events")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(events), "cpu-ns/event")
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
