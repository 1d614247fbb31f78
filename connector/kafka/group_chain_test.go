package kafka_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// chainJob is the chain of KeyBys of the group tests, Nexmark q5's shape:
// events counted per key and hopping window (2s, sliding 1s), then the
// counts keyed by their window's end and, per end, the largest count
// (ties: the largest key), as "end=count key". The second KeyBy follows
// a keyed operator: in group mode it crosses processes through its own
// repartition topic, whose upstream tasks are the first topic's
// partitions.
func chainJob(src *weir.Stream[event], sink weir.Sink[string]) {
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e event) string { return e.Key }), weir.Hopping(2*time.Second, time.Second)),
		weir.Count[event](), weir.UID("hop"))
	best := weir.Aggregate(weir.Window(weir.KeyBy(counts, func(r weir.WindowResult[string, int64]) int64 { return r.End.UnixMilli() }), weir.Tumbling(time.Second)),
		weir.Max(func(r weir.WindowResult[string, int64]) string { return fmt.Sprintf("%06d %s", r.Value, r.Key) }), weir.UID("best"))
	weir.To(weir.Map(best, func(r weir.WindowResult[int64, string]) string { return fmt.Sprintf("%d=%s", r.Key, r.Value) }), sink)
}

// chainModel is chainJob's output computed in plain Go, sorted.
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
	best := map[int64]string{}
	for k, n := range counts {
		if v := fmt.Sprintf("%06d %s", n, k.k); v > best[k.end] {
			best[k.end] = v
		}
	}
	var out []string
	for end, v := range best {
		out = append(out, fmt.Sprintf("%d=%s", end, v))
	}
	slices.Sort(out)
	return out
}

// TestGroupChainInProcess: a bounded chain of KeyBys (chainJob) in group
// mode in the test process ends by itself with the model's output; each
// KeyBy has its own repartition topic (the second one with the first
// one's partition count).
func TestGroupChainInProcess(t *testing.T) {
	_, addrs := newCluster(t, kfake.SeedTopics(4, "in"), kfake.SeedTopics(2, "out"))
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
	src := weir.FromSource(job, "in", kafka.Source(addrs, []string{"in"}, decodeEvent, kafka.Bounded(), kafka.ReadCommitted(),
		kafka.ClientOptions(kgo.SessionTimeout(6*time.Second))),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }))
	chainJob(src, kafka.Sink(addrs, func(v string, rec *kgo.Record) error {
		rec.Value = append(rec.Value, v...)
		return nil
	}, kafka.DefaultTopic("out")))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run returned only when its context ended")
	}
	sameOutput(t, "chain of KeyBys", committedValues(t, addrs, "out"), chainModel(evs))
	checkRepartitionTopic(t, addrs, "ch-hop-repartition", 4)
	checkRepartitionTopic(t, addrs, "ch-best-repartition", 4)
}
