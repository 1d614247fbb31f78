package kafka

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/internal/group"
)

// TestChangelogRestoreWaitsForTheCommit: in Apache Kafka a transaction's
// markers reach each partition after its offsets are committed, so a
// process taking a partition over can see the offsets stable while the
// changelog partition written in the same transaction still ends in an
// open transaction. The restore must wait for it (the offsets' metadata
// says how far the changelog was written) instead of restoring the state
// of the commit before. kfake writes all markers at once, so the test
// holds a transaction open on the changelog partition itself.
func TestChangelogRestoreWaitsForTheCommit(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "app-op-changelog"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	txn, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.TransactionalID("old-owner"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	if err := txn.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	// Key group 4 lives in partition 1 of 2 (max parallelism 8).
	res := txn.ProduceSync(ctx, &kgo.Record{Topic: "app-op-changelog", Partition: 1, Key: []byte("4"),
		Value: frame(nil, clKindGroup, []byte("state of the last commit"))})
	rec, err := res.First()
	if err != nil {
		t.Fatal(err)
	}
	// The committed offset of repartition partition 1 says the changelog
	// was written up to just past that record.
	meta := map[tp]string{{"app-op-repartition", 1}: metaPrefix + clEndSep + itoa(rec.Offset+1)}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var once sync.Once
	behind := make(chan struct{})
	r := &groupRunner{cl: cl, adm: kadm.NewClient(cl), log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		client: &clientConfig{brokers: c.ListenAddrs(), retryTimeout: 30 * time.Second},
		job:    group.Job{MaxParallelism: 8},
		onChangelogBehind: func(topic string, p int32) {
			if topic == "app-op-changelog" && p == 1 {
				once.Do(func() { close(behind) })
			}
		}}
	op := &runOp{keyedOp: keyedOp{uid: "op", changelog: "app-op-changelog", feed: "app-op-repartition", n: 2}, owned: []int32{1}}
	type result struct {
		states []group.KeyedState
		err    error
	}
	done := make(chan result, 1)
	go func() {
		states, _, err := r.readChangelog(ctx, op, meta)
		done <- result{states, err}
	}()
	select {
	case got := <-done:
		t.Fatalf("the restore did not wait for the changelog's last commit: states %v, err %v", got.states, got.err)
	case <-behind:
	case <-ctx.Done():
		t.Fatal("no restore")
	}
	if err := txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	var got result
	select {
	case got = <-done:
	case <-ctx.Done():
		t.Fatal("the restore did not finish after the commit")
	}
	if got.err != nil {
		t.Fatal(got.err)
	}
	if len(got.states) != 1 || string(got.states[0].Groups[4]) != "state of the last commit" {
		t.Fatalf("restored %v, want key group 4 of the last commit", got.states)
	}
}

// TestChangelogEndInMetadata: a partition whose changelog partition the
// transaction wrote is committed (again, if it did not move) with the
// changelog's end after its watermarks, which the watermark tracker does
// not take for a task.
func TestChangelogEndInMetadata(t *testing.T) {
	p, q := tp{"app-op-repartition", 0}, tp{"app-op-repartition", 1}
	lr := &localRun{starts: map[tp]int64{p: 10, q: 20}}
	lr.mu.reported = map[tp]int64{p: 10, q: 20} // neither moved
	lr.mu.ended = map[tp]int64{}
	lr.mu.meta = map[tp]string{p: metaPrefix + "l:a/0=5,r:b/0=7"}
	lr.wroteChangelog(p, -1) // produced: the offset is known after the flush
	marks, metas := lr.marks()
	if _, ok := marks[p.topic][p.partition]; !ok {
		t.Fatalf("marks %v: the partition whose changelog was written is not committed", marks)
	}
	if _, ok := marks[q.topic][q.partition]; ok {
		t.Fatalf("marks %v: a partition that neither moved nor wrote is committed", marks)
	}
	lr.wroteChangelog(p, 42)
	lr.wroteChangelog(p, 41) // promises in any order: the end is the largest
	metas = lr.changelogEnds(marks, metas)
	if metas[p] != metaPrefix+"l:a/0=5,r:b/0=7"+clEndSep+"42" || changelogEnd(metas[p]) != 42 {
		t.Fatalf("metadata %q", metas[p])
	}
	tr := newTracker(2, metas[p])
	if len(tr.seen) != 2 || tr.wm != 5 {
		t.Fatalf("tracker from %q: tasks %v, watermark %d", metas[p], tr.seen, tr.wm)
	}
	if lr.mu.clEnd[p] != 0 || len(lr.mu.clEnd) != 0 {
		t.Fatal("the next transaction starts with the ends of this one")
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
