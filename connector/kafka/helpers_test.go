package kafka_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/internal/jobshapes"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/kafkatest"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// clusterOpt is an option of newCluster: topics to create, or a kfake
// option.
type clusterOpt struct {
	kf     kfake.Opt
	parts  int32
	topics []string
	// kfakeOnly marks an option of a kfake feature the tests do not set
	// up on weir broker (SASL users, TLS): under WEIR_KAFKA=weir such a
	// test is skipped.
	kfakeOnly bool
}

// seedTopics creates topics of n partitions (kfake.SeedTopics).
func seedTopics(n int32, names ...string) clusterOpt {
	return clusterOpt{kf: kfake.SeedTopics(n, names...), parts: n, topics: names}
}

// minSession lets group members have session timeouts down to a second.
func minSession() clusterOpt { return clusterOpt{kf: kfake.GroupMinSessionTimeout(time.Second)} }

// kfakeOpt is another kfake option (see kfakeOnly).
func kfakeOpt(o kfake.Opt) clusterOpt { return clusterOpt{kf: o, kfakeOnly: true} }

// newCluster starts an in-process kfake cluster on loopback (kfake listens
// on 127.0.0.1) with the given topics, closed at the end of the test.
// Under WEIR_KAFKA=weir it starts weir's own broker (package broker, `weir
// broker`) instead, with the same topics, and returns a nil cluster: every
// test that takes its cluster from here runs against either (docs/broker.md).
func newCluster(t testing.TB, opts ...clusterOpt) (*kfake.Cluster, []string) {
	t.Helper()
	if os.Getenv("WEIR_KAFKA") == "weir" {
		topics := map[string]int{}
		for _, o := range opts {
			if o.kfakeOnly {
				t.Skip("WEIR_KAFKA=weir: this test uses a kfake feature (SASL users or TLS) not set up on weir broker here")
			}
			for _, name := range o.topics {
				topics[name] = int(o.parts)
			}
		}
		return nil, weirBroker(t, topics)
	}
	kopts := make([]kfake.Opt, len(opts))
	for i, o := range opts {
		kopts[i] = o.kf
	}
	return kafkatest.Cluster(t, kopts...)
}

// freePort returns a loopback port nobody listens on (right now).
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// event is the input of the job tests: key k, event time ts (ms), seq
// (and, decoded, the partition it was read from).
type event = jobshapes.Event

const base = int64(1_700_000_000_000)

// events are n events over `parts` partitions: event i goes to partition
// i % parts with time base + i*10ms, so each partition's times increase
// and no event is late whatever the interleaving of partitions (the
// combined watermark never passes a partition's own next event).
func events(n, keys int) []event {
	out := make([]event, n)
	for i := range out {
		out[i] = event{Key: "k" + strconv.Itoa((i*7)%keys), TS: base + int64(i)*10, Seq: int64(i)}
	}
	return out
}

func encodeEvent(e event) []byte {
	return fmt.Appendf(nil, "%s,%d,%d", e.Key, e.TS, e.Seq)
}

// decodeEvent decodes a "key,ts,seq" record (jobshapes.Decode).
func decodeEvent(r *kgo.Record) (event, error) { return jobshapes.Decode(r) }

// produce writes evs to topic, event i to partition i % parts, and waits
// for the acknowledgements.
func produce(t testing.TB, addrs []string, topic string, parts int, evs []event) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var failed atomic.Value
	for i, e := range evs {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(i % parts), Key: []byte(e.Key), Value: encodeEvent(e),
			Timestamp: time.UnixMilli(e.TS)}, func(r *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := failed.Load(); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// readAll reads every partition of topics to its end as of now, through
// the source under test without a job (Splits, Open, Read until EOF).
func readAll[T any](t testing.TB, src weir.Source[T]) []T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	splits, err := src.Splits(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []T
	buf := make([]T, 100)
	for _, sp := range splits {
		r, err := src.Open(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		for {
			n, err := r.Read(ctx, buf)
			out = append(out, buf[:n]...)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("read %s: %v", sp.ID(), err)
			}
		}
		r.Close()
	}
	return out
}

// committedValues reads the committed records of topic (read_committed,
// up to the last stable offsets), as strings, sorted.
func committedValues(t testing.TB, addrs []string, topic string) []string {
	t.Helper()
	vals := readAll(t, kafka.Source(addrs, []string{topic}, func(r *kgo.Record) (string, error) { return string(r.Value), nil },
		kafka.Bounded(), kafka.ReadCommitted()))
	slices.Sort(vals)
	return vals
}

// windowCounts is the model of the job: events per key per tumbling
// second, as the sink formats them, sorted.
func windowCounts(evs []event) []string {
	type kw struct {
		k string
		w int64
	}
	m := map[kw]int{}
	for _, e := range evs {
		m[kw{e.Key, e.TS - e.TS%1000}]++
	}
	var out []string
	for k, n := range m {
		out = append(out, fmt.Sprintf("%s@%d=%d", k.k, k.w, n))
	}
	slices.Sort(out)
	return out
}

// waitFor waits for cond with a deadline (no fixed sleeps).
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	weirtest.WaitFor(t, what, d, cond)
}

func sameOutput(t testing.TB, what string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Fatalf("%s: %s", what, outputDiff(got, want))
}

// outputDiff says how got differs from want.
func outputDiff(got, want []string) string {
	missing, extra := crashtest.Minus(want, got), crashtest.Minus(got, want)
	return fmt.Sprintf("%d records, want %d; missing %d (first %q), unexpected %d (first %q)",
		len(got), len(want), len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
}

// newAdmin is an admin client of the cluster at addrs, closed when the
// test ends.
func newAdmin(t testing.TB, addrs []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func createTopic(t testing.TB, addrs []string, topic string, parts int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := newAdmin(t, addrs).CreateTopic(ctx, parts, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create topic %s: %v", topic, err)
	}
}

// boundedGroupSource reads topic, bounded and read_committed, for a
// group-mode job run inside the test (one member; a 6 s session timeout),
// its events stamped with their TS.
func boundedGroupSource(job *weir.Job, addrs []string, topic string, opts ...weir.SourceOption) *weir.Stream[event] {
	return weir.FromSource(job, topic, kafka.Source(addrs, []string{topic}, decodeEvent, kafka.Bounded(), kafka.ReadCommitted(),
		kafka.ClientOptions(kgo.SessionTimeout(6*time.Second))),
		weir.MonotonousTimestamps(func(e event) time.Time { return time.UnixMilli(e.TS) }), opts...)
}

// runBoundedGroup runs a group-mode job of bounded sources to its end,
// which must come by itself (once every input partition and every
// repartition partition is committed at its end) within d.
func runBoundedGroup(t *testing.T, job *weir.Job, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if ctx.Err() != nil {
		t.Fatal("Run returned only when its context ended")
	}
}
