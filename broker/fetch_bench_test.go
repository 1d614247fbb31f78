package broker

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkConsume reads, with a franz-go consumer in this process, a
// topic of 8 partitions that a franz-go producer filled with 200,000
// records of 1 KiB (random bytes) through the broker, as `weir bench
// broker` does: the broker's fetch path and the client's decoding.
func BenchmarkConsume(b *testing.B) {
	const records, size, parts = 200_000, 1024, 8
	br, err := Start(context.Background(), Config{DataDir: b.TempDir(), Listen: "127.0.0.1:0", InitialRebalanceDelay: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	pcl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()))
	if err != nil {
		b.Fatal(err)
	}
	createTopic(b, pcl, "bench", parts, nil)
	rng := rand.New(rand.NewPCG(1, 2))
	values := make([][]byte, 4096)
	for i := range values {
		values[i] = make([]byte, size)
		for j := range values[i] {
			values[i][j] = byte(rng.Uint32())
		}
	}
	ctx := context.Background()
	for i := range records {
		pcl.Produce(ctx, &kgo.Record{Topic: "bench", Value: values[i%len(values)]}, func(_ *kgo.Record, err error) {
			if err != nil {
				b.Error(err)
			}
		})
	}
	if err := pcl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	pcl.Close()
	b.ResetTimer()
	cpu0 := processCPU()
	n := 0
	for b.Loop() {
		cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.ConsumeTopics("bench"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for got < records {
			fs := cl.PollFetches(ctx)
			fs.EachError(func(t string, p int32, err error) { b.Fatalf("fetch %s/%d: %v", t, p, err) })
			got += fs.NumRecords()
		}
		cl.Close()
		n += got
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric((processCPU()-cpu0)/float64(n)*1e6, "cpu-us/record")
	b.ReportMetric(0, "ns/op")
}

// processCPU is the process's user and system CPU seconds so far (broker
// and client alike).
func processCPU() float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}
