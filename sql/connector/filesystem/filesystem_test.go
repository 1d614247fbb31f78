package filesystem_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/types"
)

var schema = types.Schema{
	{Name: "id", Type: types.BigIntType},
	{Name: "name", Type: types.StringType},
	{Name: "ts", Type: types.Timestamp3},
}

func table(name string, opts map[string]string) *connector.Table {
	return &connector.Table{Name: name, Schema: schema, Options: opts}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// committed returns the lines of the committed part files in dir, sorted.
func committed(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "part-") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")...)
	}
	slices.Sort(lines)
	return lines
}

// copyJob reads table in into table out.
func copyJob(t *testing.T, job *weir.Job, in, out *connector.Table) {
	t.Helper()
	src, err := connector.CreateSource(in)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.CreateSink(out)
	if err != nil {
		t.Fatal(err)
	}
	if !src.Bounded || src.Changelog != types.InsertOnly {
		t.Fatalf("source: bounded %v, changelog %v", src.Bounded, src.Changelog)
	}
	s := weir.FromSource(job, in.Name, src.Source, weir.NoWatermarks[types.Row](), src.Options...)
	weir.To(s, sink.Sink, sink.Options...)
}

func TestJSONFilesToCSVDirectory(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.jsonl"), `{"id": 1, "name": "x", "ts": "2020-04-15 08:05:01.5"}`+"\n\n"+`{"id": 2, "name": "y,z", "ts": 1586937901000}`+"\n")
	writeFile(t, filepath.Join(dir, "in", "sub", "b.jsonl"), `{"id": 3, "ts": null}`) // no final newline
	writeFile(t, filepath.Join(dir, "in", ".part-0-x.inprogress"), "not json")
	writeFile(t, filepath.Join(dir, "in", "_SUCCESS"), "not json")
	out := filepath.Join(dir, "out")
	job := weir.NewJob("copy", weir.Parallelism(2))
	copyJob(t, job,
		table("src", map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}),
		table("dst", map[string]string{"connector": "filesystem", "path": out, "format": "csv"}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{`1,x,2020-04-15 08:05:01.5`, `2,"y,z",2020-04-15 08:05:01`, `3,,`}
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("committed %q, want %q", got, want)
	}
	// And back: the CSV directory as a source, a CSV record spanning lines.
	writeFile(t, filepath.Join(out, "extra.csv"), "4,\"multi\nline\",1970-01-01 00:00:00\r\n")
	out2 := filepath.Join(dir, "out2")
	job = weir.NewJob("back")
	copyJob(t, job,
		table("csv", map[string]string{"connector": "filesystem", "path": out, "format": "csv"}),
		table("json", map[string]string{"connector": "filesystem", "path": out2, "format": "json"}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want = []string{
		`{"id":1,"name":"x","ts":"2020-04-15 08:05:01.5"}`,
		`{"id":2,"name":"y,z","ts":"2020-04-15 08:05:01"}`,
		`{"id":3,"name":null,"ts":null}`,
		`{"id":4,"name":"multi\nline","ts":"1970-01-01 00:00:00"}`,
	}
	if got := committed(t, out2); !slices.Equal(got, want) {
		t.Fatalf("committed %q, want %q", got, want)
	}
}

// readIDs runs a job reading the JSON or CSV file in through a filesystem
// table of opts, and returns the first column of its rows, the records
// its sources skipped, and the job's error.
func readIDs(t *testing.T, in string, opts map[string]string, settings connector.Settings) (got []int64, skipped int64, err error) {
	t.Helper()
	opts["connector"] = "filesystem"
	opts["path"] = in
	tab := table("events", opts)
	tab.Settings = settings
	src, err := connector.CreateSource(tab)
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("bad")
	s := weir.FromSource(job, "events", src.Source, weir.NoWatermarks[types.Row](), src.Options...)
	var mu sync.Mutex
	weir.To(s, weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			got = append(got, r.Values[0].I)
		}
		return nil
	}))
	err = job.Run(context.Background())
	for _, op := range job.Metrics().Operators {
		skipped += op.BadRecordsSkipped
	}
	mu.Lock()
	defer mu.Unlock()
	return got, skipped, err
}

// deadLetters is a dead-letter policy that keeps what it receives.
func deadLetters() (connector.Settings, func() []weir.BadRecord) {
	var mu sync.Mutex
	var letters []weir.BadRecord
	dl := weir.DeadLetter(weir.SinkFunc[weir.BadRecord](func(_ context.Context, b []weir.BadRecord) error {
		mu.Lock()
		defer mu.Unlock()
		letters = append(letters, b...)
		return nil
	}))
	return connector.Settings{BadRecords: &dl}, func() []weir.BadRecord {
		mu.Lock()
		defer mu.Unlock()
		return letters
	}
}

func TestMalformedRecord(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeFile(t, in, "{\"id\": 1}\n\n{\"id\": \"x\"}\n{\"id\": 3}\n")
	got, _, err := readIDs(t, in, map[string]string{"format": "json"}, connector.Settings{})
	var re *file.RecordError
	if !errors.As(err, &re) || re.Line != 3 || re.Offset != 11 || !strings.Contains(err.Error(), "in.jsonl:3 (byte offset 11)") ||
		!strings.Contains(err.Error(), "field 'id'") {
		t.Fatalf("error %v, want a RecordError at line 3, offset 11", err)
	}
	if !slices.Equal(got, []int64{1}) {
		t.Fatalf("rows before the bad one: %v", got)
	}
	// The format's ignore-parse-errors skips (and counts) it.
	got, skipped, err := readIDs(t, in, map[string]string{"format": "json", "json.ignore-parse-errors": "true"}, connector.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{1, 3}) || skipped != 1 {
		t.Fatalf("rows %v, %d skipped", got, skipped)
	}
	// The job's policy: dead letters with the position.
	settings, letters := deadLetters()
	if _, _, err := readIDs(t, in, map[string]string{"format": "json"}, settings); err != nil {
		t.Fatal(err)
	}
	if l := letters(); len(l) != 1 || !strings.HasSuffix(l[0].Position, "in.jsonl:3 (byte offset 11)") || string(l[0].Raw) != `{"id": "x"}` {
		t.Fatalf("dead letters %+v", l)
	}
}

// A record longer than the source's limit (16 MiB) is a bad record like
// one that does not parse: an error naming its line by default, skipped
// and counted with 'json.ignore-parse-errors', a dead letter (its first
// 16 MiB) under that policy; the records after it are read (issue 35: it
// failed the job even with ignore-parse-errors).
func TestTooLongRecord(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in.jsonl")
	long := `{"id": 2, "pad": "` + strings.Repeat("x", file.DefaultMaxRecordBytes) + `"}`
	writeFile(t, in, "{\"id\": 1}\n"+long+"\n{\"id\": 3}\n")
	_, _, err := readIDs(t, in, map[string]string{"format": "json"}, connector.Settings{})
	var re *file.RecordError
	if !errors.As(err, &re) || re.Line != 2 || !strings.Contains(err.Error(), "record too long") {
		t.Fatalf("error %v, want a RecordError at line 2 saying the record is too long", err)
	}
	got, skipped, err := readIDs(t, in, map[string]string{"format": "json", "json.ignore-parse-errors": "true"}, connector.Settings{})
	if err != nil || !slices.Equal(got, []int64{1, 3}) || skipped != 1 {
		t.Fatalf("ignore-parse-errors: rows %v, %d skipped, %v; want [1 3], 1 skipped", got, skipped, err)
	}
	settings, letters := deadLetters()
	got, _, err = readIDs(t, in, map[string]string{"format": "json"}, settings)
	if err != nil || !slices.Equal(got, []int64{1, 3}) {
		t.Fatalf("dead letters: rows %v, %v", got, err)
	}
	if l := letters(); len(l) != 1 || !strings.HasSuffix(l[0].Position, "in.jsonl:2 (byte offset 10)") || len(l[0].Raw) != file.DefaultMaxRecordBytes {
		for _, b := range l {
			t.Logf("dead letter at %s, %d bytes", b.Position, len(b.Raw))
		}
		t.Fatalf("%d dead letters, want one of line 2 with its first 16 MiB", len(l))
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		sink bool
		want string
	}{
		{map[string]string{"format": "json"}, false, "table 'x' (connector 'filesystem'): missing required option 'path'"},
		{map[string]string{"path": "/tmp"}, true, "missing required option 'format'"},
		{map[string]string{"path": "/tmp", "format": "yaml"}, false, "option 'format' = 'yaml': no such format (available: "},
		{map[string]string{"path": "/tmp", "format": "json", "sink.rolling-policy.file-size": "12 parsecs"}, true, "unknown memory unit 'parsecs'"},
		{map[string]string{"path": "gs://bucket/out", "format": "json"}, true, "gs:// paths are not supported by the filesystem connector (local paths, file:// and s3:// are)"},
		{map[string]string{"path": "s3:///out", "format": "json"}, true, "no bucket"},
		{map[string]string{"path": "/tmp", "format": "json", "sink.rolling-policy.check-interval": "0 s"}, true, "'sink.rolling-policy.check-interval'"},
		{map[string]string{"path": "/tmp", "format": "json", "sink.rolling-policy.rollover-interval": "soon"}, true, "'sink.rolling-policy.rollover-interval'"},
		{map[string]string{"path": "/tmp", "format": "avro", "avro.codec": "xz"}, true, "option 'avro.codec' = 'xz': weir does not write it"},
		{map[string]string{"path": "/tmp", "format": "avro", "avro.codec": "bzip2"}, true, "option 'avro.codec' = 'bzip2': weir does not write it"},
		{map[string]string{"path": "/tmp", "format": "avro", "avro.codec": "lzo"}, false, "'avro.codec'"},
		{map[string]string{"path": "/tmp", "format": "avro", "avro.encoding": "json"}, true, "'avro.encoding'"},
		{map[string]string{"path": "/tmp", "format": "avro", "avro.ignore-parse-errors": "true"}, false, "unsupported options found for 'filesystem': 'avro.ignore-parse-errors'"},
		{map[string]string{"path": "/tmp", "format": "json", "pth": "x"}, false,
			"unsupported options found for 'filesystem': 'pth' (supported options: connector, format, json.encode.decimal-as-plain-number, json.encode.ignore-null-fields, json.encode.invalid-utf8, json.fail-on-missing-field, json.ignore-parse-errors"},
	} {
		c.opts["connector"] = "filesystem"
		var err error
		if c.sink {
			_, err = connector.CreateSink(table("x", c.opts))
		} else {
			_, err = connector.CreateSource(table("x", c.opts))
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
	// 'avro' is Flink's object-container files (once refused): a source
	// and an exactly-once sink, with any codec weir writes
	for _, c := range []string{"", "null", "deflate", "snappy", "zstandard"} {
		opts := map[string]string{"connector": "filesystem", "path": t.TempDir(), "format": "avro"}
		if c != "" {
			opts["avro.codec"] = c
		}
		if src, err := connector.CreateSource(table("x", opts)); err != nil || !src.Bounded || src.Changelog != types.InsertOnly {
			t.Errorf("avro source %v: %+v, %v", opts, src, err)
		}
		if sink, err := connector.CreateSink(table("x", opts)); err != nil || !sink.ExactlyOnce || sink.Accepts != types.InsertOnly {
			t.Errorf("avro sink %v: %+v, %v", opts, sink, err)
		}
	}
	_, err := connector.CreateSource(table("x", map[string]string{"connector": "filesystm"}))
	if err == nil || !strings.Contains(err.Error(), "could not find a connector for 'connector' = 'filesystm' (available: ") {
		t.Fatal(err)
	}
	_, err = connector.CreateSource(table("x", map[string]string{}))
	if err == nil || !strings.Contains(err.Error(), "do not contain the option 'connector'") {
		t.Fatal(err)
	}
}

// A debezium-json update gives two rows; a checkpoint between them
// restores to the middle of the record.
func TestPositionWithinARecord(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "cdc.jsonl")
	writeFile(t, in, `{"op":"c","after":{"id":1,"name":"a"}}`+"\n"+`{"op":"u","before":{"id":1,"name":"a"},"after":{"id":1,"name":"b"}}`+"\n"+`{"op":"d","before":{"id":1,"name":"b"}}`+"\n")
	src, err := connector.CreateSource(table("cdc", map[string]string{"connector": "filesystem", "path": in, "format": "debezium-json"}))
	if err != nil {
		t.Fatal(err)
	}
	if src.Changelog != types.All {
		t.Fatalf("changelog %v", src.Changelog)
	}
	ctx := context.Background()
	splits, err := src.Source.Splits(ctx)
	if err != nil || len(splits) != 1 {
		t.Fatal(splits, err)
	}
	r, err := src.Source.Open(ctx, splits[0])
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]types.Row, 2)
	if n, err := r.Read(ctx, dst); n != 2 || err != nil || dst[1].Kind != types.UpdateBefore {
		t.Fatalf("Read: %d %v %+v", n, err, dst)
	}
	p, err := r.(weir.CheckpointedReader[types.Row]).Position()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, err = src.Source.(weir.RestorableSource[types.Row]).OpenAt(ctx, splits[0], p)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var kinds []string
	for {
		n, err := r.Read(ctx, dst)
		for _, row := range dst[:n] {
			kinds = append(kinds, fmt.Sprintf("%v%d%s", row.Kind, row.Values[0].I, row.Values[1].S))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"+U1b", "-D1b"}; !slices.Equal(kinds, want) {
		t.Fatalf("after the restore: %v, want %v", kinds, want)
	}
}

// A checkpointed job that fails after two checkpoints and restores writes
// every row exactly once.
func TestExactlyOnceAcrossARestore(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	want := exactlyOnceAcrossARestore(t, filepath.Join(dir, "in"), out, filepath.Join(dir, "ckpt"), writeFile)
	got := committed(t, out)
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows committed, want %d", len(got), len(want))
	}
}

// exactlyOnceAcrossARestore writes three JSON Lines files into in (with
// put), runs a job copying them to CSV files in out that fails once after
// two checkpoints (kept in ckpt) and restores, and returns the rows
// expected in out, sorted.
func exactlyOnceAcrossARestore(t *testing.T, in, out, ckpt string, put func(t *testing.T, path, content string)) []string {
	t.Helper()
	var want []string
	for f := range 3 {
		var b strings.Builder
		for i := range 2000 {
			id := f*10000 + i
			fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"n%d\"}\n", id, id)
			want = append(want, fmt.Sprintf("%d,n%d,", id, id))
		}
		put(t, in+"/"+fmt.Sprintf("f%d.jsonl", f), b.String())
	}
	slices.Sort(want)
	job := restoringJob(ckpt)
	src, err := connector.CreateSource(table("in", map[string]string{"connector": "filesystem", "path": in, "format": "json"}))
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.CreateSink(table("out", map[string]string{"connector": "filesystem", "path": out, "format": "csv"}))
	if err != nil {
		t.Fatal(err)
	}
	if !sink.ExactlyOnce || sink.Accepts != types.InsertOnly {
		t.Fatalf("sink %+v", sink)
	}
	runFailingOnce(t, job, "in", src.Source.(weir.RestorableSource[types.Row]), 300, sink.Sink, func(r types.Row) bool { return r.Values[0].I%10000 > 1000 })
	return want
}

// restoringJob is the checkpointed job of the restore tests: parallelism
// 2, a checkpoint every 5 ms into ckpt, quick restarts.
func restoringJob(ckpt string) *weir.Job {
	return weir.NewJob("eo", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, ckpt),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 5, Interval: time.Hour}))
}

// runFailingOnce runs job: src (a checkpoint every `every` records of
// it) into sink through a Map that fails once, at the first row for which
// fails holds once two checkpoints completed; the job restores and ends.
func runFailingOnce(t *testing.T, job *weir.Job, name string, src weir.RestorableSource[types.Row], every int, sink weir.Sink[types.Row], fails func(types.Row) bool) {
	t.Helper()
	var failed atomic.Bool
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, src, every)
	s := weir.FromSource(job, name, weir.Source[types.Row](paced), weir.NoWatermarks[types.Row]())
	s = weir.Map(s, func(r types.Row) types.Row {
		if !failed.Load() && fails(r) && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
			panic("injected failure")
		}
		return r
	})
	weir.To(s, sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("the failure was not injected")
	}
}
