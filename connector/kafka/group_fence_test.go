package kafka_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// TestGroupFencesDeadTransactionAtStart: a member killed after it had
// committed offsets into its transaction, and before it ended it, leaves
// the group's committed offsets unstable (KIP-447): every member's
// fetch of them waits until the transaction ends. A member started again
// with the dead one's instance id must fence that transaction at once,
// before it fetches the offsets, not at its first produce (which comes
// after the fetch: it would wait for the transaction timeout). The dead
// transaction here has a ten-minute timeout, so only the fence can end
// it within the test's deadline.
func TestGroupFencesDeadTransactionAtStart(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(2, "in"), seedTopics(1, "out"))
	evs := events(400, 7)
	produce(t, addrs, "in", 2, evs)
	t.Setenv(kafka.InstanceEnv, "x")
	danglingOffsetCommit(t, addrs, "fz-x", "fz", "in", 0, 100)

	job := weir.NewJob("group-fence", weir.AppID("fz"), weir.Parallelism(1), weir.Checkpointing(20*time.Millisecond, ""))
	src := boundedGroupSource(job, addrs, "in")
	weir.To(src, kafka.Sink(addrs, func(e event, r *kgo.Record) error {
		r.Value = encodeEvent(e)
		return nil
	}, kafka.DefaultTopic("out")))
	runBoundedGroup(t, job, 3*time.Minute)
	// The fenced transaction's offset (100 on partition 0) is aborted:
	// the job reads every partition from its start.
	var want []string
	for _, e := range evs {
		want = append(want, string(encodeEvent(e)))
	}
	slices.Sort(want)
	sameOutput(t, "output after fencing the dead transaction", committedValues(t, addrs, "out"), want)
}

// danglingOffsetCommit leaves an open transaction of transactional id
// txnID, with a ten-minute timeout, that has committed offset at for
// topic's partition to group: what a member killed between its
// TxnOffsetCommit and its EndTxn leaves behind.
func danglingOffsetCommit(t *testing.T, addrs []string, txnID, group, topic string, partition int32, at int64) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID(txnID), kgo.TransactionTimeout(10*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// The group exists (its members committed before), with an offset
	// committed outside any transaction.
	adm := kadm.NewClient(cl)
	var first kadm.Offsets
	first.AddOffset(topic, partition, 0, -1)
	if err := adm.CommitAllOffsets(ctx, group, first); err != nil {
		t.Fatal(err)
	}
	id, epoch, err := cl.ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, id, epoch, group
	addResp, err := add.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(addResp.ErrorCode)
	}
	if err != nil {
		t.Fatalf("AddOffsetsToTxn: %v", err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = txnID, group, id, epoch
	commit.Generation = -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = topic
	topics, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ct.TopicID = topics[topic].ID // v6+ names topics by id
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset = partition, at
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	commitResp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("TxnOffsetCommit: %v", err)
	}
	for _, rt := range commitResp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				t.Fatalf("TxnOffsetCommit %s/%d: %v", rt.Topic, rp.Partition, err)
			}
		}
	}
	// The offsets are pending: a stable fetch says so.
	resp, err := adm.FetchOffsets(kadm.RequireStable(ctx), group)
	if err == nil {
		err = resp.Error()
	}
	if !errors.Is(err, kerr.UnstableOffsetCommit) {
		t.Fatalf("a stable offset fetch of group %q after the dangling commit: %v, want UNSTABLE_OFFSET_COMMIT", group, err)
	}
}
