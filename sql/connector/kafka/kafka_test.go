package kafka_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/types"
)

func cluster(t *testing.T, topics ...string) string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return strings.Join(c.ListenAddrs(), ",")
}

var schema = types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}}

func row(k types.RowKind, id int64, name string) types.Row {
	v := types.Value{S: name}
	if name == "" {
		v = types.NullValue
	}
	return types.Row{Kind: k, Values: []types.Value{{I: id}, v}}
}

func str(r types.Row) string {
	name := r.Values[1].S
	if r.Values[1].Null {
		name = "null"
	}
	return fmt.Sprintf("%v%d:%s", r.Kind, r.Values[0].I, name)
}

func tab(conn string, servers, topic string, pk []int, kv ...string) *connector.Table {
	o := map[string]string{"connector": conn, "topic": topic, "properties.bootstrap.servers": servers}
	for i := 0; i+1 < len(kv); i += 2 {
		o[kv[i]] = kv[i+1]
	}
	return &connector.Table{Name: topic, Schema: schema, PrimaryKey: pk, Options: o}
}

func write(t *testing.T, tb *connector.Table, rows []types.Row, opts ...weir.JobOption) *connector.Sink {
	t.Helper()
	sink, err := connector.CreateSink(tb)
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("write", opts...)
	weir.To(weir.FromSource(job, "rows", weir.SliceSource(rows), weir.NoWatermarks[types.Row]()), sink.Sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink
}

func read(t *testing.T, tb *connector.Table) ([]string, error) {
	t.Helper()
	src, err := connector.CreateSource(tb)
	if err != nil {
		t.Fatal(err)
	}
	if !src.Bounded {
		t.Fatal("not bounded")
	}
	job := weir.NewJob("read")
	c := weir.Collect(weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row](), src.Options...))
	err = job.Run(context.Background())
	var out []string
	for _, r := range c.Items() {
		out = append(out, str(r))
	}
	return out, err
}

func TestKafkaJSONWithKey(t *testing.T) {
	servers := cluster(t, "t")
	rows := []types.Row{row(types.Insert, 1, "a"), row(types.Insert, 2, "b"), row(types.Insert, 3, "")}
	sink := write(t, tab("kafka", servers, "t", nil, "format", "json", "key.format", "json", "key.fields", "id"), rows)
	if sink.Accepts != types.InsertOnly || sink.ExactlyOnce {
		t.Fatalf("sink %+v", sink)
	}
	got, err := read(t, tab("kafka", servers, "t", nil, "value.format", "json", "scan.bounded.mode", "latest-offset", "properties.group.id", "g"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"+I1:a", "+I2:b", "+I3:null"}; !slices.Equal(got, want) {
		t.Fatalf("read %v, want %v", got, want)
	}
	// The records carry the key.
	cl, _ := kgo.NewClient(kgo.SeedBrokers(strings.Split(servers, ",")...), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var keys []string
	for len(keys) < 3 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("timed out")
		}
		fs.EachRecord(func(r *kgo.Record) { keys = append(keys, string(r.Key)) })
	}
	slices.Sort(keys)
	if want := []string{`{"id":1}`, `{"id":2}`, `{"id":3}`}; !slices.Equal(keys, want) {
		t.Fatalf("keys %q", keys)
	}
}

func TestUpsertKafka(t *testing.T) {
	servers := cluster(t, "u")
	tb := tab("upsert-kafka", servers, "u", []int{0}, "key.format", "json", "value.format", "json")
	changes := []types.Row{row(types.Insert, 1, "a"), row(types.Insert, 2, "b"), row(types.UpdateBefore, 1, "a"), row(types.UpdateAfter, 1, "a2"), row(types.Delete, 2, "b")}
	sink := write(t, tb, changes)
	if sink.Accepts != types.Upsert {
		t.Fatalf("accepts %v", sink.Accepts)
	}
	src, err := connector.CreateSource(tab("upsert-kafka", servers, "u", []int{0}, "key.format", "json", "value.format", "json", "scan.bounded.mode", "latest-offset"))
	if err != nil || src.Changelog != types.Upsert {
		t.Fatal(src, err)
	}
	got, err := read(t, tab("upsert-kafka", servers, "u", []int{0}, "key.format", "json", "value.format", "json", "scan.bounded.mode", "latest-offset"))
	if err != nil {
		t.Fatal(err)
	}
	// Per key, in order (keys may be on different partitions).
	per := map[string][]string{}
	for _, s := range got {
		k := s[2:strings.IndexByte(s, ':')]
		per[k] = append(per[k], s)
	}
	if !slices.Equal(per["1"], []string{"+U1:a", "+U1:a2"}) || !slices.Equal(per["2"], []string{"+U2:b", "-D2:null"}) {
		t.Fatalf("read %v", got)
	}
	for _, c := range []struct {
		tb   *connector.Table
		want string
	}{
		{tab("upsert-kafka", servers, "u", nil, "key.format", "json", "value.format", "json"), "needs a PRIMARY KEY"},
		{tab("upsert-kafka", servers, "u", []int{0}, "key.format", "json", "value.format", "debezium-json"), "must be insert-only"},
		{tab("upsert-kafka", servers, "u", []int{0}, "value.format", "json"), "missing required option 'key.format'"},
		{tab("upsert-kafka", servers, "u", []int{0}, "key.format", "json", "value.format", "json", "scan.startup.mode", "latest-offset"), "unsupported options found for 'upsert-kafka': 'scan.startup.mode'"},
	} {
		if _, err := connector.CreateSource(c.tb); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.tb.Options, err, c.want)
		}
	}
}

func TestMalformedRecord(t *testing.T) {
	servers := cluster(t, "m")
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(servers, ",")...), kgo.DefaultProduceTopic("m"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx := context.Background()
	for _, v := range []string{`{"id":1,"name":"a"}`, `{"id":"x"}`} {
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v), Partition: 1}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := read(t, tab("kafka", servers, "m", nil, "format", "json", "scan.bounded.mode", "latest-offset"))
	if err == nil || !strings.Contains(err.Error(), "m/1") && !strings.Contains(err.Error(), "partition 1") || !strings.Contains(err.Error(), "offset 1") ||
		!strings.Contains(err.Error(), "field 'id'") {
		t.Fatalf("error %v", err)
	}
	if !slices.Equal(got, []string{"+I1:a"}) {
		t.Fatalf("rows before the bad one: %v", got)
	}
	// With the format's ignore-parse-errors it is skipped.
	got, err = read(t, tab("kafka", servers, "m", nil, "format", "json", "json.ignore-parse-errors", "true", "scan.bounded.mode", "latest-offset"))
	if err != nil || !slices.Equal(got, []string{"+I1:a"}) {
		t.Fatal(got, err)
	}
}

func TestExactlyOnceAcrossARestore(t *testing.T) {
	servers := cluster(t, "eo")
	const n = 2000
	var rows []types.Row
	for i := range n {
		rows = append(rows, row(types.Insert, int64(i), "x"))
	}
	sink, err := connector.CreateSink(tab("kafka", servers, "eo", nil, "format", "json", "sink.delivery-guarantee", "exactly-once", "sink.transactional-id-prefix", "sqltest"))
	if err != nil {
		t.Fatal(err)
	}
	if !sink.ExactlyOnce {
		t.Fatal("not exactly once")
	}
	var failed atomic.Bool
	job := weir.NewJob("eo", weir.Parallelism(2), weir.Checkpointing(10*time.Millisecond, filepath.Join(t.TempDir(), "ckpt")),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 5, Interval: time.Hour}))
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(rows).(weir.RestorableSource[types.Row]), 200)
	s := weir.Map(weir.FromSource(job, "rows", weir.Source[types.Row](paced), weir.NoWatermarks[types.Row]()), func(r types.Row) types.Row {
		if !failed.Load() && r.Values[0].I > 1000 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
			panic("injected failure")
		}
		return r
	})
	weir.To(s, sink.Sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("no failure injected")
	}
	got, err := read(t, tab("kafka", servers, "eo", nil, "format", "json", "properties.isolation.level", "read_committed", "scan.bounded.mode", "latest-offset"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range got {
		seen[s]++
	}
	for i := range n {
		if k := fmt.Sprintf("+I%d:x", i); seen[k] != 1 {
			t.Fatalf("%s read %d times (%d rows)", k, seen[k], len(got))
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		tb   *connector.Table
		sink bool
		want string
	}{
		{tab("kafka", "x:1", "t", nil, "format", "json", "sink.delivery-guarantee", "exactly-once"), true, "needs 'sink.transactional-id-prefix'"},
		{tab("kafka", "x:1", "t", nil, "format", "json", "properties.acks", "all"), true, "option 'properties.acks': the Kafka client property is not supported"},
		{tab("kafka", "x:1", "t", nil, "format", "json", "scan.startup.mode", "group-offsets"), false, "needs 'properties.group.id'"},
		{tab("kafka", "x:1", "t", nil, "format", "json", "scan.startup.mode", "specific-offsets"), false, "must be one of 'earliest-offset', 'latest-offset', 'group-offsets', 'timestamp'"},
		{tab("kafka", "x:1", "t", nil, "format", "json", "scan.bounded.mode", "group-offsets"), false, "'scan.bounded.mode' = 'group-offsets': must be one of 'unbounded', 'latest-offset'"},
		{tab("kafka", "x:1", "a;b", nil, "format", "json"), true, "a sink writes one topic"},
		{tab("kafka", "x:1", "t", nil, "format", "json", "properties.session.timeout.ms", "soon"), false, "option 'properties.session.timeout.ms' = 'soon': not a positive integer"},
		{tab("kafka", "x:1", "t", nil, "format", "json", "properties.max.poll.interval.ms", "-1"), false, "option 'properties.max.poll.interval.ms' = '-1': not a positive integer"},
		{&connector.Table{Name: "t", Schema: schema, Options: map[string]string{"connector": "kafka", "topic": "t", "format": "json"}}, false, "missing required option 'properties.bootstrap.servers'"},
	} {
		var err error
		if c.sink {
			_, err = connector.CreateSink(c.tb)
		} else {
			_, err = connector.CreateSource(c.tb)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.tb.Options, err, c.want)
		}
	}
	// A table is read and written with one set of options, as in Flink:
	// a sink accepts the source's options (and a source the sink's).
	if _, err := connector.CreateSink(tab("kafka", "x:1", "t", nil, "format", "json", "properties.session.timeout.ms", "1500",
		"properties.group.id", "g", "scan.startup.mode", "latest-offset", "scan.bounded.mode", "latest-offset")); err != nil {
		t.Errorf("a sink with source options: %v", err)
	}
	if _, err := connector.CreateSource(tab("kafka", "x:1", "t", nil, "format", "json", "sink.delivery-guarantee", "exactly-once",
		"sink.transactional-id-prefix", "x", "sink.parallelism", "2")); err != nil {
		t.Errorf("a source with sink options: %v", err)
	}
	// The group's timeouts are a source's properties.
	if _, err := connector.CreateSource(tab("kafka", "x:1", "t", nil, "format", "json", "properties.session.timeout.ms", "1500",
		"properties.heartbeat.interval.ms", "500", "properties.max.poll.interval.ms", "3000")); err != nil {
		t.Errorf("group timeouts: %v", err)
	}
}
