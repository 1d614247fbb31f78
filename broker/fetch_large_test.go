package broker

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Consumers that ask for more per partition than the whole answer may
// hold (8 partitions of 8 MiB against franz-go's 50 MiB fetch maximum),
// so that partitions get what is left of the answer and read ahead by
// that much, get every record of every partition in order, none skipped:
// a regression test of a fetch that dropped the batches read ahead when
// its partition limit outgrew their buffer (the consumer then jumped
// over them).
func TestFetchLargePartitionLimits(t *testing.T) {
	b := startBroker(t, t.TempDir())
	defer b.Close()
	cl := newClient(t, b, kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	createTopic(t, cl, "big", 8, nil)
	ctx := context.Background()
	const parts, per = 8, 9000 // about 9 MiB a partition
	value := bytes.Repeat([]byte("v"), 1000)
	for i := range parts * per {
		cl.Produce(ctx, &kgo.Record{Topic: "big", Partition: int32(i % parts), Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, pb := range []int32{1 << 20, 8 << 20, 64 << 20} {
		cons := newClient(t, b, kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxPartitionBytes(pb))
		pctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		next := make([]int64, parts)
		got := 0
		for got < parts*per {
			fs := cons.PollFetches(pctx)
			if pctx.Err() != nil {
				t.Fatalf("partition limit %d: %d of %d records before the deadline", pb, got, parts*per)
			}
			fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
			for _, r := range fs.Records() {
				if r.Offset != next[r.Partition] {
					t.Fatalf("partition limit %d: partition %d: offset %d after %d (skipped or repeated)", pb, r.Partition, r.Offset, next[r.Partition]-1)
				}
				next[r.Partition]++
				got++
			}
		}
		cancel()
		cons.Close()
	}
}
