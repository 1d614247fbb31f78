package kafka_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/internal/jobshapes"
	"github.com/weirstream/weir/internal/testing/kafkatest"
)

// TestGroupKeyedStateMoves runs a keyed stateful job (internal/groupjob's
// "state": a running count per key, and a count per key and second of
// event time) in group mode as two real processes over an unbounded
// one-partition input fed in phases (phasedInput), so that the kill lands
// mid-run whatever the machine's speed: phase 1 goes in and is read and
// counted, the counts and the open window at the phase's end committed to
// the changelogs; phase 2 goes in and the owner of the counts' one
// repartition partition (their state) is SIGKILLed at once. The other
// takes the partitions over, restores the counts from the changelog
// topics and reads phase 2; phase 3 goes in, and once the survivor has
// read it, describe shows its restore (the note rides on the input's
// committed offsets). The killed process is started again (the
// partitions may move once more) and phase 4 goes in with a flush event.
// The output, read read_committed, must equal the model's and a
// one-process run's exactly: the counts go on from where the last commit
// left them (with the restore disabled they start again from zero, and
// the test fails).
func TestGroupKeyedStateMoves(t *testing.T) {
	addrs := processCluster(t, seedTopics(1, "kin"), seedTopics(2, "kref", "kout"))
	const phase = 1500 // 15 s of event time
	evs := events(4*phase, 10)
	want := groupStateModel(evs)
	in := phasedInput{t: t, addrs: addrs, phases: 4, topics: []phasedTopic{{"kin", 1, evs}}}
	g := jobGroup(t, addrs, "kg", "--in", "kin", "--out", "kout", "--keyed", "state")
	out := outputCount(t, addrs, "kout", "")
	ends := in.feed(0)
	g.Start("a", "b")
	// The victim owns the running counts' one repartition partition, and
	// so their state (the input's partition may be the other's).
	countsTopic := kafka.RepartitionTopic("kg", "counts")
	// Phase 1's counts committed: the input's committed offsets alone do
	// not say the keyed operators have read the repartition topics
	// (read_committed, after that commit) and committed their state.
	counted := outputCount(t, addrs, "kout", "count,")
	var victim string
	in.waitRead(g, "kg", "phase 1 read and counted", ends, func(d *kafka.GroupDescription) bool {
		victim = strings.TrimPrefix(ownerOf(d, countsTopic, 0), "kg-")
		return victim != "" && counted() >= phase
	})
	killedAt := out()
	survivor := map[string]string{"a": "b", "b": "a"}[victim]
	if survivor == "" {
		t.Fatalf("owner %q is none of the processes", victim)
	}
	ends = in.feed(1)
	g.Kill(victim)
	// The survivor restores once the victim's open transaction, which
	// wrote to the changelogs and repartition topics it reads, is
	// aborted: the test fences it as the victim would when started again
	// (else the survivor waits for the transaction timeout, a minute).
	kafkatest.Fence(t, addrs, "kg-"+victim)
	in.waitRead(g, "kg", "phase 2 read, the survivor owning the counts", ends, func(d *kafka.GroupDescription) bool {
		return ownerOf(d, countsTopic, 0) == "kg-"+survivor
	})
	ends = in.feed(2)
	counts := kafka.ChangelogTopic("kg", "counts")
	in.waitRead(g, "kg", "phase 3 read, the survivor's restore described", ends, func(d *kafka.GroupDescription) bool {
		return slices.ContainsFunc(d.Restores, func(r kafka.GroupRestore) bool {
			return r.Member == "kg-"+survivor && r.Changelog == counts && r.KeyGroups > 0 && r.Bytes > 0
		})
	})
	g.Start(victim)
	in.feed(3)
	in.flush()
	got := finishPhased(t, g, addrs, "kout", want, 1) // and the flush event's count
	t.Logf("killed %s with %d of %d records committed; %d records in the end", victim, killedAt, len(want), len(got))
	sameOutput(t, "keyed group output against the model", got, want)
	sameOutput(t, "keyed group output against a one-process run",
		got, withoutFlush(reference(t, addrs, "kref", "--in", "kin", "--keyed", "state")))
	describeGroup(t, addrs, "kg")
}

// groupStateModel is internal/groupjob's "state" output for evs, sorted:
// the running counts ("count,key,seq,n") and the counts per key and
// second ("window,key,start,n").
func groupStateModel(evs []event) []string {
	n := map[string]int{}
	windows := map[string]int{}
	var out []string
	for _, e := range evs {
		n[e.Key]++
		out = append(out, fmt.Sprintf("count,%s,%d,%d", e.Key, e.Seq, n[e.Key]))
		windows[fmt.Sprintf("window,%s,%d", e.Key, e.TS-e.TS%1000)]++
	}
	for w, c := range windows {
		out = append(out, fmt.Sprintf("%s,%d", w, c))
	}
	slices.Sort(out)
	return out
}

// keyedJob is the in-process keyed job of the changelog tests: a running
// count per key (UID "counts": "count,key,seq,n") and a count per key and
// second (UID "windows": "window,key@start=n"), written to topic out.
func keyedJob(addrs []string, appID, in, out string, bounded bool, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("keyed-"+appID, append([]weir.JobOption{weir.AppID(appID), weir.Parallelism(2), weir.MaxParallelism(16),
		weir.Checkpointing(20*time.Millisecond, "")}, opts...)...)
	srcOpts := []kafka.SourceOption{kafka.ReadCommitted(), kafka.ClientOptions(kgo.SessionTimeout(6 * time.Second))}
	if bounded {
		srcOpts = append(srcOpts, kafka.Bounded())
	}
	src := weir.FromSource(job, "in", kafka.Source(addrs, []string{in}, decodeEvent, srcOpts...),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }), weir.UID("in"))
	ks := weir.KeyBy(src, func(e event) string { return e.Key })
	counts := weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, event, string] { return &jobshapes.Counter{} }, weir.UID("counts"))
	windows := weir.Map(weir.Aggregate(weir.Window(ks, weir.Tumbling(time.Second)), weir.Count[event](), weir.UID("windows")),
		func(r weir.WindowResult[string, int64]) string {
			return fmt.Sprintf("window,%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
		})
	sink := func() weir.Sink[string] {
		return kafka.Sink(addrs, func(v string, r *kgo.Record) error {
			r.Value = append(r.Value, v...)
			return nil
		}, kafka.DefaultTopic(out))
	}
	weir.To(counts, sink(), weir.UID("count-sink"))
	weir.To(windows, sink(), weir.UID("window-sink"))
	return job
}

// keyedModel is keyedJob's output for evs, sorted.
func keyedModel(evs []event) []string {
	n := map[string]int{}
	var out []string
	for _, e := range evs {
		n[e.Key]++
		out = append(out, fmt.Sprintf("count,%s,%d,%d", e.Key, e.Seq, n[e.Key]))
	}
	for _, w := range windowCounts(evs) {
		out = append(out, "window,"+w)
	}
	slices.Sort(out)
	return out
}

// TestChangelogCompactedAndKeyed runs a keyed group-mode job in the test
// process twice: unbounded over the first half of the input until the
// group committed all of it, then (more input written) bounded to the
// end. The second run restores the counts and the pending windows from
// the changelogs: the output of both equals the model of one run. The
// changelog topics are compacted, have the partition count of the
// repartition topic feeding their operator (the input's: 1), and are
// keyed by key group; the
// windows' key groups, empty once every window fired at the end of the
// input, end in tombstones. Describe and the metrics show the restore.
// The counts live on the heap, then in Pebble (windows stay on the heap).
func TestChangelogCompactedAndKeyed(t *testing.T) {
	t.Run("heap", func(t *testing.T) { testChangelogCompactedAndKeyed(t) })
	t.Run("pebble", func(t *testing.T) { testChangelogCompactedAndKeyed(t, weir.PebbleState(t.TempDir(), 0)) })
}

func testChangelogCompactedAndKeyed(t *testing.T, opts ...weir.JobOption) {
	_, addrs := newCluster(t, seedTopics(1, "cin"), seedTopics(2, "cout"))
	// Events are 10ms apart from a whole second: the first half ends at
	// a window's end, with that window still open (the watermark is
	// behind its last event).
	evs := events(3000, 10)
	produce(t, addrs, "cin", 1, evs[:1500])
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- keyedJob(addrs, "ck", "cin", "cout", false, opts...).Run(ctx) }()
	// The first half through the repartition topics too: its running
	// counts are in the committed output (committed with the counts'
	// changelog and the repartition offsets), and the input is committed.
	waitFor(t, "the first half committed", time.Minute, func() bool {
		counts := 0
		for _, v := range committedValues(t, addrs, "cout") {
			if strings.HasPrefix(v, "count,") {
				counts++
			}
		}
		if counts != 1500 {
			return false
		}
		d, err := kafka.DescribeGroup(context.Background(), addrs, "ck")
		if err != nil {
			return false
		}
		read := false
		for _, p := range d.Partitions {
			read = read || p.Topic == "cin" && p.Committed == 1500
		}
		if !read {
			return false
		}
		// The windows' stage has committed state too: the counts and the
		// input's offsets alone do not say it has read its repartition
		// topic (read_committed, after the counts' commit) and committed
		// the open windows to its changelog, which the second run must
		// restore (a cancel before that once left the windows' changelog
		// empty: "describe: restore {... ck-windows-changelog KeyGroups:0"). Once
		// some key group's latest record holds windows, every later
		// checkpoint of this run holds the last window, still open.
		for _, r := range latestRecords(t, addrs, kafka.ChangelogTopic("ck", "windows")) {
			if r != nil {
				return true
			}
		}
		return false
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("first run: %v", err)
	}
	produce(t, addrs, "cin", 1, evs[1500:])
	job := keyedJob(addrs, "ck", "cin", "cout", true, opts...)
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("second run: %v", err)
	}
	sameOutput(t, "keyed output", committedValues(t, addrs, "cout"), keyedModel(evs))

	adm := newAdmin(t, addrs)
	ctx = context.Background()
	for _, uid := range []string{"counts", "windows"} {
		topic := kafka.ChangelogTopic("ck", uid)
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		c, err := rc.On(topic, nil)
		if err != nil {
			t.Fatal(err)
		}
		policy := ""
		for _, kv := range c.Configs {
			if kv.Key == "cleanup.policy" && kv.Value != nil {
				policy = *kv.Value
			}
		}
		if policy != "compact" {
			t.Errorf("%s: cleanup.policy %q, want compact", topic, policy)
		}
		td, err := adm.ListTopics(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if np := len(td[topic].Partitions); np != 1 {
			t.Errorf("%s: %d partitions, want 1 (as the input)", topic, np)
		}
		latest := map[string][]byte{}
		for _, r := range readRecords(t, addrs, topic) {
			if r.partition != 0 {
				t.Fatalf("%s: a record in partition %d", topic, r.partition)
			}
			{
				kg, err := strconv.Atoi(r.key)
				if err != nil || kg < 0 || kg >= 16 {
					t.Fatalf("%s offset %d: key %q is not a key group", topic, r.offset, r.key)
				}
			}
			latest[r.key] = r.value
		}
		groups := 0
		for k, v := range latest {
			groups++
			if uid == "windows" && v != nil {
				t.Errorf("%s: key group %s ends with %d bytes, want a tombstone (every window fired)", topic, k, len(v))
			}
			if uid == "counts" && v == nil {
				t.Errorf("%s: key group %s ends with a tombstone, want its counts", topic, k)
			}
		}
		// The watermark is not in the changelog: the operator restores it
		// from the repartition offsets' metadata (TestGroupStatefulRepartition).
		if groups == 0 {
			t.Errorf("%s: no key groups", topic)
		}
	}

	m := job.Metrics().Checkpoints
	if m.RestoredKeyGroups == 0 || m.RestoredBytes == 0 {
		t.Errorf("metrics: restored %d key groups, %d bytes; want some", m.RestoredKeyGroups, m.RestoredBytes)
	}
	d, err := kafka.DescribeGroup(ctx, addrs, "ck")
	if err != nil {
		t.Fatal(err)
	}
	var kgs, bytes int64
	var changelogs []string
	for _, r := range d.Restores {
		kgs, bytes = kgs+r.KeyGroups, bytes+r.Bytes
		changelogs = append(changelogs, r.Changelog)
		if !strings.HasPrefix(r.Member, "ck-") || r.KeyGroups == 0 {
			t.Errorf("describe: restore %+v", r)
		}
	}
	slices.Sort(changelogs)
	if kgs != m.RestoredKeyGroups || bytes != m.RestoredBytes ||
		!slices.Equal(changelogs, []string{kafka.ChangelogTopic("ck", "counts"), kafka.ChangelogTopic("ck", "windows")}) {
		t.Errorf("describe: restores %+v, want both changelogs' (%d key groups, %d bytes in all)", d.Restores, m.RestoredKeyGroups, m.RestoredBytes)
	}
	var sb strings.Builder
	d.WriteText(&sb)
	if !strings.Contains(sb.String(), "RESTORED BY") {
		t.Errorf("describe text:\n%s", sb.String())
	}
	t.Logf("\n%s", sb.String())
}

// latestRecords is the latest committed value of each key of topic (nil:
// a tombstone).
func latestRecords(t *testing.T, addrs []string, topic string) map[string][]byte {
	t.Helper()
	latest := map[string][]byte{}
	for _, r := range readRecords(t, addrs, topic) {
		latest[r.key] = r.value
	}
	return latest
}

type rawRecord struct {
	key       string
	value     []byte
	partition int32
	offset    int64
}

// readRecords reads every record of topic read_committed, in offset order.
func readRecords(t *testing.T, addrs []string, topic string) []rawRecord {
	t.Helper()
	return readAll(t, kafka.Source(addrs, []string{topic}, func(r *kgo.Record) (rawRecord, error) {
		return rawRecord{key: string(r.Key), value: slices.Clone(r.Value), partition: r.Partition, offset: r.Offset}, nil
	}, kafka.Bounded(), kafka.ReadCommitted()))
}

// TestChangelogCorruptRecord: a changelog record that is not weir's, or
// whose checksum does not match, stops the restore with an error naming
// the topic, partition and offset (the job does not start from state with
// a hole in it).
func TestChangelogCorruptRecord(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(1, "xin"), seedTopics(1, "xout"))
	produce(t, addrs, "xin", 1, events(100, 5))
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	// A record as weir frames it (magic, kind, CRC-32C), one byte flipped.
	flipped := []byte{'w', 'c', 'g', 0, 0, 0, 0, 1, 2, 3}
	for _, c := range []struct {
		app   string
		value []byte
		want  string
	}{
		{"junk", []byte("not a snapshot"), "not a weir changelog record"},
		{"flip", flipped, "checksum mismatch"},
	} {
		topic := kafka.ChangelogTopic(c.app, "counts")
		createTopic(t, addrs, topic, 1)
		// A good record first (a tombstone), so the bad one is at offset 1.
		for _, v := range [][]byte{nil, c.value} {
			if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 0, Key: []byte("3"), Value: v}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		err := keyedJob(addrs, c.app, "xin", "xout", true).Run(ctx)
		where := fmt.Sprintf("changelog topic %q partition 0 offset 1", topic)
		if err == nil || !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Run: %v; want an error naming %s: %s", c.app, err, where, c.want)
		}
	}
}

// TestGroupRefusesIncrementalKeyed: incremental Pebble checkpoints hold
// keyed state as database files, not key-group snapshots, so they cannot
// feed a changelog: a keyed group-mode job with them is refused.
func TestGroupRefusesIncrementalKeyed(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(1, "in"))
	job := weir.NewJob("group-incremental", weir.AppID("inc"), weir.PebbleState(t.TempDir(), 0), weir.IncrementalCheckpoints())
	src := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
	weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(e event) string { return e.Key }),
		func() weir.KeyedProcessFunction[string, event, string] { return &jobshapes.Counter{} }))
	err := job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "IncrementalCheckpoints") {
		t.Fatalf("Run: %v, want a refusal naming IncrementalCheckpoints", err)
	}
}
