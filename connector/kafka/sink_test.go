package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

func stringRecord(v string, r *kgo.Record) error {
	r.Key = append(r.Key, v[:2]...)
	r.Value = append(r.Value, v...)
	return nil
}

func strs(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%03d", prefix, i)
	}
	return out
}

// The two-phase commit by hand: a pre-committed transaction is invisible
// until committed (by another client, as after a restart), committing it
// again succeeds, and Recover aborts what a crashed writer left open, so
// read_committed consumers get past it.
func TestSinkExactlyOnceProtocol(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(2, "out"))
	ctx := context.Background()
	sink := kafka.Sink(addrs, stringRecord, kafka.DefaultTopic("out"),
		kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix("job1"))
	open := func() weir.CommittingWriter[string] {
		w, err := sink.OpenWriter(ctx, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		return w.(weir.CommittingWriter[string])
	}
	w := open()
	if err := w.Recover(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if c, err := w.PreCommit(ctx, 1); err != nil || c != nil {
		t.Fatalf("empty pre-commit: %q, %v", c, err)
	}
	if err := w.Write(ctx, strs("a", 10)); err != nil {
		t.Fatal(err)
	}
	c2, err := w.PreCommit(ctx, 2)
	if err != nil || c2 == nil {
		t.Fatalf("pre-commit: %q, %v", c2, err)
	}
	if !strings.Contains(string(c2), `"job1-0-2"`) {
		t.Fatalf("committable %s: want transactional id job1-0-2", c2)
	}
	if got := committedValues(t, addrs, "out"); len(got) != 0 {
		t.Fatalf("visible before commit: %v", got)
	}
	// The next transaction is open while the previous waits for its commit.
	if err := w.Write(ctx, strs("b", 5)); err != nil {
		t.Fatal(err)
	}
	if err := sink.Committer().Commit(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if err := sink.Committer().Commit(ctx, c2); err != nil {
		t.Fatalf("second commit of the same transaction: %v", err)
	}
	sameOutput(t, "after commit", committedValues(t, addrs, "out"), strs("a", 10))

	// Checkpoint 3 pre-commits b… but never completes; d… goes into the
	// next transaction (job1-0-4); then a crash: w is never closed, both
	// transactions linger. The restarted writer restores checkpoint 2 and
	// aborts them: without that, job1-0-4 would hold read_committed
	// consumers back (the last stable offset stays before it) and c…
	// would never show.
	if _, err := w.PreCommit(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(ctx, strs("d", 4)); err != nil {
		t.Fatal(err)
	}
	if err := kafka.FlushWriter[string](ctx, w); err != nil {
		t.Fatal(err)
	}
	w2 := open()
	if err := w2.Recover(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if err := w2.Write(ctx, strs("c", 3)); err != nil {
		t.Fatal(err)
	}
	c3, err := w2.PreCommit(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(c3), `"job1-0-3"`) {
		t.Fatalf("committable %s: want transactional id job1-0-3", c3)
	}
	if err := sink.Committer().Commit(ctx, c3); err != nil {
		t.Fatal(err)
	}
	sameOutput(t, "after recovery", committedValues(t, addrs, "out"), append(strs("a", 10), strs("c", 3)...))
	if err := w2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// The crashed writer's transaction was aborted: it cannot commit.
	if err := sink.Committer().Commit(ctx, []byte(`{"txn":"job1-0-3","pid":12345,"epoch":0}`)); err == nil || !strings.Contains(err.Error(), "job1-0-3") {
		t.Fatalf("commit of an unknown producer: %v", err)
	}
	if err := sink.Committer().Commit(ctx, []byte(`{`)); err == nil {
		t.Fatal("malformed committable accepted")
	}
	w.Close(ctx)
}

func TestSinkOptionsValidated(t *testing.T) {
	ctx := context.Background()
	if _, err := kafka.Sink([]string{"127.0.0.1:1"}, stringRecord, kafka.DeliveryGuarantee(kafka.ExactlyOnce)).OpenWriter(ctx, 0, 1); err == nil ||
		!strings.Contains(err.Error(), "TransactionalIDPrefix") {
		t.Fatalf("exactly-once without a prefix: %v", err)
	}
	if _, err := kafka.Sink[string](nil, stringRecord).OpenWriter(ctx, 0, 1); err == nil {
		t.Fatal("no brokers accepted")
	}
}

// At-least-once and none, through jobs: every record arrives (no failure).
func TestSinkAtLeastOnceAndNone(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(3, "alo", "none"))
	in := strs("x", 500)
	for _, g := range []kafka.Guarantee{kafka.AtLeastOnce, kafka.None} {
		topic := map[kafka.Guarantee]string{kafka.AtLeastOnce: "alo", kafka.None: "none"}[g]
		job := weir.NewJob("sink-"+g.String(), weir.Parallelism(2))
		weir.To(weir.Rebalance(weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[string]())),
			kafka.Sink(addrs, stringRecord, kafka.DefaultTopic(topic), kafka.DeliveryGuarantee(g)))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(g, err)
		}
		sameOutput(t, g.String(), committedValues(t, addrs, topic), in)
	}
}
