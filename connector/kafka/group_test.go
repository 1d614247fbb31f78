package kafka_test

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/kafkatest"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// groupProc is one process of a group-mode job (kafkatest.Proc, under
// the names group_stateful_test.go uses; the other group tests use
// kafkatest.Group, through jobGroup).
type groupProc struct {
	*kafkatest.Proc
	name   string
	cmd    *exec.Cmd
	stderr *weirtest.LockedBuffer
	done   chan error
}

func startGroupProc(t *testing.T, bin, name string, args ...string) *groupProc {
	t.Helper()
	p := kafkatest.Start(t, bin, name, nil, args...)
	return &groupProc{Proc: p, name: p.Name, cmd: p.Cmd, stderr: p.Stderr, done: p.Done}
}

func (p *groupProc) exited() bool { return p.Exited() }

// groupJobBin builds connector/kafka/internal/groupjob, once for all the
// tests (TestMain).
func groupJobBin(t *testing.T) string {
	t.Helper()
	return crashtest.Build(t, "./internal/groupjob")
}

// TestGroupKillAndAdd runs a job in group mode (weir.AppID) as real
// processes against a kfake cluster on loopback: two processes share the
// six partitions of the input; one is killed with SIGKILL while records
// flow and started again; a third joins while the job runs. The output,
// read read_committed, must equal a one-process run's exactly: every
// record once (nothing lost with the killed process, nothing committed
// twice by it or by the process that took its partitions over), and per
// key in input order.
func TestGroupKillAndAdd(t *testing.T) {
	groupKillAndAdd(t, processCluster(t, seedTopics(6, "in"), seedTopics(3, "ref", "out")))
}

// groupKillAndAdd is TestGroupKillAndAdd on the cluster at addrs, which
// has topics in (6 partitions), ref and out (3).
func groupKillAndAdd(t *testing.T, addrs []string) {
	const parts, phase = 6, 3000
	evs := events(3*phase, 40)
	g := jobGroup(t, addrs, "g", "--in", "in", "--out", "out", "--pace", "20")
	out := outputCount(t, addrs, "out", "")
	killInSecondPhase(t, g, addrs, out, evs, parts, phase, false)
	// b takes a's partitions over after the session timeout. Its output
	// is read_committed behind a's open transaction (the kill came while
	// a wrote) until that is aborted: the test fences it, as a does when
	// it starts again with its instance id, rather than wait for the
	// transaction timeout (a minute). a, started again, joins.
	kafkatest.Fence(t, addrs, "g-a")
	g.WaitFor("b alone past the first phase", time.Minute, func() bool { return out() >= phase+phase/3 })
	g.Start("a")
	g.WaitFor("most of the second phase", time.Minute, func() bool { return out() >= 2*phase-phase/3 })
	g.Start("c") // joins while the job runs
	produce(t, addrs, "in", parts, evs[2*phase:])
	finishUnbounded(t, g, out, len(evs))
	got := committedValues(t, addrs, "out")
	want := reference(t, addrs, "ref", "--in", "in")
	if len(want) != len(evs) {
		t.Fatalf("reference run wrote %d records, want %d", len(want), len(evs))
	}
	sameOutput(t, "group output", got, want)
	checkKeyOrder(t, addrs, "out")
}

// killInSecondPhase is the kill of the tests whose input comes in
// phases of phase events (written round robin to parts partitions):
// the first phase is written and members a and b start; once a third of
// it is output, the second phase is written and a is killed at once, so
// that it dies while records flow (they are paced: it is
// mid-transaction), whatever the machine's speed. With restart, a is
// started again at once.
func killInSecondPhase(t *testing.T, g *kafkatest.Group, addrs []string, out func() int, evs []event, parts, phase int, restart bool) {
	t.Helper()
	produce(t, addrs, "in", parts, evs[:phase])
	g.Start("a", "b")
	g.KillMidRun(kafkatest.KillMidRun{
		When: "a third of the first phase's output", Committed: out,
		Victim:  func() string { return victimIf(out() >= phase/3, "a") },
		Before:  func() { produce(t, addrs, "in", parts, evs[phase:2*phase]) },
		Restart: restart,
	})
}

// finishUnbounded waits for the committed output of an unbounded group
// to reach n records, and stops its processes (each must end cleanly).
func finishUnbounded(t *testing.T, g *kafkatest.Group, out func() int, n int) {
	t.Helper()
	last := 0
	defer func() {
		if t.Failed() {
			t.Logf("output: %d records of %d", last, n)
		}
	}()
	g.WaitFor("every record", 2*time.Minute, func() bool {
		last = out()
		return last >= n
	})
	g.Stop(time.Minute)
}

// checkKeyOrder checks that the records of each key and input partition
// are in input order in the committed output (a record processed again after a failure must not
// show up out of order, or at all, unless its first write was aborted).
func checkKeyOrder(t *testing.T, addrs []string, topic string) {
	t.Helper()
	last := map[string]int64{}
	for _, v := range committedInOrder(t, addrs, topic) {
		f := strings.Split(v, ",")
		seq, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			t.Fatalf("malformed output %q", v)
		}
		k := f[0] + " from input partition " + f[3]
		if prev, ok := last[k]; ok && seq <= prev {
			t.Fatalf("key %s: seq %d after %d", k, seq, prev)
		}
		last[k] = seq
	}
}

// committedInOrder reads topic read_committed, partition by partition, in
// offset order (keys are partitioned, so per key this is write order).
func committedInOrder(t *testing.T, addrs []string, topic string) []string {
	t.Helper()
	return readAll(t, kafka.Source(addrs, []string{topic}, func(r *kgo.Record) (string, error) { return string(r.Value), nil },
		kafka.Bounded(), kafka.ReadCommitted()))
}

// TestGroupInProcessAndDescribe runs a group-mode job inside the test
// (one member), checks its output, and what DescribeGroup says of the
// group: the member, the partitions it owns, the committed offsets at the
// ends (no lag).
func TestGroupInProcessAndDescribe(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(4, "in"), seedTopics(2, "out"))
	evs := events(2000, 10)
	produce(t, addrs, "in", 4, evs)
	job := weir.NewJob("group-describe", weir.AppID("desc"), weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""))
	src := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent, kafka.ClientOptions(kgo.SessionTimeout(6*time.Second))),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
	weir.To(src, kafka.Sink(addrs, func(e event, r *kgo.Record) error {
		r.Value = encodeEvent(e)
		return nil
	}, kafka.DefaultTopic("out")))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitFor(t, "the output", time.Minute, func() bool { return len(committedValues(t, addrs, "out")) >= len(evs) })
	var want []string
	for _, e := range evs {
		want = append(want, string(encodeEvent(e)))
	}
	slices.Sort(want)
	sameOutput(t, "in-process group output", committedValues(t, addrs, "out"), want)

	var d *kafka.GroupDescription
	waitFor(t, "no lag", time.Minute, func() bool {
		var err error
		if d, err = kafka.DescribeGroup(context.Background(), addrs, "desc"); err != nil {
			t.Fatal(err)
		}
		if len(d.Partitions) != 4 {
			return false
		}
		for _, p := range d.Partitions {
			if p.Lag != 0 {
				return false
			}
		}
		return true
	})
	if d.State != "Stable" || len(d.Members) != 1 || len(d.Members[0].Assigned) != 4 || !strings.HasPrefix(d.Members[0].ClientID, "desc-") {
		t.Fatalf("description: %+v", d)
	}
	for _, p := range d.Partitions {
		if p.Owner != d.Members[0].ClientID || p.Committed != p.End || p.End != int64(len(evs)/4) {
			t.Fatalf("partition %+v: want owned by %s, committed at its end %d", p, d.Members[0].ClientID, len(evs)/4)
		}
	}
	var sb strings.Builder
	d.WriteText(&sb)
	if !strings.Contains(sb.String(), "group desc: Stable, 1 member(s)") || !strings.Contains(sb.String(), "in     0") {
		t.Errorf("text:\n%s", sb.String())
	}
	t.Logf("\n%s", sb.String())
}

// TestGroupRefusesWhatIsNotBuilt: in group mode a KeyBy goes through a
// repartition topic (behind a Union too: joins run, group_join_test.go;
// behind unions of unions and operators after a union,
// group_union_test.go; behind another keyed operator: chains run,
// group_chain_test.go), but one behind a redistributed stream
// (Rebalance) or behind a window's late events is refused, with an error
// that says so.
func TestGroupRefusesWhatIsNotBuilt(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(2, "in"))
	key := func(e event) string { return e.Key }
	for _, tc := range []struct {
		name, want string
		build      func(src *weir.Stream[event])
	}{
		{"rebalance", `"spread", whose input is redistributed`, func(src *weir.Stream[event]) {
			r := weir.Rebalance(weir.Union(src, src), weir.Name("spread"))
			weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(r, key), weir.Tumbling(time.Second)), weir.Count[event]()))
		}},
		{"late events", "a side output", func(src *weir.Stream[event]) {
			counts := weir.Aggregate(weir.Window(weir.KeyBy(src, key), weir.Tumbling(time.Second)), weir.Count[event](), weir.UID("counts"))
			late := weir.LateEvents[event](counts)
			weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(late, func(l weir.LateEvent[string, event]) string { return l.Key }),
				weir.Tumbling(time.Second)), weir.Count[weir.LateEvent[string, event]](), weir.UID("late-counts")))
		}},
	} {
		job := weir.NewJob("group-"+tc.name, weir.AppID("kb"))
		tc.build(weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent),
			weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) })))
		err := job.Run(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "group mode") {
			t.Errorf("%s: Run: %v, want a refusal saying %q", tc.name, err, tc.want)
		}
	}
}

// TestGroupBounded: two processes of a bounded group-mode job both exit
// once the group has committed every partition to its end, and the output
// equals a one-process run's. Which member reads what depends on the
// machine's speed: often the first reads all four partitions before the
// second has joined, so this also checks that a member that read nothing
// leaves when the group is done. That the input is shared is checked by
// the phased tests (TestGroupKillAndAdd, TestGroupUnionKill), which wait
// for both members to own partitions.
func TestGroupBounded(t *testing.T) {
	addrs := processCluster(t, seedTopics(4, "in"), seedTopics(2, "ref", "out"))
	evs := events(4000, 20)
	produce(t, addrs, "in", 4, evs)
	g := jobGroup(t, addrs, "gb", "--in", "in", "--out", "out", "--pace", "50", "--bounded")
	g.Start("a", "b")
	g.Wait(2 * time.Minute)
	want := reference(t, addrs, "ref", "--in", "in")
	if len(want) != len(evs) {
		t.Fatalf("reference run wrote %d records, want %d", len(want), len(evs))
	}
	sameOutput(t, "bounded group output", committedValues(t, addrs, "out"), want)
}
