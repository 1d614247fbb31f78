package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
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
