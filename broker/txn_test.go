package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTransactionsCommitAndAbort: a committed transaction's records are
// read once; an aborted one's never, by read_committed and
// read_uncommitted consumers alike.
func TestTransactionsCommitAndAbort(t *testing.T) {
	b := startBroker(t, t.TempDir())
	defer b.Close()
	admin := newClient(t, b)
	createTopic(t, admin, "out", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := newClient(t, b, kgo.TransactionalID("tx-1"), kgo.DefaultProduceTopic("out"))
	for round, commit := range []bool{true, false, true} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		// Batches of many records (asynchronous produce), then one more.
		for i := range 99 {
			v := fmt.Sprintf("r%d-%d", round, i)
			p.Produce(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		v := fmt.Sprintf("r%d-99", round)
		if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte(v), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d: %v", round, err)
		}
	}
	for _, iso := range []kgo.IsolationLevel{kgo.ReadCommitted(), kgo.ReadUncommitted()} {
		recs := consumeAll(t, b, "out", 200, kgo.FetchIsolationLevel(iso))
		seen := map[string]bool{}
		for _, r := range recs {
			if r.Value[1] == '1' {
				t.Fatalf("read %s of the aborted transaction", r.Value)
			}
			if seen[string(r.Value)] {
				t.Fatalf("read %s twice", r.Value)
			}
			seen[string(r.Value)] = true
		}
		if len(seen) != 200 {
			t.Fatalf("read %d distinct records, want 200", len(seen))
		}
	}
}

// TestTransactionFencing: a second producer with the same transactional
// id fences the first, whose open transaction is aborted.
func TestTransactionFencing(t *testing.T) {
	b := startBroker(t, t.TempDir())
	defer b.Close()
	admin := newClient(t, b)
	createTopic(t, admin, "out", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p1 := newClient(t, b, kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("out"))
	if err := p1.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p1.ProduceSync(ctx, &kgo.Record{Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p2 := newClient(t, b, kgo.TransactionalID("tx"), kgo.DefaultProduceTopic("out"))
	if err := p2.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := p2.ProduceSync(ctx, &kgo.Record{Value: []byte("live")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := p2.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if err := p1.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer committed")
	}
	recs := consumeAll(t, b, "out", 1)
	if len(recs) != 1 || string(recs[0].Value) != "live" {
		t.Fatalf("read %d records, first %q: want only \"live\"", len(recs), recs[0].Value)
	}
}

// TestTransactionalOffsetsStableAfterCommit: offsets committed in an open
// transaction are UNSTABLE_OFFSET_COMMIT to a fetch that requires stable
// offsets, invisible otherwise, and committed by EndTxn (KIP-447).
func TestTransactionalOffsetsStableAfterCommit(t *testing.T) {
	b := startBroker(t, t.TempDir())
	defer b.Close()
	cl := newClient(t, b)
	createTopic(t, cl, "in", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := "tx-offsets"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.TransactionalID, init.TransactionTimeoutMillis = &id, 60000
	ir, err := init.RequestWith(ctx, cl)
	if err != nil || ir.ErrorCode != 0 {
		t.Fatalf("init: %v %d", err, ir.ErrorCode)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = id, ir.ProducerID, ir.ProducerEpoch, "g"
	if r, err := add.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("add offsets: %v %+v", err, r)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = id, "g", ir.ProducerID, ir.ProducerEpoch
	commit.Generation = -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "in"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = 0, 42
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	if r, err := commit.RequestWith(ctx, cl); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("txn offset commit: %v %+v", err, r)
	}
	fetch := func(stable bool) (int64, int16) {
		t.Helper()
		req := kmsg.NewPtrOffsetFetchRequest()
		req.RequireStable = stable
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "g"
		ft := kmsg.NewOffsetFetchRequestGroupTopic()
		ft.Topic, ft.Partitions = "in", []int32{0}
		g.Topics = append(g.Topics, ft)
		req.Groups = append(req.Groups, g)
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		p := r.Groups[0].Topics[0].Partitions[0]
		return p.Offset, p.ErrorCode
	}
	if _, code := fetch(true); code != 88 {
		t.Fatalf("stable fetch during the transaction: code %d, want 88 (UNSTABLE_OFFSET_COMMIT)", code)
	}
	if off, code := fetch(false); code != 0 || off != -1 {
		t.Fatalf("fetch during the transaction: offset %d code %d, want -1 0", off, code)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = id, ir.ProducerID, ir.ProducerEpoch, true
	if r, err := end.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("end txn: %v %+v", err, r)
	}
	if off, code := fetch(true); code != 0 || off != 42 {
		t.Fatalf("stable fetch after the commit: offset %d code %d, want 42 0", off, code)
	}
}
