package kafka_test

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/internal/jobshapes"
)

// chainModel is jobshapes.Chain's output computed in plain Go, sorted.
func chainModel(evs []event) []string {
	type kw struct {
		k   string
		end int64
	}
	counts := map[kw]int{}
	for _, e := range evs {
		s := e.TS - e.TS%1000
		counts[kw{e.Key, s + 1000}]++
		counts[kw{e.Key, s + 2000}]++
	}
	sum, best := map[int64]int{}, map[int64]string{}
	for k, n := range counts {
		b := (k.end - 1) - (k.end-1)%5000
		sum[b] += n
		best[b] = max(best[b], fmt.Sprintf("%06d %s", n, k.k))
	}
	var out []string
	for b, v := range best {
		out = append(out, fmt.Sprintf("%d=%d %s", b, sum[b], v))
	}
	slices.Sort(out)
	return out
}

// TestGroupChainInProcess: a bounded chain of KeyBys (jobshapes.Chain) in group
// mode in the test process ends by itself with the model's output; each
// KeyBy has its own repartition topic (the second one with the first
// one's partition count).
func TestGroupChainInProcess(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(4, "in"), seedTopics(2, "out"))
	evs := events(3000, 10)
	produce(t, addrs, "in", 4, evs)
	var logs syncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("job log:\n%s", logs.String())
		}
	}()
	job := weir.NewJob("group-chain", weir.AppID("ch"), weir.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""))
	src := boundedGroupSource(job, addrs, "in")
	jobshapes.Chain(src, 0, kafka.Sink(addrs, func(v string, rec *kgo.Record) error {
		rec.Value = append(rec.Value, v...)
		return nil
	}, kafka.DefaultTopic("out")))
	runBoundedGroup(t, job, time.Minute)
	sameOutput(t, "chain of KeyBys", committedValues(t, addrs, "out"), chainModel(evs))
	checkRepartitionTopic(t, addrs, "ch-hop-repartition", 4)
	checkRepartitionTopic(t, addrs, "ch-best-repartition", 4)
}

// TestGroupChainKill runs the chain of KeyBys (internal/groupjob's
// "chain", jobshapes.Chain) as real processes over an unbounded
// four-partition input fed in phases (phasedInput), so that the kill
// lands mid-run whatever the machine's speed: phase 1 goes in and two
// processes read it, both owning a partition of the second stage's
// repartition topic, and output every bucket of the phase but the last: a
// phase ends at 38 s of event time, mid-bucket, so the second stage holds
// that bucket open (the first stage its last windows) in its committed
// state. Phase 2 goes in, and the process owning that
// open bucket's partition is SIGKILLed at once and started again, and a
// third joins: both stages' partitions, key groups and open windows move,
// the second stage's from its own changelog, its readers continuing from
// the per-task watermarks (one per first-stage partition) committed with
// their offsets. Once phase 2 is read, with the third process owning a
// second-stage partition, phase 3 goes in with the flush events. The
// output read read_committed equals the model's and a one-process run's
// exactly.
func TestGroupChainKill(t *testing.T) {
	addrs := processCluster(t, seedTopics(4, "cin"), seedTopics(2, "cref", "cout"))
	const phase, parts = 3800, 4 // 38 s of event time a phase
	evs := events(3*phase, 12)
	want := chainModel(evs)
	in := phasedInput{t: t, addrs: addrs, phases: 3, topics: []phasedTopic{{"cin", parts, evs}}}
	g := jobGroup(t, addrs, "cg", "--in", "cin", "--out", "cout", "--keyed", "chain", "--batch-size", "16")
	out := outputCount(t, addrs, "cout", "")
	stage2 := kafka.RepartitionTopic("cg", "best")
	ends := in.feed(0)
	g.Start("a", "b")
	// Every bucket of phase 1 but the open one: the second stage has
	// caught up with the first.
	fired := len(chainModel(evs[:phase])) - 1
	var victim string
	in.waitRead(g, "cg", "phase 1 read and its buckets output, both processes owning a second-stage partition, one of them the open bucket's", ends,
		func(d *kafka.GroupDescription) bool {
			owners := ownersIn(d, stage2)
			if !owners["cg-a"] || !owners["cg-b"] || out() < fired {
				return false
			}
			live := liveStatePartitions(t, addrs, kafka.ChangelogTopic("cg", "best"))
			if len(live) == 0 {
				return false
			}
			victim = strings.TrimPrefix(ownerOf(d, stage2, live[0]), "cg-")
			return victim != ""
		})
	killedAt := out()
	ends = in.feed(1)
	g.Kill(victim)
	g.Start(victim, "c")
	in.waitRead(g, "cg", "phase 2 read, c owning a second-stage partition", ends, func(d *kafka.GroupDescription) bool {
		return ownersIn(d, stage2)["cg-c"]
	})
	in.feed(2)
	in.flush()
	got := finishPhased(t, g, addrs, "cout", want, 0)
	t.Logf("killed %s with %d of %d rows committed; %d rows in the end", victim, killedAt, len(want), len(got))
	sameOutput(t, "chain group output against the model", got, want)
	// The one-process run (bounded) also fires the flush events' bucket.
	ref := withoutFlush(reference(t, addrs, "cref", "--in", "cin", "--keyed", "chain"))
	sameOutput(t, "chain group output against a one-process run", got, ref)
	checkRepartitionTopic(t, addrs, stage2, parts)
	if d := describeGroup(t, addrs, "cg"); !restoredSome(d, "cg") {
		t.Errorf("describe shows no restore of key groups: %+v", d.Restores)
	}
}

// TestGroupChainWatermark: the second stage's watermark is the minimum
// over every first-stage task (each partition of the first repartition
// topic), whichever process runs it. Two processes run the chain, no
// kills; process b's first stage lags (--lag: a sleep per first-stage
// result, between the hop counts and the second KeyBy), so a's markers
// for its first-stage tasks run seconds of event time ahead of b's
// results. The output must equal the model's: a second-stage reader whose
// watermark followed a's tasks without waiting for b's would fire the
// buckets before b's counts arrive, and drop them as late.
func TestGroupChainWatermark(t *testing.T) {
	addrs := processCluster(t, seedTopics(4, "win"), seedTopics(2, "wout"))
	evs := events(4000, 12)
	produce(t, addrs, "win", 4, evs)
	g := jobGroupOf(t, addrs, "cw", func(name string) []string {
		args := []string{"--in", "win", "--out", "wout", "--keyed", "chain", "--bounded"}
		if name == "b" {
			args = append(args, "--lag", "20ms")
		}
		return args
	})
	g.Start("a", "b")
	g.Wait(3 * time.Minute)
	// The lagging process ran first-stage tasks (its local runs name the
	// first stage's changelog partitions they own), or the test proves
	// nothing.
	if !strings.Contains(g.Proc("b").Stderr.String(), "cw-hop-changelog [") {
		t.Fatalf("process b never owned a partition of the first stage")
	}
	sameOutput(t, "chain with a lagging first stage", committedValues(t, addrs, "wout"), chainModel(evs))
}

// TestGroupChainOverJoinInProcess: an aggregation over a join (a chain
// whose first stage is a two-input keyed operator): a window join of two
// topics over tumbling seconds, then its pairs keyed by window start and
// counted per tumbling second, bounded, in the test process. The second
// topic's upstream tasks are the join topic's partitions; the counts
// equal the model's.
func TestGroupChainOverJoinInProcess(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(4, "l", "r"), seedTopics(2, "out"))
	left, right := joinSide(1500, 20, 0, 0, 0), joinSide(1500, 20, 1, 100_000, 5)
	produce(t, addrs, "l", 4, left)
	produce(t, addrs, "r", 4, right)
	var logs syncBuffer
	defer func() {
		if t.Failed() {
			t.Logf("job log:\n%s", logs.String())
		}
	}()
	job := weir.NewJob("group-chain-join", weir.AppID("cj"), weir.Parallelism(2), weir.Checkpointing(20*time.Millisecond, ""),
		weir.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	src := func(topic string) *weir.KeyedStream[string, event] {
		s := boundedGroupSource(job, addrs, topic, weir.UID(topic))
		return weir.KeyBy(s, func(e event) string { return e.Key })
	}
	type pair struct{ Start int64 }
	pairs := weir.WindowJoin(src("l"), src("r"), weir.Tumbling(time.Second), func(k string, w weir.WindowInfo, l, r event) pair {
		return pair{w.Start.UnixMilli()}
	}, weir.UID("wjoin"))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(pairs, func(p pair) int64 { return p.Start }), weir.Tumbling(time.Second)),
		weir.Count[pair](), weir.UID("per-second"))
	weir.To(counts, kafka.Sink(addrs, func(r weir.WindowResult[int64, int64], rec *kgo.Record) error {
		rec.Value = fmt.Appendf(rec.Value, "%d=%d", r.Key, r.Value)
		return nil
	}, kafka.DefaultTopic("out")))
	runBoundedGroup(t, job, time.Minute)
	perSecond := map[string]int{}
	for _, p := range windowJoinModel(left, right) {
		perSecond[strings.Split(p, ",")[2]]++ // wjoin,key,start,...
	}
	var want []string
	for s, n := range perSecond {
		want = append(want, fmt.Sprintf("%s=%d", s, n))
	}
	slices.Sort(want)
	if len(want) < 10 {
		t.Fatalf("model: %d seconds with pairs; the test wants more", len(want))
	}
	sameOutput(t, "pairs per second over a window join", committedValues(t, addrs, "out"), want)
	checkRepartitionTopic(t, addrs, "cj-per-second-repartition", 4)
}
