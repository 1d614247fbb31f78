package broker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startBroker starts a broker on a free loopback port over dir.
func startBroker(t *testing.T, dir string) *Broker {
	t.Helper()
	b, err := Start(context.Background(), Config{DataDir: dir, Listen: "127.0.0.1:0", InitialRebalanceDelay: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func newClient(t *testing.T, b *Broker, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(b.Addr())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func createTopic(t testing.TB, cl *kgo.Client, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

// consumeAll reads topic from the start until n records arrived.
func consumeAll(t *testing.T, b *Broker, topic string, n int, opts ...kgo.Opt) []*kgo.Record {
	t.Helper()
	cl := newClient(t, b, append([]kgo.Opt{kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s before the deadline", len(out), n, topic)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s/%d: %v", topic, p, err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func TestProduceConsumeRoundTrip(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	cl := newClient(t, b)
	createTopic(t, cl, "clicks", 3, nil)
	ctx := context.Background()
	const n = 3000
	for i := range n {
		r := &kgo.Record{Topic: "clicks", Key: []byte(fmt.Sprintf("k%d", i%17)), Value: []byte(fmt.Sprintf("v%d", i)),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("x")}}}
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce: %v", err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(recs []*kgo.Record) {
		t.Helper()
		if len(recs) != n {
			t.Fatalf("got %d records, want %d", len(recs), n)
		}
		seen := map[string]bool{}
		for _, r := range recs {
			if seen[string(r.Value)] {
				t.Fatalf("record %s twice", r.Value)
			}
			seen[string(r.Value)] = true
			if len(r.Headers) != 1 || r.Headers[0].Key != "h" {
				t.Fatalf("headers %v", r.Headers)
			}
		}
	}
	check(consumeAll(t, b, "clicks", n))
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	// The data and the topic outlive the broker.
	b = startBroker(t, dir)
	defer b.Close()
	check(consumeAll(t, b, "clicks", n))
}

// TestFetchStopsAtHighWatermark: a fetch never returns a record at or
// above the high watermark it reports (a reader sees a batch once it is
// written, before it is acknowledged; a consumer given such a record
// would fetch next from above the watermark and be reset).
func TestFetchStopsAtHighWatermark(t *testing.T) {
	b := startBroker(t, t.TempDir())
	defer b.Close()
	cl := newClient(t, b)
	createTopic(t, cl, "t", 1, nil)
	ctx := context.Background()
	for i := range 10 {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	part, code := b.topics.partition("t", 0, false)
	if code != codeNone {
		t.Fatal(code)
	}
	part.hwm.Store(5) // as between a batch's write and its acknowledgement
	c := &conn{b: b, ctx: ctx, cursors: map[tp]*cursor{}}
	defer c.closeCursors()
	req := kmsg.NewFetchRequestTopicPartition()
	req.FetchOffset, req.PartitionMaxBytes = 0, 1<<20
	rp := kmsg.NewFetchResponseTopicPartition()
	if _, code := c.fetchPartition(part, &req, &rp, 1<<20, true); code != codeNone {
		t.Fatalf("fetch: error code %d", code)
	}
	if rp.HighWatermark != 5 {
		t.Fatalf("high watermark %d, want 5", rp.HighWatermark)
	}
	// Each ProduceSync made a batch, which the log keeps and the fetch
	// sends as it is.
	n, last := 0, int64(-1)
	for b := rp.RecordBatches; len(b) > 0; {
		var batch kmsg.RecordBatch
		if err := batch.ReadFrom(b); err != nil {
			t.Fatal(err)
		}
		n += int(batch.NumRecords)
		last = batch.FirstOffset + int64(batch.LastOffsetDelta)
		b = b[12+int(batch.Length):]
	}
	if last >= 5 || n != 5 {
		t.Fatalf("fetched %d records up to offset %d with the high watermark at 5", n, last)
	}
}
