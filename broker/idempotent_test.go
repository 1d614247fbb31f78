package broker

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	wlog "github.com/weirstream/weir/connector/log"
)

// idempotentBatch is a produce batch of n records of producer pid/epoch
// from sequence seq.
func idempotentBatch(pid int64, epoch int16, seq int32, n int) []byte {
	recs := make([]wlog.Record, n)
	for i := range recs {
		recs[i] = wlog.Record{Timestamp: 1000 + int64(i), Value: []byte{byte('a' + i)}}
	}
	raw := kbTestKmsgRecords(recs, 1000)
	rb := kmsg.RecordBatch{PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000,
		MaxTimestamp: 1000 + int64(n-1), ProducerID: pid, ProducerEpoch: epoch, FirstSequence: seq,
		NumRecords: int32(n), Records: raw, Length: int32(49 + len(raw))}
	return kbTestReseal(rb.AppendTo(nil))
}

// produceRaw sends one produce request of batch to t/0 and returns the
// partition's answer.
func produceRaw(t *testing.T, cl *kgo.Client, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 10000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = 0, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0]
}

// TestIdempotentRetriesNeverDuplicate: a retried batch of an idempotent
// producer is answered with its first offset and not appended again, also
// after the broker restarts; a gap in the sequence is refused.
func TestIdempotentRetriesNeverDuplicate(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, dir)
	cl := newClient(t, b)
	createTopic(t, cl, "t", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionTimeoutMillis = 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init producer id: %v, code %d", err, ir.ErrorCode)
	}
	pid, epoch := ir.ProducerID, ir.ProducerEpoch
	first, second := idempotentBatch(pid, epoch, 0, 3), idempotentBatch(pid, epoch, 3, 2)
	check := func(what string, got kmsg.ProduceResponseTopicPartition, code int16, offset int64) {
		t.Helper()
		if got.ErrorCode != code || (code == 0 && got.BaseOffset != offset) {
			t.Fatalf("%s: code %d offset %d, want code %d offset %d", what, got.ErrorCode, got.BaseOffset, code, offset)
		}
	}
	check("first batch", produceRaw(t, cl, first), 0, 0)
	check("first batch again", produceRaw(t, cl, first), 0, 0)
	check("second batch", produceRaw(t, cl, second), 0, 3)
	check("a gap", produceRaw(t, cl, idempotentBatch(pid, epoch, 9, 1)), codeOutOfOrderSequence, 0)
	check("second batch again", produceRaw(t, cl, second), 0, 3)
	cl.Close()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = startBroker(t, dir)
	defer b.Close()
	cl = newClient(t, b)
	check("second batch after a restart", produceRaw(t, cl, second), 0, 3)
	check("a new epoch must start at 0", produceRaw(t, cl, idempotentBatch(pid, epoch+1, 5, 1)), codeOutOfOrderSequence, 0)
	check("the next batch after a restart", produceRaw(t, cl, idempotentBatch(pid, epoch, 5, 1)), 0, 5)
	part, _ := b.topics.partition("t", 0, false)
	if _, next, err := part.offsets(); err != nil || next != 6 {
		t.Fatalf("partition ends at %d (%v), want 6: every batch once", next, err)
	}
}
