package kafka_test

import (
	"bytes"
	"log/slog"
	"sync"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestGroupRepartitionInProcess runs a bounded group-mode job with a KeyBy
// and an event-time tumbling count inside the test (one member): the
// KeyBy goes through the repartition topic "<app id>-<uid>-repartition",
// created with the input's number of partitions, and the counts (which
// need the watermark to cross the topic: they fire on it) equal the model's.
func TestGroupRepartitionInProcess(t *testing.T) {
	_, addrs := newCluster(t, kfake.SeedTopics(4, "in"), kfake.SeedTopics(2, "out"))
	evs := events(3000, 10)
	produce(t, addrs, "in", 4, evs)
	var logs syncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("job log:\n%s", logs.String())
		}
	}()
	job := weir.NewJob("group-repartition", weir.AppID("rp"), weir.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))), weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""))
	src := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent, kafka.Bounded(), kafka.ReadCommitted(),
		kafka.ClientOptions(kgo.SessionTimeout(6*time.Second))),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e event) string { return e.Key }), weir.Tumbling(time.Second)),
		weir.Count[event](), weir.UID("count"))
	weir.To(counts, kafka.Sink(addrs, func(r weir.WindowResult[string, int64], rec *kgo.Record) error {
		rec.Value = fmt.Appendf(rec.Value, "%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
		return nil
	}, kafka.DefaultTopic("out")))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	sameOutput(t, "windowed counts through the repartition topic", committedValues(t, addrs, "out"), windowCounts(evs))
	checkRepartitionTopic(t, addrs, "rp-count-repartition", 4)
}

// checkRepartitionTopic checks that topic exists with n partitions, and
// has records (the exchange went through it).
func checkRepartitionTopic(t *testing.T, addrs []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := d[topic]; !ok || td.Err != nil || len(td.Partitions) != n {
		var names []string
		all, _ := adm.ListTopics(ctx)
		for name := range all {
			names = append(names, name)
		}
		slices.Sort(names)
		t.Fatalf("repartition topic %q: %+v, want %d partitions (topics: %s)", topic, d[topic], n, strings.Join(names, " "))
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset == 0 {
			t.Errorf("repartition topic %q partition %d is empty", topic, o.Partition)
		}
	})
}

// syncBuffer is a buffer the job's logger writes to from many goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
