package filesystem_test

import (
	"context"
	"errors"
	"fmt"

	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format/parquet"
	"github.com/weirstream/weir/sql/types"
)

// pqSchema is partitioned by day and hour when the table says so.
var pqSchema = types.Schema{
	{Name: "id", Type: types.BigIntType},
	{Name: "name", Type: types.StringType},
	{Name: "day", Type: types.StringType},
	{Name: "hour", Type: types.Type{Kind: types.Int}},
}

// readTable reads a filesystem table of pqSchema with a job, and returns
// its rows formatted, sorted.
func readTable(t *testing.T, opts map[string]string, partitionKeys ...int) ([]string, error) {
	t.Helper()
	tab := &connector.Table{Name: "in", Schema: pqSchema, Options: opts, PartitionKeys: partitionKeys}
	src, err := connector.CreateSource(tab)
	if err != nil {
		return nil, err
	}
	job := weir.NewJob("read", weir.Parallelism(2))
	s := weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row](), src.Options...)
	var mu sync.Mutex
	var got []string
	weir.To(s, weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			got = append(got, fmtRow(r))
		}
		return nil
	}))
	err = job.Run(context.Background())
	slices.Sort(got)
	return got, err
}

func fmtRow(r types.Row) string {
	var b strings.Builder
	for i, v := range r.Values {
		if i > 0 {
			b.WriteByte(',')
		}
		switch {
		case v.Null:
			b.WriteString("NULL")
		case v.S != "":
			b.WriteString(v.S)
		default:
			fmt.Fprint(&b, v.I)
		}
	}
	return b.String()
}

// pqRows is a source of n rows of pqSchema: day d%3, hour d%2.
func pqInput(t *testing.T, dir string, files, n int) []string {
	var want []string
	for f := range files {
		var b strings.Builder
		for i := range n {
			id := f*100000 + i
			fmt.Fprintf(&b, "{\"id\": %d, \"name\": \"n%d\", \"day\": \"2026-12-0%d\", \"hour\": %d}\n", id, id, 1+id%3, id%2)
			want = append(want, fmt.Sprintf("%d,n%d,2026-12-0%d,%d", id, id, 1+id%3, id%2))
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("f%d.jsonl", f)), b.String())
	}
	slices.Sort(want)
	return want
}

// A checkpointed job writing partitioned Parquet fails after two
// checkpoints and restores: every row is committed exactly once, in its
// partition's directory, every partition has its _SUCCESS, no hidden
// file is left, and the table reads back equal.
func TestParquetExactlyOnceAcrossARestore(t *testing.T) {
	dir := t.TempDir()
	want := pqInput(t, filepath.Join(dir, "in"), 3, 2000)
	out := filepath.Join(dir, "out")
	job := restoringJob(filepath.Join(dir, "ckpt"))
	in := &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}}
	src, err := connector.CreateSource(in)
	if err != nil {
		t.Fatal(err)
	}
	sink, err := connector.CreateSink(&connector.Table{Name: "out", Schema: pqSchema, PartitionKeys: []int{2, 3}, Options: map[string]string{
		"connector": "filesystem", "path": out, "format": "parquet", "parquet.compression": "SNAPPY",
		"sink.partition-commit.policy.kind": "success-file"}})
	if err != nil {
		t.Fatal(err)
	}
	if !sink.ExactlyOnce || sink.Accepts != types.InsertOnly {
		t.Fatalf("sink %+v", sink)
	}
	runFailingOnce(t, job, "in", src.Source.(weir.RestorableSource[types.Row]), 300, sink.Sink, func(r types.Row) bool { return r.Values[0].I%100000 > 1000 })
	// the layout: six partitions, each with _SUCCESS and .parquet parts
	parts := 0
	err = filepath.WalkDir(out, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		name := d.Name()
		switch {
		case strings.HasPrefix(name, "."):
			t.Errorf("hidden file left: %s", rel)
		case d.IsDir() && strings.Count(rel, "/") == 1:
			if _, err := os.Stat(filepath.Join(p, "_SUCCESS")); err != nil {
				t.Errorf("partition %s: %v", rel, err)
			}
			parts++
		case !d.IsDir() && name != "_SUCCESS" && (!strings.HasSuffix(name, ".parquet") || strings.Count(rel, "/") != 2):
			t.Errorf("unexpected file %s", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if parts != 6 {
		t.Errorf("%d partitions, want 6", parts)
	}
	got, err := readTable(t, map[string]string{"connector": "filesystem", "path": out, "format": "parquet"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows read back, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
}

// The partition directories are Hive's: escaped values, NULL and the empty string as
// the default partition, read back as the column's values.
func TestParquetPartitionValues(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.jsonl"), `{"id": 1, "name": "a", "day": "x/y=z%", "hour": 3}`+"\n"+`{"id": 2, "name": "b", "day": null, "hour": null}`+"\n")
	out := filepath.Join(dir, "out")
	job := weir.NewJob("copy")
	in := &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}}
	dst := &connector.Table{Name: "out", Schema: pqSchema, PartitionKeys: []int{2, 3}, Options: map[string]string{"connector": "filesystem", "path": out, "format": "parquet"}}
	copyJob(t, job, in, dst)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"day=x%2Fy%3Dz%25/hour=3", "day=" + parquet.DefaultPartitionName + "/hour=" + parquet.DefaultPartitionName} {
		if fi, err := os.Stat(filepath.Join(out, d)); err != nil || !fi.IsDir() {
			t.Errorf("partition %s: %v", d, err)
		}
	}
	got, err := readTable(t, map[string]string{"connector": "filesystem", "path": out, "format": "parquet"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1,a,x/y=z%,3", "2,b,NULL,NULL"}; !slices.Equal(got, want) {
		t.Fatalf("read back %q, want %q", got, want)
	}
}

func TestParquetBadInput(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.parquet"), "id,name\n1,x\n")
	_, err := readTable(t, map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "parquet"})
	var re *parquet.ReadError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), filepath.Join(dir, "in", "a.parquet")) || !strings.Contains(err.Error(), "not a valid Parquet file") {
		t.Fatalf("error %v, want a ReadError naming the file", err)
	}
	// a column of another type
	out := filepath.Join(dir, "out")
	writeFile(t, filepath.Join(dir, "src", "a.jsonl"), `{"id": 1, "name": "a", "day": "d", "hour": 3}`+"\n")
	job := weir.NewJob("copy")
	copyJob(t, job,
		&connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "src"), "format": "json"}},
		&connector.Table{Name: "out", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": out, "format": "parquet"}})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	wrong := slices.Clone(pqSchema)
	wrong[1].Type = types.Type{Kind: types.Date}
	src, err := connector.CreateSource(&connector.Table{Name: "in", Schema: wrong, Options: map[string]string{"connector": "filesystem", "path": out, "format": "parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	job = weir.NewJob("read")
	weir.To(weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row]()), weir.SinkFunc[types.Row](func(context.Context, []types.Row) error { return nil }))
	err = job.Run(context.Background())
	var se *parquet.SchemaError
	if !errors.As(err, &se) || se.Column != "name" || !strings.Contains(err.Error(), "cannot be read as DATE") {
		t.Fatalf("error %v, want a SchemaError naming column 'name'", err)
	}
}

func TestParquetOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opts map[string]string
		keys []int
		want string
	}{
		{map[string]string{"parquet.compression": "LZO"}, nil, "'parquet.compression'"},
		{map[string]string{"parquet.block.size": "0"}, nil, "'parquet.block.size'"},
		{map[string]string{}, []int{0, 1, 2, 3}, "every column is a partition column"},
		{map[string]string{"sink.partition-commit.policy.kind": "metastore"}, []int{2}, "only 'success-file'"},
		{map[string]string{"sink.partition-commit.policy.kind": "success-file", "sink.partition-commit.trigger": "partition-time", "partition.time-extractor.timestamp-formatter": "yyyy-MM-dd GGG"}, []int{2}, "the field 'GGG'"},
		{map[string]string{"sink.partition-commit.policy.kind": "success-file", "sink.partition-commit.trigger": "partition-time", "partition.time-extractor.kind": "custom"}, []int{2}, "only 'default'"},
		{map[string]string{"sink.partition-commit.policy.kind": "success-file", "sink.partition-commit.trigger": "partition-time", "sink.partition-commit.watermark-time-zone": "Mars/Olympus"}, []int{2}, "'sink.partition-commit.watermark-time-zone'"},
		{map[string]string{"sink.partition-commit.policy.kind": "success-file"}, nil, "not partitioned"},
		{map[string]string{"partition.default-name": "a/b"}, []int{2}, "'partition.default-name'"},
	} {
		c.opts["connector"], c.opts["path"], c.opts["format"] = "filesystem", t.TempDir(), "parquet"
		_, err := connector.CreateSink(&connector.Table{Name: "x", Schema: pqSchema, Options: c.opts, PartitionKeys: c.keys})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: %v, want %q", c.opts, c.keys, err, c.want)
		}
	}
	// the filesystem connector takes PARTITIONED BY tables
	if err := connector.CheckPartitioning(&connector.Table{Name: "x", Schema: pqSchema, PartitionKeys: []int{2}, Options: map[string]string{"connector": "filesystem"}}); err != nil {
		t.Error(err)
	}
	_, err := connector.CreateSink(&connector.Table{Name: "x", Schema: types.Schema{{Name: "iv", Type: types.Type{Kind: types.Interval}}},
		Options: map[string]string{"connector": "filesystem", "path": t.TempDir(), "format": "parquet"}})
	if err == nil || !strings.Contains(err.Error(), "column 'iv'") {
		t.Errorf("INTERVAL column: %v", err)
	}
}

// 'partition.default-name' names the directory of NULL partition values,
// written and read.
func TestPartitionDefaultName(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "a.jsonl"), `{"id": 1, "name": "a", "day": "", "hour": null}`+"\n")
	for _, f := range []string{"parquet", "json"} {
		out := filepath.Join(dir, "out-"+f)
		opts := map[string]string{"connector": "filesystem", "path": out, "format": f, "partition.default-name": "none"}
		job := weir.NewJob("copy")
		copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}},
			&connector.Table{Name: "out", Schema: pqSchema, Options: opts, PartitionKeys: []int{2, 3}})
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(filepath.Join(out, "day=none", "hour=none")); err != nil || !fi.IsDir() {
			t.Fatalf("%s: %v", f, err)
		}
		got, err := readTable(t, opts, 2, 3)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"1,a,NULL,NULL"}; !slices.Equal(got, want) {
			t.Fatalf("%s: read back %q, want %q", f, got, want)
		}
	}
}

// A file of several row groups is split by row group; a checkpointed job
// reading them at parallelism 2 fails after two checkpoints, restores
// positions within the row groups, and writes every row once.
func TestParquetSourceSplitsAndRestores(t *testing.T) {
	dir := t.TempDir()
	want := pqInput(t, filepath.Join(dir, "json"), 1, 5000)
	pq := filepath.Join(dir, "pq")
	job := weir.NewJob("copy")
	copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "json"), "format": "json"}},
		&connector.Table{Name: "out", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": pq, "format": "parquet", "parquet.block.size": "1kb"}})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	src, err := connector.CreateSource(&connector.Table{Name: "pq", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": pq, "format": "parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	splits, err := src.Source.Splits(context.Background())
	if err != nil || len(splits) < 10 {
		t.Fatalf("%d splits (%v), want one per row group", len(splits), err)
	}
	out := filepath.Join(dir, "out")
	job = restoringJob(filepath.Join(dir, "ckpt"))
	sink, err := connector.CreateSink(&connector.Table{Name: "out", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": out, "format": "csv"}})
	if err != nil {
		t.Fatal(err)
	}
	runFailingOnce(t, job, "pq", src.Source.(weir.RestorableSource[types.Row]), 100, sink.Sink, func(r types.Row) bool { return r.Values[0].I%256 > 100 })
	got := committed(t, out)
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows committed, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
}
