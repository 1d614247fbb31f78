package kafka_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

func seqs(evs []event) []int64 {
	out := make([]int64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	slices.Sort(out)
	return out
}

func TestSourceReadsEveryPartitionBounded(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(3, "a"), seedTopics(2, "b"))
	evs := events(3000, 10)
	produce(t, addrs, "a", 3, evs[:2000])
	produce(t, addrs, "b", 2, evs[2000:])
	src := kafka.Source(addrs, []string{"a", "b"}, decodeEvent, kafka.Bounded())
	splits, err := src.Splits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range splits {
		ids = append(ids, s.ID())
	}
	if fmt.Sprint(ids) != "[a/0 a/1 a/2 b/0 b/1]" {
		t.Fatalf("splits %v", ids)
	}
	got := readAll(t, src)
	if !slices.Equal(seqs(got), seqs(evs)) {
		t.Fatalf("read %d events, want %d", len(got), len(evs))
	}
	// Per partition in offset order.
	last := map[int64]int64{}
	for _, e := range got {
		p := e.Seq % 3
		if e.Seq >= 2000 {
			p = 10 + e.Seq%2
		}
		if prev, ok := last[p]; ok && e.Seq <= prev {
			t.Fatalf("partition %d out of order: %d after %d", p, e.Seq, prev)
		}
		last[p] = e.Seq
	}
}

func TestSourceUnknownTopic(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(1, "a"))
	src := kafka.Source(addrs, []string{"a", "nope"}, decodeEvent, kafka.Bounded())
	_, err := src.Splits(context.Background())
	if !errors.Is(err, kafka.ErrUnknownTopic) || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v, want unknown topic naming nope", err)
	}
	// Through a job: Run fails with it.
	job := weir.NewJob("unknown")
	weir.Collect(weir.FromSource(job, "in", src, weir.NoWatermarks[event]()))
	if err := job.Run(context.Background()); !errors.Is(err, kafka.ErrUnknownTopic) {
		t.Fatalf("job: %v", err)
	}
}

// Positions are offsets: a reader reopened at a position continues with
// the next record, and start options resolve to the right offsets.
func TestSourcePositionsAndStarts(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(1, "t"))
	evs := events(100, 5)
	produce(t, addrs, "t", 1, evs)
	ctx := context.Background()
	src := kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Bounded())
	splits, err := src.Splits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Open(ctx, splits[0])
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]event, 30)
	n, err := r.Read(ctx, buf)
	for n == 0 && err == nil {
		n, err = r.Read(ctx, buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	pos, _ := r.(weir.CheckpointedReader[event]).Position()
	if got := int64(binary.BigEndian.Uint64(pos)); got != int64(n) || buf[n-1].Seq != int64(n-1) {
		t.Fatalf("after %d records position %d (last seq %d)", n, got, buf[n-1].Seq)
	}
	r.Close()
	r2, err := src.OpenAt(ctx, splits[0], pos)
	if err != nil {
		t.Fatal(err)
	}
	var rest []event
	for {
		k, err := r2.Read(ctx, buf)
		rest = append(rest, buf[:k]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	r2.Close()
	if len(rest) != 100-n || rest[0].Seq != int64(n) {
		t.Fatalf("reopened at %d: %d records from seq %d", n, len(rest), rest[0].Seq)
	}
	if _, err := src.OpenAt(ctx, splits[0], []byte{1, 2}); err == nil || !strings.Contains(err.Error(), `topic "t" partition 0`) {
		t.Fatalf("malformed position: %v", err)
	}

	// Start options. Records have timestamps base + seq*10ms.
	first := func(opts ...kafka.SourceOption) (int, int64) {
		got := readAll(t, kafka.Source(addrs, []string{"t"}, decodeEvent, append([]kafka.SourceOption{kafka.Bounded()}, opts...)...))
		if len(got) == 0 {
			return 0, -1
		}
		return len(got), got[0].Seq
	}
	if n, s := first(kafka.StartFrom(kafka.Latest())); n != 0 {
		t.Fatalf("latest: %d records from %d", n, s)
	}
	if n, s := first(kafka.StartFrom(kafka.AtTime(time.UnixMilli(base + 425)))); n != 57 || s != 43 {
		t.Fatalf("at time: %d records from %d, want 57 from 43", n, s)
	}
	// Committed offsets of a group, falling back to earliest.
	if n, s := first(kafka.Group("g"), kafka.StartFrom(kafka.Committed(kafka.Earliest()))); n != 100 || s != 0 {
		t.Fatalf("committed without commits: %d records from %d", n, s)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addrs...))
	defer cl.Close()
	var os kadm.Offsets
	os.AddOffset("t", 0, 90, -1)
	if _, err := kadm.NewClient(cl).CommitOffsets(ctx, "g", os); err != nil {
		t.Fatal(err)
	}
	if n, s := first(kafka.Group("g"), kafka.StartFrom(kafka.Committed(kafka.Earliest()))); n != 10 || s != 90 {
		t.Fatalf("committed: %d records from %d, want 10 from 90", n, s)
	}
	if _, err := kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.StartFrom(kafka.Committed(kafka.Earliest()))).Splits(ctx); err == nil {
		t.Fatal("Committed without a Group accepted")
	}
}

func TestSourceBadRecords(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(1, "t"))
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addrs...))
	defer cl.Close()
	ctx := context.Background()
	for i, v := range []string{"k1,1,0", "garbage", "k1,2,2"} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(i, err)
		}
	}
	src := kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Bounded())
	job := weir.NewJob("bad")
	weir.Collect(weir.FromSource(job, "in", src, weir.NoWatermarks[event]()))
	err := job.Run(ctx)
	var de *kafka.DecodeError
	if !errors.As(err, &de) || de.Topic != "t" || de.Partition != 0 || de.Offset != 1 ||
		!strings.Contains(err.Error(), `topic "t" partition 0 offset 1`) {
		t.Fatalf("err = %v, want a decode error at t/0 offset 1", err)
	}
	skip := kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Bounded(), kafka.SkipBadRecords())
	job = weir.NewJob("skip")
	out := weir.Collect(weir.FromSource(job, "in", skip, weir.NoWatermarks[event]()))
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := out.Items(); len(got) != 2 || got[1].Seq != 2 {
		t.Fatalf("skipping: %v", got)
	}
	// The skip is counted: the reader is a weir.SkipCounter.
	splits, _ := skip.Splits(ctx)
	r, _ := skip.Open(ctx, splits[0])
	defer r.Close()
	buf := make([]event, 10)
	for {
		if _, err := r.Read(ctx, buf); err != nil {
			break
		}
	}
	if n := r.(weir.SkipCounter).Skipped(); n != 1 {
		t.Fatalf("skipped %d, want 1", n)
	}
	// Dead letters: the bad record goes to the job's dead-letter sink.
	var letters []weir.BadRecord
	dl := weir.SinkFunc[weir.BadRecord](func(_ context.Context, items []weir.BadRecord) error {
		letters = append(letters, items...)
		return nil
	})
	job = weir.NewJob("dlq")
	out = weir.Collect(weir.FromSource(job, "in", kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Bounded()),
		weir.NoWatermarks[event](), weir.OnBadRecord(weir.DeadLetter(dl))))
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(out.Items()) != 2 || len(letters) != 1 || string(letters[0].Raw) != "garbage" || letters[0].Position != "t/0@1" || letters[0].Split != "t/0" {
		t.Fatalf("dead letters %+v with %d good records; want one for t/0@1", letters, len(out.Items()))
	}
}

// NotifyCheckpointComplete commits the checkpointed offset to the group.
func TestSourceCommitsOffsetsOnCheckpoint(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(2, "t"))
	produce(t, addrs, "t", 2, events(10, 2))
	ctx := context.Background()
	src := kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Group("monitor"))
	splits, err := src.Splits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Open(ctx, splits[1])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	l, ok := r.(weir.CheckpointListener)
	if !ok {
		t.Fatal("reader is not a weir.CheckpointListener")
	}
	pos := binary.BigEndian.AppendUint64(nil, 4)
	if err := l.NotifyCheckpointComplete(ctx, 7, pos); err != nil {
		t.Fatal(err)
	}
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addrs...))
	defer cl.Close()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, "monitor")
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup("t", 1)
	if !ok || o.At != 4 || o.Metadata != "weir checkpoint 7" {
		t.Fatalf("group offset of t/1: %+v (found %v), want 4", o, ok)
	}
	if _, ok := offs.Lookup("t", 0); ok {
		t.Fatal("t/0 committed too")
	}
	if err := l.NotifyCheckpointComplete(ctx, 8, []byte{1}); err == nil || !strings.Contains(err.Error(), `topic "t" partition 1`) {
		t.Fatalf("malformed position: %v", err)
	}
}

// Through a job: after checkpoints complete, the job tells the readers
// (weir.CheckpointListener) and the group's offsets follow the input.
func TestSourceCommitsOffsetsThroughJob(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(3, "t"))
	produce(t, addrs, "t", 3, events(3000, 10))
	job := weir.NewJob("monitored", weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, t.TempDir()))
	weir.Collect(weir.FromSource(job, "in", kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Group("mon")), weir.NoWatermarks[event]()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	cl, _ := kgo.NewClient(kgo.SeedBrokers(addrs...))
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitFor(t, "group offsets at the end of every partition", 60*time.Second, func() bool {
		offs, err := adm.FetchOffsets(ctx, "mon")
		if err != nil {
			return false // GROUP_ID_NOT_FOUND before the first commit
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum == 3000 && len(offs.Sorted()) == 3
	})
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// Several subtasks share the source's client and poll for each other:
// every partition must still arrive complete and in offset order.
func TestSourceSharedClientKeepsOrder(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(8, "t"))
	evs := events(40000, 40)
	produce(t, addrs, "t", 8, evs)
	for round := 0; round < 3; round++ {
		job := weir.NewJob("order", weir.Parallelism(4), weir.BatchSize(256))
		out := weir.Collect(weir.FromSource(job, "in", kafka.Source(addrs, []string{"t"}, decodeEvent, kafka.Bounded()), weir.NoWatermarks[event]()))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := out.Items()
		if !slices.Equal(seqs(got), seqs(evs)) {
			t.Fatalf("round %d: %d events, want %d", round, len(got), len(evs))
		}
		last := map[int64]int64{}
		for _, e := range got {
			p := e.Seq % 8
			if prev, ok := last[p]; ok && e.Seq < prev {
				t.Fatalf("round %d: partition %d out of order: %d after %d", round, p, e.Seq, prev)
			}
			last[p] = e.Seq
		}
	}
}
