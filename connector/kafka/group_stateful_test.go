package kafka_test

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/connector/kafka"
)

// TestGroupStatefulRepartition joins the repartition topics and the
// changelogs: a keyed stateful job (per key a running count in a
// ValueState, and a count per key and tumbling second of event time) over
// a four-partition input runs in group mode as real processes. Its KeyBys
// go through repartition topics of four partitions; each keyed operator's
// state lives in a changelog of four partitions, a process owning the key
// groups of the repartition partitions it is assigned. Process a is
// SIGKILLed mid-run and started again at once, and a third process joins
// while the job runs: each time the repartition partitions move, and the
// counts and the open windows must move with them (restored from the
// changelogs, the repartition readers continuing from the offsets and
// per-task watermarks committed in the same transactions). The output,
// read read_committed, must equal a one-process run's exactly. (With the
// restore disabled, the running counts start again from zero after a
// move, and the test fails.) The group's processes keep their keyed state
// in Pebble (Kafka Streams' RocksDB stores with their changelogs), each
// in a state directory of its own; the reference run keeps it on the heap.
func TestGroupStatefulRepartition(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := groupJobBin(t)
	_, addrs := newCluster(t, seedTopics(4, "sin"), seedTopics(2, "sref", "sout"),
		minSession())
	// 12 keys over 4 partitions: event i has key 7i mod 12 and partition
	// i mod 4, so each key lives in one input partition and its running
	// count does not depend on how partitions interleave.
	const n, parts = 16000, 4
	evs := events(n, 12)
	produce(t, addrs, "sin", parts, evs)
	brokers := strings.Join(addrs, ",")
	group := func(name string) *groupProc {
		return startGroupProc(t, bin, name, "--brokers", brokers, "--app-id", "sg", "--in", "sin", "--out", "sout",
			"--keyed", "state", "--bounded", "--session-timeout", "1500ms", "--pace", "1", "-v",
			"--state-backend", "pebble", "--state-dir", t.TempDir())
	}
	counts := func() int {
		c := 0
		for _, v := range committedValues(t, addrs, "sout") {
			if strings.HasPrefix(v, "count,") {
				c++
			}
		}
		return c
	}
	a, b := group("a"), group("b")
	waitFor(t, "a quarter of the counts committed, both processes owning a counts repartition partition", 2*time.Minute, func() bool {
		d, err := kafka.DescribeGroup(context.Background(), addrs, "sg")
		if err != nil {
			return false
		}
		owners := map[string]bool{}
		for _, p := range d.Partitions {
			if p.Topic == kafka.RepartitionTopic("sg", "counts") {
				owners[p.Owner] = true
			}
		}
		return owners["sg-a"] && owners["sg-b"] && counts() >= n/4
	})
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	a.done <- nil
	killedAt := counts()
	if killedAt >= n*3/4 {
		t.Fatalf("%d of %d counts committed before the kill: too late for the test to prove much", killedAt, n)
	}
	// Started again at once with its instance id: it fences its dead
	// predecessor's open transaction.
	a = group("a")
	// A third process joins while the job runs (the partitions move
	// again, before or after a's restart has settled).
	c := group("c")
	if got := counts(); got >= n {
		t.Fatalf("all counts committed before c joined: the test proves nothing")
	}
	for _, p := range []*groupProc{a, b, c} {
		select {
		case err := <-p.done:
			p.done <- err
			if err != nil {
				t.Fatalf("process %s: %v", p.name, err)
			}
		case <-time.After(3 * time.Minute): // a deadline, not a wait for a result
			t.Fatalf("process %s did not end", p.name)
		}
	}
	got := committedValues(t, addrs, "sout")

	if out, err := exec.Command(bin, "--brokers", brokers, "--in", "sin", "--out", "sref", "--keyed", "state", "--bounded").CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	want := committedValues(t, addrs, "sref")
	if len(want) < n {
		t.Fatalf("reference run wrote %d records, want at least %d", len(want), n)
	}
	sameOutput(t, "stateful group output", got, want)

	d, err := kafka.DescribeGroup(context.Background(), addrs, "sg")
	if err != nil {
		t.Fatal(err)
	}
	// Describe shows the restore of the local run that last committed
	// each input partition's offset (the note rides on the input
	// offsets): some run restored key groups, but which changelog's
	// depends on when the input was read to its end.
	restored := false
	for _, r := range d.Restores {
		if strings.HasPrefix(r.Changelog, "sg-") && r.KeyGroups > 0 {
			restored = true
		}
	}
	if !restored {
		t.Errorf("describe shows no restore of key groups: %+v", d.Restores)
	}
	for _, uid := range []string{"counts", "windows"} {
		topic := kafka.ChangelogTopic("sg", uid)
		byPart := map[int32]int{}
		for _, r := range readRecords(t, addrs, topic) {
			byPart[r.partition]++
		}
		if len(byPart) != parts {
			t.Errorf("%s: records in partitions %v, want all %d (the repartition topic's)", topic, byPart, parts)
		}
	}
	var sb strings.Builder
	d.WriteText(&sb)
	t.Logf("\n%s", sb.String())
}
