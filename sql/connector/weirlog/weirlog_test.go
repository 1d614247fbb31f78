package weirlog_test

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/types"
)

var schema = types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}}

func row(k types.RowKind, id int64, name string) types.Row {
	return types.Row{Kind: k, Values: []types.Value{{I: id}, {S: name}}}
}

func str(r types.Row) string { return fmt.Sprintf("%v%d:%s", r.Kind, r.Values[0].I, r.Values[1].S) }

func setup(t *testing.T, partitions int) (string, map[string]string) {
	dir := t.TempDir()
	if _, err := wlog.CreateTopic(dir, "changes", wlog.TopicConfig{Partitions: partitions}); err != nil {
		t.Fatal(err)
	}
	return dir, map[string]string{"connector": "weir-log", "topic": "changes"}
}

func tab(name string, opts map[string]string, logDir string, extra ...string) *connector.Table {
	o := map[string]string{}
	for k, v := range opts {
		o[k] = v
	}
	for i := 0; i+1 < len(extra); i += 2 {
		o[extra[i]] = extra[i+1]
	}
	return &connector.Table{Name: name, Schema: schema, Options: o, Settings: connector.Settings{LogDir: logDir}}
}

func readAll(t *testing.T, tb *connector.Table) []types.Row {
	t.Helper()
	src, err := connector.CreateSource(tb)
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("read")
	c := weir.Collect(weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row](), src.Options...))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c.Items()
}

func TestChangelogThroughTheLog(t *testing.T) {
	dir, opts := setup(t, 1)
	rows := []types.Row{row(types.Insert, 1, "a"), row(types.UpdateBefore, 1, "a"), row(types.UpdateAfter, 1, "b"), row(types.Delete, 1, "b")}
	sink, err := connector.CreateSink(tab("out", opts, dir, "format", "debezium-json"))
	if err != nil {
		t.Fatal(err)
	}
	if sink.Accepts != types.All || !sink.ExactlyOnce {
		t.Fatalf("sink %+v", sink)
	}
	job := weir.NewJob("write")
	weir.To(weir.FromSource(job, "rows", weir.SliceSource(rows), weir.NoWatermarks[types.Row]()), sink.Sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, tab("in", opts, dir, "format", "debezium-json", "scan.bounded.mode", "latest-offset"))
	var s []string
	for _, r := range got {
		s = append(s, str(r))
	}
	// As Flink's debezium-json writes them: -U as a delete, +U as a create.
	if want := []string{"+I1:a", "-D1:a", "+I1:b", "-D1:b"}; !slices.Equal(s, want) {
		t.Fatalf("read %v, want %v", s, want)
	}
	// json refuses nothing at the connector; its sink accepts insert-only.
	sink, err = connector.CreateSink(tab("out", opts, dir, "format", "json"))
	if err != nil || sink.Accepts != types.InsertOnly {
		t.Fatal(sink, err)
	}
}

func TestKeyFieldsAndBadRecords(t *testing.T) {
	dir, opts := setup(t, 2)
	sink, err := connector.CreateSink(tab("out", opts, dir, "key.format", "json", "key.fields", "id", "value.format", "csv", "value.fields-include", "EXCEPT_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("write")
	var rows []types.Row
	for i := range 20 {
		rows = append(rows, row(types.Insert, int64(i), fmt.Sprint("n", i)))
	}
	weir.To(weir.FromSource(job, "rows", weir.SliceSource(rows), weir.NoWatermarks[types.Row]()), sink.Sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	topic, err := wlog.OpenTopic(dir, "changes")
	if err != nil {
		t.Fatal(err)
	}
	r, err := topic.OpenReader(0, wlog.Earliest())
	if err != nil {
		t.Fatal(err)
	}
	recs, err := r.Read(context.Background(), 100)
	r.Close()
	if err != nil && err != io.EOF || len(recs) == 0 {
		t.Fatal(recs, err)
	}
	if !strings.HasPrefix(string(recs[0].Key), `{"id":`) || !strings.HasPrefix(string(recs[0].Value), "n") {
		t.Fatalf("record key %q value %q", recs[0].Key, recs[0].Value)
	}
	in := tab("in", opts, dir, "key.format", "json", "key.fields", "id", "value.format", "csv", "value.fields-include", "EXCEPT_KEY", "scan.bounded.mode", "latest-offset")
	got := readAll(t, in)
	var s []string
	for _, r := range got {
		s = append(s, str(r))
	}
	slices.Sort(s)
	var want []string
	for _, r := range rows {
		want = append(want, str(r))
	}
	slices.Sort(want)
	if !slices.Equal(s, want) {
		t.Fatalf("read %v, want %v", s, want)
	}
	// A record whose value is not CSV of one field: the job fails naming
	// the topic, partition and offset.
	w, err := topic.OpenWriter(1)
	if err != nil {
		t.Fatal(err)
	}
	off := w.NextOffset()
	if _, err := w.Append([]wlog.Record{{Key: []byte(`{"id":99}`), Value: []byte(`a,b`)}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	src, _ := connector.CreateSource(in)
	job = weir.NewJob("read")
	weir.Collect(weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row]()))
	err = job.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf(`topic "changes" partition 1 offset %d`, off)) || !strings.Contains(err.Error(), "more than 1 fields") {
		t.Fatalf("error %v", err)
	}
}

// A record that gives two rows, read one row at a time: a position between
// them restores the second.
func TestPositionBetweenTheRowsOfARecord(t *testing.T) {
	dir, opts := setup(t, 1)
	topic, _ := wlog.OpenTopic(dir, "changes")
	w, err := topic.OpenWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	w.Append([]wlog.Record{{Value: []byte(`{"op":"u","before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"}}`)}, {Value: []byte(`{"op":"d","before":{"id":1,"name":"b"}}`)}})
	w.Close()
	src, err := connector.CreateSource(tab("in", opts, dir, "format", "debezium-json", "scan.bounded.mode", "latest-offset"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sp, _ := src.Source.Splits(ctx)
	r, err := src.Source.Open(ctx, sp[0])
	if err != nil {
		t.Fatal(err)
	}
	one := make([]types.Row, 1)
	if n, err := r.Read(ctx, one); n != 1 || err != nil || one[0].Kind != types.UpdateBefore {
		t.Fatal(n, err, one)
	}
	pos, _ := r.(weir.CheckpointedReader[types.Row]).Position()
	r.Close()
	r, err = src.Source.(weir.RestorableSource[types.Row]).OpenAt(ctx, sp[0], pos)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	buf := make([]types.Row, 8)
	for {
		n, err := r.Read(ctx, buf)
		for _, x := range buf[:n] {
			got = append(got, str(x))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"+U1:b", "-D1:b"}; !slices.Equal(got, want) {
		t.Fatalf("after the restore %v, want %v", got, want)
	}
}

func TestExactlyOnceAcrossARestore(t *testing.T) {
	dir, opts := setup(t, 2)
	const n = 3000
	var rows []types.Row
	for i := range n {
		rows = append(rows, row(types.Insert, int64(i), "x"))
	}
	sink, err := connector.CreateSink(tab("out", opts, dir, "format", "json"))
	if err != nil {
		t.Fatal(err)
	}
	var failed atomic.Bool
	job := weir.NewJob("eo", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, filepath.Join(t.TempDir(), "ckpt")),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 5, Interval: time.Hour}))
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(rows).(weir.RestorableSource[types.Row]), 200)
	s := weir.Map(weir.FromSource(job, "rows", weir.Source[types.Row](paced), weir.NoWatermarks[types.Row]()), func(r types.Row) types.Row {
		if !failed.Load() && r.Values[0].I > 1500 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
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
	got := readAll(t, tab("in", opts, dir, "format", "json", "scan.bounded.mode", "latest-offset"))
	seen := map[int64]int{}
	for _, r := range got {
		seen[r.Values[0].I]++
	}
	for i := range int64(n) {
		if seen[i] != 1 {
			t.Fatalf("row %d read %d times (%d rows in all)", i, seen[i], len(got))
		}
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		want string
	}{
		{map[string]string{"topic": "t"}, "missing required option 'format'"},
		{map[string]string{"topic": "t", "format": "json", "value.format": "json"}, "options 'format' and 'value.format' must not both be set"},
		{map[string]string{"topic": "t", "format": "json", "scan.startup.mode": "group-offsets"}, "must be one of 'earliest-offset', 'latest-offset', 'timestamp'"},
		{map[string]string{"topic": "t", "format": "json", "key.fields": "id"}, "option 'key.fields' needs 'key.format'"},
		{map[string]string{"topic": "t", "format": "json", "key.format": "json", "key.fields": "nope"}, "no column 'nope' in table 'x'"},
		{map[string]string{"format": "json"}, "missing required option 'topic'"},
	} {
		c.opts["connector"] = "weir-log"
		_, err := connector.CreateSource(&connector.Table{Name: "x", Schema: schema, Options: c.opts, Settings: connector.Settings{LogDir: "/tmp"}})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
	_, err := connector.CreateSource(&connector.Table{Name: "x", Schema: schema, Options: map[string]string{"connector": "weir-log", "topic": "t", "format": "json"}})
	if err == nil || !strings.Contains(err.Error(), "missing required option 'path'") {
		t.Fatal(err)
	}
}
