package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/internal/jobshapes"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// Group mode behind unions (docs/scale-out.md, root exchange.go): a KeyBy
// behind a union of a union, and one behind one-input operators after a
// union, are cut on the unions' branches: a writer after each branch (the
// operators copied onto it), all into the keyed operator's one
// repartition topic, whose readers wait for the tasks of every branch.

// unionModel is jobshapes.Union's output computed in plain Go, sorted.
func unionModel(left, right []event) []string {
	counts := map[string]int{}
	add := func(tag, key string, ts int64) { counts[fmt.Sprintf("%s,%s,%d", tag, key, ts-ts%1000)]++ }
	for _, e := range left {
		add("n", e.Key, e.TS)
		add("n", "x"+e.Key, e.TS)
	}
	for _, e := range right {
		add("n", e.Key, e.TS)
	}
	for _, e := range append(slices.Clone(left), right...) {
		if e.Seq%5 != 0 {
			add("m", "g"+strconv.FormatInt(e.Seq%3, 10), e.TS)
		}
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s,%d", k, n))
	}
	slices.Sort(out)
	return out
}

// unionRight are n events of the right input: every 20 ms from base (half
// the left's rate, over the same time), keys r0..r6, seqs from 1,000,000.
func unionRight(n int) []event {
	out := make([]event, n)
	for i := range out {
		out[i] = event{Key: "r" + strconv.Itoa((i*3)%7), TS: base + int64(i)*20, Seq: 1_000_000 + int64(i)}
	}
	return out
}

// unionStringSink writes strings to topic, keyed by their second field.
func unionStringSink(addrs []string, topic string) weir.Sink[string] {
	return kafka.Sink(addrs, func(v string, rec *kgo.Record) error {
		rec.Key = append(rec.Key, strings.Split(v, ",")[1]...)
		rec.Value = append(rec.Value, v...)
		return nil
	}, kafka.DefaultTopic(topic))
}

// unionPartitions is the number of partitions of topic (0: no such topic).
func unionPartitions(t *testing.T, addrs []string, topic string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := newAdmin(t, addrs).ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := d[topic]
	if !ok || td.Err != nil {
		return 0
	}
	return len(td.Partitions)
}

// TestGroupUnionInProcess: both shapes, bounded, in group mode in the test
// process: the job ends by itself with the model's counts; each keyed
// operator has one repartition topic (the larger input's four partitions)
// whose readers wait for every branch's tasks (left 4 + right 2 + left
// again 4; left 4 + right 2).
func TestGroupUnionInProcess(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(4, "ul"), seedTopics(2, "ur", "uout"))
	left, right := events(2000, 12), unionRight(1000)
	produce(t, addrs, "ul", 4, left)
	produce(t, addrs, "ur", 2, right)
	var logs weirtest.LockedBuffer
	defer func() {
		if t.Failed() {
			t.Logf("job log:\n%s", logs.String())
		}
	}()
	job := weir.NewJob("group-union", weir.AppID("ui"), weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""),
		weir.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	src := func(topic string) *weir.Stream[event] {
		return boundedGroupSource(job, addrs, topic, weir.UID(topic))
	}
	jobshapes.Union(src("ul"), src("ur"), unionStringSink(addrs, "uout"))
	runBoundedGroup(t, job, time.Minute)
	sameOutput(t, "both union shapes", committedValues(t, addrs, "uout"), unionModel(left, right))
	for _, x := range []struct {
		uid   string
		tasks int
	}{{"nested", 10}, {"mapped", 6}} {
		topic := kafka.RepartitionTopic("ui", x.uid)
		if n := unionPartitions(t, addrs, topic); n != 4 {
			t.Errorf("%s: %d partitions, want 4", topic, n)
		}
		if want := fmt.Sprintf("topic=%s partitions=4 upstream-tasks=%d", topic, x.tasks); !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q", want)
		}
	}
}

// TestGroupUnionKill runs both shapes (internal/groupjob's "union",
// jobshapes.Union) as real processes over two unbounded inputs of four
// and two partitions, fed in phases (phasedInput) so that each step
// happens mid-run whatever the machine's speed: phase 1 goes in, two
// processes start and read it (both owning partitions of the left input;
// the windows of the phase's last second stay open, in keyed state);
// phase 2 goes in and the owner of the left input's partition 0 is
// SIGKILLed at once and started again (its open transaction aborted, its
// repartition partitions and their open windows moved and restored from
// the changelogs); once phase 2 is read, phase 3 goes in, with one event
// per partition an hour later that moves every watermark past the data.
// The counts read read_committed equal the model's and a one-process
// run's exactly.
func TestGroupUnionKill(t *testing.T) {
	addrs := processCluster(t, seedTopics(4, "kl"), seedTopics(2, "kr", "kref", "kout"))
	const phase = 1200 // left events; the right has half as many over the same time
	left, right := events(3*phase, 12), unionRight(3*phase/2)
	want := unionModel(left, right)
	in := phasedInput{t: t, addrs: addrs, phases: 3, topics: []phasedTopic{{"kl", 4, left}, {"kr", 2, right}}}
	g := jobGroup(t, addrs, "uk", "--in", "kl", "--in2", "kr", "--out", "kout", "--keyed", "union", "--batch-size", "16")
	out := outputCount(t, addrs, "kout", "")
	ends := in.feed(0)
	g.Start("a", "b")
	var victim string
	in.waitRead(g, "uk", "phase 1 read, both processes owning partitions of the left input, part of its output committed", ends,
		func(d *kafka.GroupDescription) bool {
			owners := ownersIn(d, "kl")
			victim = strings.TrimPrefix(ownerOf(d, "kl", 0), "uk-")
			return owners["uk-a"] && owners["uk-b"] && out() >= len(unionModel(left[:phase], right[:phase/2]))/2
		})
	killedAt := out()
	ends = in.feed(1)
	g.Kill(victim)
	g.Start(victim)
	in.waitRead(g, "uk", "phase 2 read", ends, nil)
	in.feed(2)
	in.flush()
	got := finishPhased(t, g, addrs, "kout", want, 0)
	t.Logf("killed %s with %d of %d rows committed; %d rows in the end", victim, killedAt, len(want), len(got))
	sameOutput(t, "union shapes in group mode against the model", got, want)

	// The one-process run over the same input (no app id, bounded): its
	// end fires the flush events' windows too, which the group never
	// fires (its input does not end).
	var ref []string
	for _, r := range reference(t, addrs, "kref", "--in", "kl", "--in2", "kr", "--keyed", "union") {
		if s, _ := strconv.ParseInt(strings.Split(r, ",")[2], 10, 64); s < flushTS {
			ref = append(ref, r)
		}
	}
	sameOutput(t, "union shapes in group mode against a one-process run", got, ref)
	d := describeGroup(t, addrs, "uk")
	// The windows open at the kill were restored from the changelogs by
	// whichever process took their key groups.
	restored := false
	for _, r := range d.Restores {
		if strings.HasPrefix(r.Changelog, "uk-nested-") || strings.HasPrefix(r.Changelog, "uk-mapped-") {
			restored = restored || r.KeyGroups > 0
		}
	}
	if !restored {
		t.Errorf("no process restored key groups of the union shapes' changelogs: %+v", d.Restores)
	}
}
