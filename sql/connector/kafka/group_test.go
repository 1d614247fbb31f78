package kafka_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/internal/testing/crashtest"
	"github.com/weirstream/weir/internal/testing/kafkatest"
)

// groupSQL is the statement set TestGroupSQLKill runs: a Kafka source
// table with a watermark (bounded at the offsets the input has when a
// process starts) and, each into an exactly-once Kafka sink table, a
// tumbling, a hopping and a cumulating window aggregation and a session
// window aggregation per key; and a window join of ev (every fourth row)
// and a second Kafka table, ev2, over tumbling windows by key. ${BROKERS}
// is given by --define.
const groupSQL = `
CREATE TABLE ev (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (
  'connector' = 'kafka', 'topic' = 'ev', 'properties.bootstrap.servers' = '${BROKERS}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json',
  'properties.session.timeout.ms' = '1500', 'properties.max.poll.interval.ms' = '3000');
CREATE TABLE ev2 (k STRING, v BIGINT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND) WITH (
  'connector' = 'kafka', 'topic' = 'ev2', 'properties.bootstrap.servers' = '${BROKERS}',
  'scan.startup.mode' = 'earliest-offset', 'scan.bounded.mode' = 'latest-offset', 'format' = 'json',
  'properties.session.timeout.ms' = '1500', 'properties.max.poll.interval.ms' = '3000');
CREATE TABLE join_out (k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), lv BIGINT, rv BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'join_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'join');
CREATE TABLE tumble_out (k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'tumble_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'tumble');
CREATE TABLE hop_out (k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'hop_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'hop');
CREATE TABLE cumulate_out (k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'cumulate_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'cumulate');
CREATE TABLE session_out (k STRING, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, total BIGINT) WITH (
  'connector' = 'kafka', 'topic' = 'session_out', 'properties.bootstrap.servers' = '${BROKERS}', 'format' = 'json',
  'sink.delivery-guarantee' = 'exactly-once', 'sink.transactional-id-prefix' = 'session');

INSERT INTO tumble_out SELECT k, window_start, window_end, COUNT(*), SUM(v)
  FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;
INSERT INTO hop_out SELECT k, window_start, window_end, COUNT(*), SUM(v)
  FROM TABLE(HOP(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end;
INSERT INTO cumulate_out SELECT k, window_start, window_end, COUNT(*), SUM(v)
  FROM TABLE(CUMULATE(TABLE ev, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '15' SECOND)) GROUP BY k, window_start, window_end;
INSERT INTO session_out SELECT k, window_start, window_end, COUNT(*), SUM(v)
  FROM TABLE(SESSION(TABLE ev, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY k, window_start, window_end;
INSERT INTO join_out SELECT L.k, L.window_start, L.window_end, L.v, R.v
  FROM (SELECT * FROM TABLE(TUMBLE(TABLE ev, DESCRIPTOR(ts), INTERVAL '10' SECOND)) WHERE MOD(v, 4) = 0) L
  JOIN (SELECT * FROM TABLE(TUMBLE(TABLE ev2, DESCRIPTOR(ts), INTERVAL '10' SECOND))) R
  ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k;
`

// sqlEvent is a row of the input table.
type sqlEvent struct {
	k  string
	v  int64
	ts int64 // ms since the epoch
}

const (
	sqlBase      = int64(1_704_067_200_000) // 2024-01-01 00:00:00 UTC
	sqlParts     = 4
	sqlKeys      = 16
	sqlJitter    = 1500 // ms: disorder within a partition, under the 2s watermark bound
	sqlQuietSpan = 20_000
)

// sqlEvents are perPart events per partition, with values from v0+1 on:
// a partition's j-th event is at base + j*step (ms) plus up to 1.5s of jitter (so out of order, but never
// behind its partition's watermark: no event is late, whatever the
// interleaving, and the streaming results are the batch results). Keys are
// random, except that key k is quiet in every third 20s span (spans where
// (span + k) % 3 == 0), so its sessions end.
func sqlEvents(perPart int, step int64, seed uint64, v0 int64) [sqlParts][]sqlEvent {
	rng := rand.New(rand.NewPCG(15, seed))
	var out [sqlParts][]sqlEvent
	v := v0
	for j := range perPart {
		for p := range sqlParts {
			ts := sqlBase + int64(j)*step + rng.Int64N(sqlJitter)
			k := rng.IntN(sqlKeys)
			for ((ts-sqlBase)/sqlQuietSpan+int64(k))%3 == 0 {
				k = (k + 1) % sqlKeys // twice at most (15 and 0 are quiet together)
			}
			v++
			out[p] = append(out[p], sqlEvent{k: fmt.Sprintf("k%02d", k), v: v, ts: ts})
		}
	}
	return out
}

// sqlRow is a row of the sinks, as the test compares them.
func sqlRow(k string, ws, we, n, total int64) string {
	return fmt.Sprintf("%s|%d|%d|%d|%d", k, ws, we, n, total)
}

// batchWindows is the batch evaluation of a window aggregation with
// assign (the windows [start, end) an event time belongs to): COUNT(*) and
// SUM(v) per key and window, in plain Go.
func batchWindows(evs []sqlEvent, assign func(ts int64) [][2]int64) []string {
	type kw struct {
		k      string
		ws, we int64
	}
	type agg struct{ n, total int64 }
	m := map[kw]*agg{}
	for _, e := range evs {
		for _, w := range assign(e.ts) {
			a := m[kw{e.k, w[0], w[1]}]
			if a == nil {
				a = &agg{}
				m[kw{e.k, w[0], w[1]}] = a
			}
			a.n++
			a.total += e.v
		}
	}
	out := make([]string, 0, len(m))
	for w, a := range m {
		out = append(out, sqlRow(w.k, w.ws, w.we, a.n, a.total))
	}
	slices.Sort(out)
	return out
}

func floorTo(ts, d int64) int64 { return ts - ((ts%d)+d)%d }

func tumble(size int64) func(int64) [][2]int64 {
	return func(ts int64) [][2]int64 {
		s := floorTo(ts, size)
		return [][2]int64{{s, s + size}}
	}
}

func hop(slide, size int64) func(int64) [][2]int64 {
	return func(ts int64) [][2]int64 {
		var out [][2]int64
		for s := floorTo(ts, slide); s > ts-size; s -= slide {
			out = append(out, [2]int64{s, s + size})
		}
		return out
	}
}

func cumulate(step, size int64) func(int64) [][2]int64 {
	return func(ts int64) [][2]int64 {
		s := floorTo(ts, size)
		var out [][2]int64
		for e := s + step; e <= s+size; e += step {
			if ts < e {
				out = append(out, [2]int64{s, e})
			}
		}
		return out
	}
}

// batchSessions is the batch evaluation of the session windows with gap
// per key: Flink's merging of session windows, where an event's window is
// [ts, ts+gap) and windows that intersect or touch merge.
func batchSessions(evs []sqlEvent, gap int64) []string {
	byKey := map[string][]sqlEvent{}
	for _, e := range evs {
		byKey[e.k] = append(byKey[e.k], e)
	}
	var out []string
	for k, es := range byKey {
		slices.SortFunc(es, func(a, b sqlEvent) int { return int(a.ts - b.ts) })
		start, end, n, total := es[0].ts, es[0].ts+gap, int64(0), int64(0)
		for _, e := range es {
			if e.ts > end {
				out = append(out, sqlRow(k, start, end, n, total))
				start, end, n, total = e.ts, e.ts+gap, 0, 0
			}
			end = max(end, e.ts+gap)
			n++
			total += e.v
		}
		out = append(out, sqlRow(k, start, end, n, total))
	}
	slices.Sort(out)
	return out
}

// batchWindowJoin is the batch evaluation of the window join: every pair
// of an l row with v%4 == 0 and an r row of the same key and tumbling
// window of size.
func batchWindowJoin(l, r []sqlEvent, size int64) []string {
	type kw struct {
		k  string
		ws int64
	}
	right := map[kw][]sqlEvent{}
	for _, e := range r {
		w := kw{e.k, floorTo(e.ts, size)}
		right[w] = append(right[w], e)
	}
	var out []string
	for _, le := range l {
		if le.v%4 != 0 {
			continue
		}
		w := kw{le.k, floorTo(le.ts, size)}
		for _, re := range right[w] {
			out = append(out, sqlRow(le.k, w.ws, w.ws+size, le.v, re.v))
		}
	}
	slices.Sort(out)
	return out
}

// sinkRows reads a sink topic read_committed and turns its JSON rows into
// sqlRow strings, sorted.
func sinkRows(t *testing.T, addrs []string, topic string) []string {
	t.Helper()
	var out []string
	for _, r := range kafkatest.Committed(t, addrs, topic) {
		var row struct {
			K        string
			WS, WE   string
			N, Total int64
			LV, RV   int64 // join_out's
		}
		if err := json.Unmarshal(r.Value, &row); err != nil {
			t.Fatalf("%s partition %d offset %d: %v: %s", topic, r.Partition, r.Offset, err, r.Value)
		}
		ws, err1 := time.Parse(time.DateTime, row.WS)
		we, err2 := time.Parse(time.DateTime, row.WE)
		if err1 != nil || err2 != nil {
			t.Fatalf("%s partition %d offset %d: timestamps: %v %v: %s", topic, r.Partition, r.Offset, err1, err2, r.Value)
		}
		if topic == "join_out" {
			row.N, row.Total = row.LV, row.RV
		}
		out = append(out, sqlRow(row.K, ws.UnixMilli(), we.UnixMilli(), row.N, row.Total))
	}
	slices.Sort(out)
	return out
}

// TestGroupSQLKill is issue 15's SQL check: the statement set groupSQL
// (windowed aggregations and sessions over a Kafka table, into
// exactly-once Kafka tables) runs as three `weir sql -f FILE --app-id ID`
// processes over a four-partition input written before they start. One
// is SIGKILLed once it has committed part of a partition it owns (and the
// sinks have committed output), and started again with the same instance
// id.
// When all three have ended by themselves (bounded input), every sink
// topic, read read_committed, must hold exactly the rows of a batch
// evaluation of its query over the input, computed here in plain Go: no
// row lost with the killed process's open transaction or its moved
// windows (restored from the changelogs by whoever took its key groups),
// none twice.
func TestGroupSQLKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := crashtest.Build(t, "github.com/weirstream/weir/cmd/weir")
	sinks := []string{"tumble_out", "hop_out", "cumulate_out", "session_out", "join_out"}
	_, addrs := kafkatest.Cluster(t, kfake.SeedTopics(sqlParts, "ev", "ev2"), kfake.SeedTopics(2, sinks...),
		kfake.GroupMinSessionTimeout(time.Second))
	// ev: 20,000 rows per partition, one per 30ms of event time (10
	// minutes); enough that the processes are still at work when the
	// kill's condition holds. ev2: a row per 2s per partition, over the
	// same 10 minutes.
	const perPart = 20_000
	evs := sqlEvents(perPart, 30, 3, 0)
	evs2 := sqlEvents(300, 2000, 4, 1_000_000)
	var all, all2 []sqlEvent
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	produce := func(topic string, evs [sqlParts][]sqlEvent, all *[]sqlEvent) {
		for p, es := range evs {
			for _, e := range es {
				*all = append(*all, e)
				v := fmt.Appendf(nil, `{"k":%q,"v":%d,"ts":%q}`, e.k, e.v, time.UnixMilli(e.ts).UTC().Format("2006-01-02 15:04:05.000"))
				cl.Produce(ctx, &kgo.Record{Topic: topic, Partition: int32(p), Value: v}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce to %s: %v", topic, err)
					}
				})
			}
		}
	}
	produce("ev", evs, &all)
	produce("ev2", evs2, &all2)
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	if t.Failed() {
		t.FailNow()
	}
	want := map[string][]string{
		"tumble_out":   batchWindows(all, tumble(10_000)),
		"hop_out":      batchWindows(all, hop(5_000, 10_000)),
		"cumulate_out": batchWindows(all, cumulate(5_000, 15_000)),
		"session_out":  batchSessions(all, 3_000),
		"join_out":     batchWindowJoin(all, all2, 10_000),
	}
	file := filepath.Join(t.TempDir(), "windows.sql")
	if err := os.WriteFile(file, []byte(groupSQL), 0o644); err != nil {
		t.Fatal(err)
	}
	g := weirGroup(t, bin, addrs, "sqlg", file)
	tumbles := func() int { return len(kafkatest.Committed(t, addrs, "tumble_out")) }
	g.Start("a", "b", "c")
	// The kill lands on a process that has committed a transaction of its
	// own (a partition it owns, of the input or of a repartition topic,
	// committed past its start but not to its end) once the sinks hold
	// committed output, and before the job is done. (A process that ends
	// before the kill fails the test: the input is too small for this
	// machine?)
	victim, killedAt := g.KillMidRun(kafkatest.KillMidRun{
		When:     "a process has committed part of a partition it owns, and output is committed",
		Deadline: 3 * time.Minute,
		Victim: func() string {
			name := inputOwner(addrs, "sqlg", "ev", func(p kafka.GroupPartition) bool { return p.Committed > 0 && p.Committed < p.End })
			if name != "" && tumbles() > 0 {
				return name
			}
			return ""
		},
		Committed: tumbles, TooLate: len(want["tumble_out"]),
		Restart: true, // with its instance id: it fences its open transaction
	})
	g.Wait(3 * time.Minute)
	for _, topic := range sinks {
		got := sinkRows(t, addrs, topic)
		if sameRows(t, topic, got, want[topic]) {
			t.Logf("%s: %d rows, as the batch evaluation", topic, len(got))
		}
	}
	t.Logf("%d input rows over %d partitions; %d tumbling windows committed when %s was killed", len(all), sqlParts, killedAt, victim)
}

// weirGroup is the group of `weir sql -f file --app-id app --log-level
// info` processes on the cluster at addrs (its brokers given as the
// file's ${BROKERS}). If a wait times out, the test logs the group's
// description and how many records each topic but the job's own has
// committed.
func weirGroup(t *testing.T, bin string, addrs []string, app, file string) *kafkatest.Group {
	g := kafkatest.NewGroup(t, bin, nil, func(string) []string {
		return []string{"sql", "-f", file, "--app-id", app, "--define", "BROKERS=" + strings.Join(addrs, ","), "--log-level", "info"}
	})
	g.Diagnose = func() {
		var b strings.Builder
		if d, err := kafka.DescribeGroup(context.Background(), addrs, app); err != nil {
			fmt.Fprintf(&b, "describe: %v\n", err)
		} else {
			d.WriteText(&b)
		}
		for _, name := range topicNames(t, addrs) {
			if !strings.HasPrefix(name, app+"-") {
				fmt.Fprintf(&b, "\n%s: %d records committed", name, len(kafkatest.Committed(t, addrs, name)))
			}
		}
		t.Logf("group %s when the wait timed out:\n%s", app, b.String())
	}
	return g
}

// topicNames lists the topics of the cluster at addrs, sorted.
func topicNames(t *testing.T, addrs []string) []string {
	t.Helper()
	acl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer acl.Close()
	topics, err := kadm.NewClient(acl).ListTopics(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return topics.Names()
}

// inputOwner is the member (its instance id) owning a partition of topic
// in group app for which ok holds, "" if none does (or the group cannot
// be described yet). Kill victims are picked on the input topic: a
// repartition partition's committed offset stays below its end by the
// last transaction's marker.
func inputOwner(addrs []string, app, topic string, ok func(kafka.GroupPartition) bool) string {
	d, err := kafka.DescribeGroup(context.Background(), addrs, app)
	if err != nil {
		return ""
	}
	for _, p := range d.Partitions {
		if name, found := strings.CutPrefix(p.Owner, app+"-"); found && p.Topic == topic && ok(p) {
			return name
		}
	}
	return ""
}

// TestMain builds cmd/weir once for the tests that start it, from the
// start when the whole package runs.
func TestMain(m *testing.M) {
	os.Exit(crashtest.Main(m, "github.com/weirstream/weir/cmd/weir"))
}

// sameRows marks the test failed if got and want (sorted) are not the same
// multiset, naming a few of the differences.
func sameRows(t *testing.T, what string, got, want []string) bool {
	t.Helper()
	if slices.Equal(got, want) {
		return true
	}
	count := map[string]int{}
	for _, r := range want {
		count[r]++
	}
	for _, r := range got {
		count[r]--
	}
	var missing, extra []string
	for r, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, r)
		}
		for ; n < 0; n++ {
			extra = append(extra, r)
		}
	}
	slices.Sort(missing)
	slices.Sort(extra)
	t.Errorf("%s: %d rows, want %d; missing %d (first %q), unexpected %d (first %q)",
		what, len(got), len(want), len(missing), missing[:min(5, len(missing))], len(extra), extra[:min(5, len(extra))])
	return false
}
