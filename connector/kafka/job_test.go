package kafka_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/crashtest"
)

// countingJob reads events from topic in, counts them per key per second
// of event time, and writes "key@start=count" records to topic out with
// the given sink options. fail, if not nil, is called for every event and
// panics to inject a failure.
func countingJob(addrs []string, in, out, ckDir string, p int, fail func(event), srcOpts []kafka.SourceOption, sinkOpts ...kafka.SinkOption) *weir.Job {
	opts := []weir.JobOption{weir.Parallelism(p),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxFailures: 100, Interval: time.Hour})}
	if ckDir != "" {
		opts = append(opts, weir.Checkpointing(20*time.Millisecond, ckDir))
	}
	job := weir.NewJob("kafka-counting", opts...)
	src := weir.FromSource(job, "events", kafka.Source(addrs, []string{in}, decodeEvent, append([]kafka.SourceOption{kafka.Bounded()}, srcOpts...)...),
		weir.BoundedOutOfOrderness(100*time.Millisecond, func(e event) time.Time { return time.UnixMilli(e.TS) }), weir.UID("events"))
	if fail != nil {
		src = weir.Map(src, func(e event) event { fail(e); return e })
	}
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e event) string { return e.Key }), weir.Tumbling(time.Second)),
		weir.Count[event](), weir.UID("counts"))
	weir.To(counts, kafka.Sink(addrs, func(r weir.WindowResult[string, int64], rec *kgo.Record) error {
		rec.Key = append(rec.Key, r.Key...)
		rec.Value = fmt.Appendf(rec.Value, "%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
		return nil
	}, append([]kafka.SinkOption{kafka.DefaultTopic(out)}, sinkOpts...)...), weir.UID("sink"))
	return job
}

// The end-to-end exactly-once test: Kafka in, keyed windows, Kafka out in
// transactions, with failures injected mid-stream and the job restarting
// from its checkpoints. read_committed output equals the model (and so the
// failure-free run): nothing lost, nothing doubled.
func TestExactlyOnceJobWithFailures(t *testing.T) {
	_, addrs := newCluster(t, seedTopics(4, "in"), seedTopics(3, "out", "ref", "alo"))
	evs := events(20000, 40)
	produce(t, addrs, "in", 4, evs)
	want := windowCounts(evs)

	// The failure-free run.
	ref := countingJob(addrs, "in", "ref", t.TempDir(), 2, nil, nil,
		kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix("ref"))
	if err := ref.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sameOutput(t, "failure-free run", committedValues(t, addrs, "ref"), want)

	// Fail three times, at events spread over the input; pace the input
	// so that checkpoints complete in between.
	failAt := map[int64]bool{4000: true, 9000: true, 15000: true}
	var failures atomic.Int64
	var seen [20000]atomic.Bool
	fail := func(e event) {
		// Pacing on purpose, not waiting for a result: it spreads the
		// input over ≥ 100ms so that periodic checkpoints fall between
		// the failures.
		if e.Seq%200 == 0 {
			time.Sleep(time.Millisecond)
		}
		if failAt[e.Seq] && !seen[e.Seq].Swap(true) {
			failures.Add(1)
			panic(fmt.Sprintf("injected failure at event %d", e.Seq))
		}
	}
	job := countingJob(addrs, "in", "out", t.TempDir(), 2, fail, nil,
		kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix("eo"))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := failures.Load(); n != 3 {
		t.Fatalf("%d failures injected, want 3", n)
	}
	m := &job.Metrics().Checkpoints
	if m.Restarts != 3 || m.Completed < 4 {
		t.Fatalf("%d restarts, %d checkpoints: the failures did not restore checkpoints", m.Restarts, m.Completed)
	}
	sameOutput(t, "run with failures", committedValues(t, addrs, "out"), want)
	t.Logf("%d windows, %d checkpoints, %d restarts", len(want), m.Completed, m.Restarts)

	// The same with at-least-once: nothing lost, but duplicates are
	// allowed (and expected).
	failures.Store(0)
	for i := range seen {
		seen[i].Store(false)
	}
	alo := countingJob(addrs, "in", "alo", t.TempDir(), 2, fail, nil, kafka.DeliveryGuarantee(kafka.AtLeastOnce))
	if err := alo.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := committedValues(t, addrs, "alo")
	if missing := crashtest.Minus(want, got); len(missing) > 0 {
		t.Fatalf("at-least-once lost %d records (first %q); %d records, %d unexpected (first %q)", len(missing), missing[:5], len(got), len(crashtest.Minus(got, want)), crashtest.Minus(got, want)[:5])
	}
	if extra := crashtest.Minus(got, want); len(extra) > 0 && !strings.Contains(extra[0], "@") {
		t.Fatalf("at-least-once produced records that are not window counts: %q", extra[0])
	}
}
