package kafka_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/kafkatest"
)

// TestMain builds each program the tests start (internal/groupjob,
// internal/crashjob) once for all of them (crashtest.Build), from the
// start when the whole package runs.
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, "./internal/groupjob", "./internal/crashjob"))
}

// jobGroup is a group of internal/groupjob processes (kafkatest.Group)
// with app id app on the cluster at addrs: each member is started with
// args after the flags every group test gives (a session timeout of
// 1.5 s, so that a killed member's partitions move soon, and -v, whose
// log a failing test shows).
func jobGroup(t *testing.T, addrs []string, app string, args ...string) *kafkatest.Group {
	t.Helper()
	return jobGroupOf(t, addrs, app, func(string) []string { return args })
}

// jobGroupOf is jobGroup with arguments that depend on the member.
func jobGroupOf(t *testing.T, addrs []string, app string, args func(name string) []string) *kafkatest.Group {
	t.Helper()
	bin := groupJobBin(t)
	return kafkatest.NewGroup(t, bin, nil, func(name string) []string {
		return append([]string{"--brokers", strings.Join(addrs, ","), "--app-id", app, "--session-timeout", "1500ms", "-v"}, args(name)...)
	})
}

// reference runs internal/groupjob as one process (no app id), bounded,
// with args (its --in, --out, --keyed), and returns its committed output,
// sorted: what a group's output must equal.
func reference(t *testing.T, addrs []string, out string, args ...string) []string {
	t.Helper()
	kafkatest.Run(t, groupJobBin(t), append([]string{"--brokers", strings.Join(addrs, ","), "--out", out, "--bounded"}, args...)...)
	return committedValues(t, addrs, out)
}

// outputCount counts the committed records of topic whose value starts
// with prefix.
func outputCount(t *testing.T, addrs []string, topic, prefix string) func() int {
	return func() int {
		n := 0
		for _, v := range committedValues(t, addrs, topic) {
			if strings.HasPrefix(v, prefix) {
				n++
			}
		}
		return n
	}
}

// ownersOf are the members (client ids) that own a partition of topic in
// group app, nil if the group cannot be described yet.
func ownersOf(addrs []string, app, topic string) map[string]bool {
	d, err := kafka.DescribeGroup(context.Background(), addrs, app)
	if err != nil {
		return nil
	}
	return ownersIn(d, topic)
}

// describeGroup describes group app and logs it.
func describeGroup(t *testing.T, addrs []string, app string) *kafka.GroupDescription {
	t.Helper()
	d, err := kafka.DescribeGroup(context.Background(), addrs, app)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	d.WriteText(&sb)
	t.Logf("\n%s", sb.String())
	return d
}

// restoredSome reports whether describe shows a restore of key groups
// from a changelog of app (which one depends on when the input was read
// to its end: the note rides on the input offsets).
func restoredSome(d *kafka.GroupDescription, app string) bool {
	for _, r := range d.Restores {
		if strings.HasPrefix(r.Changelog, app+"-") && r.KeyGroups > 0 {
			return true
		}
	}
	return false
}

// victimIf is name if the moment of the kill has come, else "" (a
// kafkatest.KillMidRun's Victim).
func victimIf(now bool, name string) string {
	if now {
		return name
	}
	return ""
}

// processCluster skips the test in -short mode (it starts processes), and
// starts the cluster of a multi-process group test with opts (its
// topics): members ask for a session timeout of 1.5 s (jobGroup), which
// kfake allows with a floor of 1 s.
func processCluster(t *testing.T, opts ...clusterOpt) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("starts processes")
	}
	_, addrs := newCluster(t, append(opts, minSession())...)
	return addrs
}

// waitEveryMemberOwns waits for group app to be stable with n members,
// each owning a partition of every one of topics.
func waitEveryMemberOwns(g *kafkatest.Group, addrs []string, app string, n int, topics ...string) {
	g.WaitFor(fmt.Sprintf("%d members owning a partition of each of %v", n, topics), time.Minute, func() bool {
		d, err := kafka.DescribeGroup(context.Background(), addrs, app)
		if err != nil || d.State != "Stable" || len(d.Members) != n {
			return false
		}
		for _, m := range d.Members {
			for _, topic := range topics {
				if !slices.ContainsFunc(m.Assigned, func(p string) bool { return strings.HasPrefix(p, topic+"/") }) {
					return false
				}
			}
		}
		return true
	})
}

// waitCommittedTo waits for group app to have committed the offsets of
// the given partitions of topic at n (read through: what the test
// wrote there before).
func waitCommittedTo(g *kafkatest.Group, addrs []string, app, what string, n int64, topic string, partitions ...int32) {
	g.WaitFor(what, time.Minute, func() bool {
		d, err := kafka.DescribeGroup(context.Background(), addrs, app)
		if err != nil {
			return false
		}
		done := 0
		for _, p := range d.Partitions {
			if p.Topic == topic && slices.Contains(partitions, p.Partition) && p.Committed == n {
				done++
			}
		}
		return done == len(partitions)
	})
}

// flushTS is the time of the flush events of the phased kill tests
// (phasedInput.flush): an hour after the data, so that every watermark
// passes the data's windows while the flush events' own windows stay open.
const flushTS = base + int64(time.Hour/time.Millisecond)

// phasedTopic is an input topic of a phased kill test: its events, written
// round robin to its parts partitions, an equal share per phase.
type phasedTopic struct {
	name  string
	parts int
	evs   []event
}

// phasedInput feeds the unbounded inputs of a kill test in phases, so that
// the test's steps happen mid-run whatever the machine's speed: the test
// waits until the group has read a phase (its committed offsets at the
// phase's end: the state of the phase committed with them), then feeds
// the next one and kills at once, while the next phase is unread and the
// windows at the previous one's end are open in keyed state; once every
// phase is in, flush moves every watermark past the data. A paced test
// instead kills when the output reaches a share, which a slow or fast
// machine reaches at another point of the run.
type phasedInput struct {
	t      *testing.T
	addrs  []string
	phases int
	topics []phasedTopic
}

// feed writes phase k (from 0) of every topic and returns the offset at
// which the topic's partitions end now.
func (in phasedInput) feed(k int) map[string]int64 {
	in.t.Helper()
	ends := map[string]int64{}
	for _, tp := range in.topics {
		size := len(tp.evs) / in.phases
		if len(tp.evs)%in.phases != 0 || size%tp.parts != 0 {
			in.t.Fatalf("%s: %d events do not split into %d phases of whole rounds over %d partitions", tp.name, len(tp.evs), in.phases, tp.parts)
		}
		produce(in.t, in.addrs, tp.name, tp.parts, tp.evs[k*size:(k+1)*size])
		ends[tp.name] = int64((k + 1) * size / tp.parts)
	}
	return ends
}

// flush writes one event per partition of every topic at flushTS, with
// the key "zz-flush-<topic>" (two inputs' flush events never pair in a
// join).
func (in phasedInput) flush() {
	in.t.Helper()
	for i, tp := range in.topics {
		for p := range tp.parts {
			e := event{Key: "zz-flush-" + tp.name, TS: flushTS, Seq: int64(9_000_000 + 100*i + p)}
			produceTo(in.t, in.addrs, tp.name, int32(p), []event{e})
		}
	}
}

// waitRead waits for group app to have committed every partition of the
// inputs at ends (feed's), and for cond (nil: none) on the group's
// description.
func (in phasedInput) waitRead(g *kafkatest.Group, app, what string, ends map[string]int64, cond func(*kafka.GroupDescription) bool) {
	in.t.Helper()
	want := 0
	for _, tp := range in.topics {
		want += tp.parts
	}
	var last *kafka.GroupDescription
	defer func() {
		if in.t.Failed() && last != nil {
			var sb strings.Builder
			last.WriteText(&sb)
			in.t.Logf("the group when the wait ended:\n%s", sb.String())
		}
	}()
	g.WaitFor(what, 2*time.Minute, func() bool {
		d, err := kafka.DescribeGroup(context.Background(), in.addrs, app)
		if err != nil {
			return false
		}
		last = d
		n := 0
		for _, p := range d.Partitions {
			if e, ok := ends[p.Topic]; ok {
				if p.Committed != e {
					return false
				}
				n++
			}
		}
		return n == want && (cond == nil || cond(d))
	})
	g.Logf("%s", what)
}

// ownersIn are the members (client ids) that own a partition of topic in
// d.
func ownersIn(d *kafka.GroupDescription, topic string) map[string]bool {
	owners := map[string]bool{}
	for _, p := range d.Partitions {
		if p.Topic == topic && p.Owner != "" {
			owners[p.Owner] = true
		}
	}
	return owners
}

// ownerOf is the member (client id) that owns partition of topic in d,
// "" if none.
func ownerOf(d *kafka.GroupDescription, topic string, partition int32) string {
	for _, p := range d.Partitions {
		if p.Topic == topic && p.Partition == partition {
			return p.Owner
		}
	}
	return ""
}

// liveStatePartitions are the partitions of changelog topic whose
// committed records hold a key group's state (its last record is no
// tombstone): where a keyed operator's open state is.
func liveStatePartitions(t *testing.T, addrs []string, topic string) []int32 {
	t.Helper()
	type pk struct {
		p int32
		k string
	}
	live := map[pk]bool{}
	for _, r := range readRecords(t, addrs, topic) {
		live[pk{r.partition, r.key}] = len(r.value) > 0
	}
	var out []int32
	for k, ok := range live {
		if ok && !slices.Contains(out, k.p) {
			out = append(out, k.p)
		}
	}
	slices.Sort(out)
	return out
}

// withoutFlush are the rows that do not name a flush event's key
// (phasedInput.flush).
func withoutFlush(rows []string) []string {
	var out []string
	for _, r := range rows {
		if !strings.Contains(r, "zz-flush") {
			out = append(out, r)
		}
	}
	return out
}

// finishPhased waits for the committed output of a phased kill test's
// group (topic) to reach want's rows and extra more (the flush events'),
// stops the group's processes (each must end cleanly) and returns the
// rows but the flush events'. If the wait fails it shows how the output
// differs from want (a lost state shows as rows missing, and the count
// never reached).
func finishPhased(t *testing.T, g *kafkatest.Group, addrs []string, topic string, want []string, extra int) []string {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("when the wait ended: %s", outputDiff(withoutFlush(committedValues(t, addrs, topic)), want))
		}
	}()
	finishUnbounded(t, g, outputCount(t, addrs, topic, ""), len(want)+extra)
	return withoutFlush(committedValues(t, addrs, topic))
}
