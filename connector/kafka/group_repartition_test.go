package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
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
	_, addrs := newCluster(t, seedTopics(4, "in"), seedTopics(2, "out"))
	evs := events(3000, 10)
	produce(t, addrs, "in", 4, evs)
	var logs syncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("job log:\n%s", logs.String())
		}
	}()
	job := weir.NewJob("group-repartition", weir.AppID("rp"), weir.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))), weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""))
	src := boundedGroupSource(job, addrs, "in")
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e event) string { return e.Key }), weir.Tumbling(time.Second)),
		weir.Count[event](), weir.UID("count"))
	weir.To(counts, kafka.Sink(addrs, func(r weir.WindowResult[string, int64], rec *kgo.Record) error {
		rec.Value = fmt.Appendf(rec.Value, "%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
		return nil
	}, kafka.DefaultTopic("out")))
	runBoundedGroup(t, job, 30*time.Second)
	sameOutput(t, "windowed counts through the repartition topic", committedValues(t, addrs, "out"), windowCounts(evs))
	checkRepartitionTopic(t, addrs, "rp-count-repartition", 4)
}

// checkRepartitionTopic checks that topic exists with n partitions, and
// has records (the exchange went through it).
func checkRepartitionTopic(t *testing.T, addrs []string, topic string, n int) {
	t.Helper()
	adm := newAdmin(t, addrs)
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

// TestGroupRepartitionKill runs a job with a KeyBy and a stateless keyed
// process function (it appends the key and event time it sees) as real
// processes in group mode: the KeyBy goes through a repartition topic of 3
// partitions (RepartitionPartitions) between the processes. One process is
// killed with SIGKILL while records flow and started again. The output,
// read read_committed, must equal a one-process run's exactly (every
// record once through the repartition topic: exactly once), and per key
// and input partition be in input order.
func TestGroupRepartitionKill(t *testing.T) {
	addrs := processCluster(t, seedTopics(6, "in"), seedTopics(3, "ref", "out"))
	const parts, phase = 6, 3000
	evs := events(3*phase, 40)
	g := jobGroup(t, addrs, "gk", "--in", "in", "--out", "out", "--keyed", "tag", "--repartition-partitions", "3", "--pace", "20")
	out := outputCount(t, addrs, "out", "")
	// Started again at once with its instance id, a fences its dead
	// predecessor's open transaction, whose repartition records would
	// otherwise hold back every read_committed reader of the topic until
	// the transaction timeout.
	killInSecondPhase(t, g, addrs, out, evs, parts, phase, true)
	g.WaitFor("past the first phase", time.Minute, func() bool { return out() >= phase+phase/3 })
	produce(t, addrs, "in", parts, evs[2*phase:])
	finishUnbounded(t, g, out, len(evs))
	got := committedValues(t, addrs, "out")
	want := reference(t, addrs, "ref", "--in", "in", "--keyed", "tag")
	if len(want) != len(evs) {
		t.Fatalf("reference run wrote %d records, want %d", len(want), len(evs))
	}
	sameOutput(t, "group output through the repartition topic", got, want)
	checkKeyOrder(t, addrs, "out")
	checkRepartitionTopic(t, addrs, "gk-tag-repartition", 3)
}

// TestGroupRepartitionWatermark: an event-time tumbling count behind a
// KeyBy, run as two processes that share the input's four partitions; the
// counts need the watermark, which crosses the repartition topic as
// markers. The partitions are made far apart in event time: 0 and 1 first,
// an hour ahead, processed through the repartition topic before 2 and 3
// get their (earlier) events. A reader that let the watermark run ahead of
// an upstream task (one it has not seen, or the maximum rather than the
// minimum) would fire the early windows before 2's and 3's events and drop
// those as late. The counts must equal a one-process run's.
func TestGroupRepartitionWatermark(t *testing.T) {
	addrs := processCluster(t, seedTopics(4, "in"), seedTopics(2, "ref", "out"))
	g := jobGroup(t, addrs, "gw", "--in", "in", "--out", "out", "--keyed", "window")
	g.Start("a", "b")
	// Both members own input partitions before any event exists, so no
	// rebalance moves a window's state: the test checks the watermark
	// alone (TestGroupStatefulRepartition moves state).
	waitEveryMemberOwns(g, addrs, "gw", 2, "in")
	// Event i of partition p at base + i*100ms (+1h for partitions 0 and
	// 1); then a last event per partition two hours ahead, which moves
	// every partition's watermark past the other windows.
	var evs []event
	byPart := map[int][]event{}
	for p := range 4 {
		shift := int64(0)
		if p < 2 {
			shift = 3_600_000
		}
		for i := range 500 {
			e := event{Key: "k" + strconv.Itoa((i*7+p)%13), TS: base + shift + int64(i)*100, Seq: int64(p*1000 + i)}
			byPart[p] = append(byPart[p], e)
			evs = append(evs, e)
		}
	}
	produceTo(t, addrs, "in", 0, byPart[0])
	produceTo(t, addrs, "in", 1, byPart[1])
	waitCommittedTo(g, addrs, "gw", "partitions 0 and 1 through the repartition topic", 500, "in", 0, 1)
	produceTo(t, addrs, "in", 2, byPart[2])
	produceTo(t, addrs, "in", 3, byPart[3])
	for p := range 4 {
		e := event{Key: "zz-flush", TS: base + 7_200_000, Seq: int64(9000 + p)}
		evs = append(evs, e)
		produceTo(t, addrs, "in", int32(p), []event{e})
	}
	var want []string
	for _, v := range reference(t, addrs, "ref", "--in", "in", "--keyed", "window") {
		if !strings.HasPrefix(v, "zz-flush,") { // its window never closes in the unbounded run
			want = append(want, v)
		}
	}
	var got []string
	g.WaitFor("every window", 2*time.Minute, func() bool {
		got = committedValues(t, addrs, "out")
		return len(got) >= len(want)
	})
	sameOutput(t, "windowed counts of two processes", got, want)
	checkRepartitionTopic(t, addrs, "gw-count-repartition", 4)
}

// produceTo writes evs to one partition of topic, in order.
func produceTo(t *testing.T, addrs []string, topic string, partition int32, evs []event) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for _, e := range evs {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: partition, Key: []byte(e.Key), Value: encodeEvent(e), Timestamp: time.UnixMilli(e.TS)})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGroupRepartition prints the throughput of a bounded group-mode
// job (one member, in process, against kfake) whose records cross a KeyBy
// through a repartition topic, against the same job without the KeyBy.
// Both write every record to an output topic in the group's transactions.
// kfake is in the same process: the figure is the exchange's cost relative
// to the plain job, not a broker's throughput.
func BenchmarkGroupRepartition(b *testing.B) {
	const n = 100_000
	for _, keyed := range []bool{false, true} {
		name := "plain"
		if keyed {
			name = "keyby"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				_, addrs := newCluster(b, seedTopics(4, "in"), seedTopics(4, "out"))
				produce(b, addrs, "in", 4, events(n, 1000))
				job := weir.NewJob("bench", weir.AppID("bench"), weir.Parallelism(2), weir.Checkpointing(100*time.Millisecond, ""))
				src := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent, kafka.Bounded(), kafka.ReadCommitted()),
					weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
				if keyed {
					src = weir.Process(weir.KeyBy(src, func(e event) string { return e.Key }),
						weir.ProcessFunc[string, event, event](func(ctx *weir.KeyedContext[string, event], e event) error {
							ctx.Emit(e)
							return nil
						}), weir.UID("pass"))
				}
				weir.To(src, kafka.Sink(addrs, func(e event, r *kgo.Record) error {
					r.Value = encodeEvent(e)
					return nil
				}, kafka.DefaultTopic("out")))
				start := time.Now()
				if err := job.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(n/time.Since(start).Seconds(), "records/s")
			}
		})
	}
}
