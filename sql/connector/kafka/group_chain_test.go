package kafka_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/kafkatest"
)

// chainSQL is the statement set TestGroupSQLChain runs: aggregations over
// a window aggregation, so chains of KeyBys (each aggregation keys its
// input again, behind the keyed window aggregation). max_out: per hopping
// window the largest count of a key and the sum of the counts (a window
// aggregation keyed by window, over one keyed by key and window). top_out:
// Nexmark q5's shape, the keys with the largest count per hopping window
// (the per-key counts joined back with the maximum by window).
const chainSQL = `
CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (
  'connector' = 'kafka', 'topic' = 'cev', 'properties.bootstrap.servers' = '${BROKERS}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json',
  'properties.session.timeout.ms' = '1500', 'properties.max.poll.interval.ms' = '3000');
CREATE TABLE max_out (ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'max_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'max');
CREATE TABLE top_out (k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'top_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'top');

INSERT INTO max_out SELECT window_start, window_end, MAX(n), SUM(n) FROM (
  SELECT k, window_start, window_end, COUNT(*) AS n
    FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end
) GROUP BY window_start, window_end;
INSERT INTO top_out SELECT A.k, A.ws, A.we, A.n, B.maxn FROM (
  SELECT k, window_start AS ws, window_end AS we, COUNT(*) AS n
    FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end
) AS A JOIN (
  SELECT MAX(C.n) AS maxn, C.ws, C.we FROM (
    SELECT COUNT(*) AS n, window_start AS ws, window_end AS we
      FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end
  ) AS C GROUP BY C.ws, C.we
) AS B ON A.ws = B.ws AND A.we = B.we AND A.n >= B.maxn;
`

// batchChain is the batch evaluation of chainSQL's two queries.
func batchChain(evs []sqlEvent) (maxRows, topRows []string) {
	type kw struct {
		k      string
		ws, we int64
	}
	counts := map[kw]int64{}
	for _, e := range evs {
		for _, w := range hop(5_000, 10_000)(e.ts) {
			counts[kw{e.k, w[0], w[1]}]++
		}
	}
	type win struct{ ws, we int64 }
	mx, sum := map[win]int64{}, map[win]int64{}
	for c, n := range counts {
		w := win{c.ws, c.we}
		mx[w] = max(mx[w], n)
		sum[w] += n
	}
	for w, m := range mx {
		maxRows = append(maxRows, sqlRow("", w.ws, w.we, m, sum[w]))
	}
	for c, n := range counts {
		if m := mx[win{c.ws, c.we}]; n >= m {
			topRows = append(topRows, sqlRow(c.k, c.ws, c.we, n, m))
		}
	}
	slices.Sort(maxRows)
	slices.Sort(topRows)
	return maxRows, topRows
}

// TestGroupSQLChain: chainSQL (aggregations over a window aggregation:
// chains of KeyBys) runs as three `weir sql -f FILE --app-id ID`
// processes over a four-partition input; one is SIGKILLed while output is
// committed in part, and started again. Both sinks, read read_committed,
// then hold exactly the rows of the batch evaluation.
//
// The kill must come mid-run whatever the machine's speed: the source
// table is unbounded (the file without 'scan.bounded.mode'), the first
// half of the input is written before the processes start, the kill comes
// once some output is committed, and the second half (with one event per
// partition a minute later, which moves the watermark past every window of
// the input and is in no window that fires) only after the restart. (A
// bounded run finished before the test could see a partition half
// committed on an idle machine.) The processes are stopped once the
// output is complete.
func TestGroupSQLChain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := crashtest.Build(t, "github.com/weirstream/weir/cmd/weir")
	sinks := []string{"max_out", "top_out"}
	_, addrs := kafkatest.Cluster(t, kfake.SeedTopics(sqlParts, "cev"), kfake.SeedTopics(2, sinks...),
		kfake.GroupMinSessionTimeout(time.Second))
	// 20,000 rows per partition, one per 30ms of event time (10 minutes).
	evs := sqlEvents(20_000, 30, 5, 0)
	var all []sqlEvent
	var last int64
	for _, es := range evs {
		all = append(all, es...)
		for _, e := range es {
			last = max(last, e.ts)
		}
	}
	produce := func(from, to int, flush bool) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		send := func(p int, e sqlEvent) {
			v := fmt.Appendf(nil, `{"k":%q,"v":%d,"ts":%q}`, e.k, e.v, time.UnixMilli(e.ts).UTC().Format("2006-01-02 15:04:05.000"))
			cl.Produce(ctx, &kgo.Record{Topic: "cev", Partition: int32(p), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		for p, es := range evs {
			for _, e := range es[from:to] {
				send(p, e)
			}
			if flush {
				send(p, sqlEvent{k: "flush", ts: last + 60_000})
			}
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	half := len(evs[0]) / 2
	produce(0, half, false)
	maxRows, topRows := batchChain(all)
	want := map[string][]string{"max_out": maxRows, "top_out": topRows}
	file := filepath.Join(t.TempDir(), "chain.sql")
	unbounded := strings.Replace(chainSQL, "'scan.bounded.mode' = 'latest-offset', ", "", 1)
	if unbounded == chainSQL {
		t.Fatal("chainSQL has no 'scan.bounded.mode' to remove")
	}
	if err := os.WriteFile(file, []byte(unbounded), 0o644); err != nil {
		t.Fatal(err)
	}
	g := weirGroup(t, bin, addrs, "sqlc", file)
	maxes := func() int { return len(kafkatest.Committed(t, addrs, "max_out")) }
	g.Start("a", "b", "c")
	victim, killedAt := g.KillMidRun(kafkatest.KillMidRun{
		When:     "a process owns a partition of the input, and output is committed",
		Deadline: 3 * time.Minute,
		Victim: func() string {
			name := inputOwner(addrs, "sqlc", "cev", func(p kafka.GroupPartition) bool { return p.Committed > 0 })
			if name != "" && maxes() > 0 {
				return name
			}
			return ""
		},
		// Not all the max rows: half the input is written.
		Committed: maxes, TooLate: len(maxRows),
		Restart: true,
		Then:    func() { produce(half, len(evs[0]), true) },
	})
	g.WaitFor("every row of both sinks committed", 3*time.Minute, func() bool {
		for _, topic := range sinks {
			if len(kafkatest.Committed(t, addrs, topic)) < len(want[topic]) {
				return false
			}
		}
		return true
	})
	for _, name := range g.Names() {
		g.Kill(name)
	}
	for _, topic := range sinks {
		got := sinkRows(t, addrs, topic)
		if sameRows(t, topic, got, want[topic]) {
			t.Logf("%s: %d rows, as the batch evaluation", topic, len(got))
		}
	}
	t.Logf("%d input rows; %d of %d max rows committed when %s was killed", len(all), killedAt, len(maxRows), victim)
	// The plan is a chain: besides the window aggregations' repartition
	// topics, the aggregations over them (keyed by window) and the join
	// have their own, each with a changelog.
	var rtopics []string
	for _, name := range topicNames(t, addrs) {
		if strings.HasPrefix(name, "sqlc-") && strings.HasSuffix(name, "-repartition") {
			rtopics = append(rtopics, name)
		}
	}
	slices.Sort(rtopics)
	t.Logf("repartition topics: %v", rtopics)
	if len(rtopics) < 3 {
		t.Errorf("%d repartition topics, want at least 3 (a window aggregation, an aggregation over it, a join)", len(rtopics))
	}
}
