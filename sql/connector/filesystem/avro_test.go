package filesystem_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/s3test"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

// A checkpointed job writing a partitioned Avro table (snappy, Flink's
// default codec) fails after two checkpoints and restores: every row is
// committed once, in .avro part files in its partition's directory, each
// partition has its _SUCCESS, no hidden file is left, and the table
// reads back equal (the partition columns from the directories).
func TestAvroExactlyOnceAcrossARestore(t *testing.T) {
	dir := t.TempDir()
	want := pqInput(t, filepath.Join(dir, "in"), 3, 2000)
	out := filepath.Join(dir, "out")
	job := restoringJob(filepath.Join(dir, "ckpt"))
	src, err := connector.CreateSource(&connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "in"), "format": "json"}})
	if err != nil {
		t.Fatal(err)
	}
	opts := map[string]string{"connector": "filesystem", "path": out, "format": "avro", "sink.partition-commit.policy.kind": "success-file"}
	sink, err := connector.CreateSink(&connector.Table{Name: "out", Schema: pqSchema, PartitionKeys: []int{2, 3}, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if !sink.ExactlyOnce || sink.Accepts != types.InsertOnly {
		t.Fatalf("sink %+v", sink)
	}
	runFailingOnce(t, job, "in", src.Source.(weir.RestorableSource[types.Row]), 300, sink.Sink, func(r types.Row) bool { return r.Values[0].I%100000 > 1000 })
	parts, files := 0, 0
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
		case !d.IsDir() && name != "_SUCCESS":
			if !strings.HasPrefix(name, "part-") || !strings.HasSuffix(name, ".avro") || strings.Count(rel, "/") != 2 {
				t.Errorf("unexpected file %s", rel)
			}
			// the files hold the other columns only, with snappy
			r := openOCF(t, p, pqSchema[:2])
			if h := r.Header(); h.Codec != "snappy" || strings.Contains(h.SchemaJSON, `"day"`) || !strings.Contains(h.SchemaJSON, `"name"`) {
				t.Errorf("%s: codec %s, schema %s", rel, h.Codec, h.SchemaJSON)
			}
			files++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if parts != 6 || files < 6 {
		t.Errorf("%d partitions, %d files", parts, files)
	}
	got, err := readTable(t, opts, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d rows read back, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
}

func openOCF(t *testing.T, path string, cols types.Schema) *avro.OCFReader {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := avro.FileSchema(cols, avro.FileOptions{Mapping: avro.Mapping{Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := avro.NewFileDecoders(cols, s).Open(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return r
}

// restoredAt records the positions a source is restored at.
type restoredAt struct {
	weir.RestorableSource[types.Row]
	mu  sync.Mutex
	pos [][]byte
}

func (r *restoredAt) OpenAt(ctx context.Context, sp weir.Split, p []byte) (weir.SplitReader[types.Row], error) {
	r.mu.Lock()
	r.pos = append(r.pos, bytes.Clone(p))
	r.mu.Unlock()
	return r.RestorableSource.OpenAt(ctx, sp, p)
}

// withinBlock counts the restored positions within a block (records of
// it taken).
func (r *restoredAt) withinBlock(t *testing.T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.pos {
		if len(p) < 3 || p[0] != 3 {
			t.Fatalf("position % x", p)
		}
		_, k := binary.Uvarint(p[1:])
		if taken, _ := binary.Uvarint(p[1+k:]); taken > 0 {
			n++
		}
	}
	return n
}

// avroSourceRestore writes an Avro table of one file of 5000 rows at in
// (local or s3://), then a checkpointed job reading it at parallelism 2
// fails after two checkpoints and restores within the file's blocks,
// writing to the CSV table at out; it returns the rows expected there.
func avroSourceRestore(t *testing.T, dir, in, out string) []string {
	want := pqInput(t, filepath.Join(dir, "json"), 1, 5000)
	job := weir.NewJob("copy")
	copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "json"), "format": "json"}},
		&connector.Table{Name: "avro", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": in, "format": "avro", "avro.codec": "deflate"}})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	src, err := connector.CreateSource(&connector.Table{Name: "avro", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": in, "format": "avro"}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &restoredAt{RestorableSource: src.Source.(weir.RestorableSource[types.Row])}
	job = restoringJob(filepath.Join(dir, "ckpt"))
	sink, err := connector.CreateSink(&connector.Table{Name: "out", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": out, "format": "csv"}})
	if err != nil {
		t.Fatal(err)
	}
	runFailingOnce(t, job, "avro", weir.RestorableSource[types.Row](rec), 100, sink.Sink, func(r types.Row) bool { return r.Values[0].I%1000 > 300 })
	if n := rec.withinBlock(t); n == 0 {
		t.Fatalf("restored at %d positions, none within a block", len(rec.pos))
	}
	return want
}

// A checkpointed job reading an Avro file fails and restores in the
// middle of a block: every row is written once.
func TestAvroSourceRestores(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	want := avroSourceRestore(t, dir, filepath.Join(dir, "avro"), out)
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d rows committed, want %d (first %q, want %q)", len(got), len(want), got[:min(3, len(got))], want[:3])
	}
}

// The same with the Avro table in s3:// (the source's restore opens the
// object by a ranged read from the block's offset).
func TestAvroOnObjectStorage(t *testing.T) {
	s3test.Start(t, "lake")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	want := avroSourceRestore(t, dir, "s3://lake/avro", out)
	if got := committed(t, out); !slices.Equal(got, want) {
		t.Fatalf("%d rows committed, want %d", len(got), len(want))
	}
	objs, err := objects(t).Walk("s3://lake/avro")
	if err != nil || len(objs) == 0 || !strings.HasSuffix(objs[0].Name, ".avro") {
		t.Fatalf("objects %v, %v", objs, err)
	}
}

// Files of an evolved schema (a field added with a default, a column's
// field removed) and of the table's own read as the table's rows.
func TestAvroEvolvedSchema(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	writeFile(t, filepath.Join(dir, "json", "a.jsonl"), `{"id": 1, "name": "a", "day": "d1", "hour": 1}`+"\n")
	job := weir.NewJob("copy")
	opts := map[string]string{"connector": "filesystem", "path": in, "format": "avro"}
	copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "json"), "format": "json"}},
		&connector.Table{Name: "avro", Schema: pqSchema, Options: opts})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// a producer's evolved schema: 'hour' removed, 'extra' added with a
	// default, 'id' an int (promoted to the table's BIGINT)
	ws, err := avro.Parse(`{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
		{"name":"extra","type":"string","default":"x"},
		{"name":"id","type":"int"},
		{"name":"name","type":["null","string"],"default":null},
		{"name":"day","type":["null","string"],"default":null}]}`)
	if err != nil {
		t.Fatal(err)
	}
	wcols := types.Schema{{Name: "extra", Type: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: true}}, {Name: "id", Type: types.Type{Kind: types.Int, NotNull: true}}, pqSchema[1], pqSchema[2]}
	enc, err := avro.NewRowEncoder(ws, wcols)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := avro.NewOCFWriter(&buf, enc, avro.CodecZstandard)
	if err != nil {
		t.Fatal(err)
	}
	for i := 2; i < 4; i++ {
		if err := w.Write([]types.Value{{S: "e"}, {I: int64(i)}, {S: fmt.Sprint("n", i)}, {S: "d2"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(in, "evolved.avro"), buf.String())
	got, err := readTable(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1,a,d1,1", "2,n2,d2,NULL", "3,n3,d2,NULL"}; !slices.Equal(got, want) {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// A corrupt block fails the job with an error naming the file and the
// block's offset; a file that is not Avro fails naming the file.
func TestAvroCorruptFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	pqInput(t, filepath.Join(dir, "json"), 1, 5000)
	job := weir.NewJob("copy")
	opts := map[string]string{"connector": "filesystem", "path": in, "format": "avro"}
	copyJob(t, job, &connector.Table{Name: "in", Schema: pqSchema, Options: map[string]string{"connector": "filesystem", "path": filepath.Join(dir, "json"), "format": "json"}},
		&connector.Table{Name: "avro", Schema: pqSchema, Options: opts})
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(in)
	if err != nil || len(ents) != 1 {
		t.Fatal(ents, err)
	}
	path := filepath.Join(in, ents[0].Name())
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)*2/3] ^= 0x5a
	writeFile(t, path, string(data))
	_, err = readTable(t, opts)
	if err == nil || !strings.Contains(err.Error(), "table 'in': avro file "+path+": block at byte ") {
		t.Fatalf("a corrupt block: %v", err)
	}
	writeFile(t, path, "id,name\n1,x\n")
	_, err = readTable(t, opts)
	if err == nil || !strings.Contains(err.Error(), "avro file "+path+": header: not an Avro object-container file") {
		t.Fatalf("not Avro: %v", err)
	}
}

// pyavro returns a python that imports Apache Avro's library (as
// sql/format/avro's tests: skipped without one unless
// WEIR_REQUIRE_PYAVRO=1).
func pyavro(t *testing.T) string {
	t.Helper()
	cands := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("WEIR_PYAVRO"); p != "" {
		cands = []string{p}
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil && exec.Command(p, "-c", "import avro").Run() == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_PYAVRO") == "1" {
		t.Fatal("WEIR_REQUIRE_PYAVRO=1 but no python3 imports avro (bash scripts/avro.sh install)")
	}
	t.Skip("python3-avro is not installed (bash scripts/avro.sh install)")
	return ""
}

func runPy(t *testing.T, py string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("..", "..", "format", "avro", "testdata", "pyavro.py")}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyavro.py %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// The writer schema of pyavro.py's records, sql/format/avro's.
var pySchema = func() string {
	b, err := os.ReadFile("../../format/avro/testdata/pywriter.avsc")
	if err != nil {
		panic(err)
	}
	return string(b)
}()

// pyTable reads some of the file's fields (the others are skipped), one
// promoted (qty: int to BIGINT, price: float to DOUBLE), and a column the
// files lack (added: NULL).
var pyTable = types.Schema{
	{Name: "id", Type: types.BigIntType},
	{Name: "name", Type: types.StringType},
	{Name: "price", Type: types.DoubleType},
	{Name: "qty", Type: types.BigIntType},
	{Name: "tags", Type: types.ArrayOf(types.StringType)},
	{Name: "ts", Type: types.Timestamp3},
	{Name: "amount", Type: types.DecimalType(10, 2)},
	{Name: "added", Type: types.StringType},
}

const pyGenerated = 3000

// pyExpected are the lines of pyavro.py's records (the two fixed, then
// gen(i)) in pyTable, as pyavro.py prints a record of the table's schema.
func pyExpected() []string {
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	line := func(id int64, name *string, price float64, qty int64, tags []string, ts time.Time, cents int64) string {
		n := "null"
		if name != nil {
			n = q(*name)
		}
		var tl []string
		for _, s := range tags {
			tl = append(tl, q(s))
		}
		return fmt.Sprintf(`{"added": null, "amount": %s, "id": %d, "name": %s, "price": %s, "qty": %d, "tags": [%s], "ts": %s}`,
			q("dec:"+decimal2(cents)), id, n, q("f:"+pyFloat(price)), qty, strings.Join(tl, ", "), q("ts:"+ts.UTC().Format("2006-01-02 15:04:05.000000")))
	}
	ann := "ann"
	out := []string{
		line(1, &ann, 1.5, 3, []string{"a", "b"}, time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC), -12345),
		line(2, nil, -0.25, -7, nil, time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC), 1),
	}
	for i := range pyGenerated {
		var name *string
		if i%7 != 0 {
			s := fmt.Sprintf("n%d", i)
			name = &s
		}
		tags := make([]string, i%3)
		for j := range tags {
			tags[j] = fmt.Sprintf("t%d", i)
		}
		out = append(out, line(int64(1000+i), name, float64(i)*0.5, int64(i-2500), tags, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i)*time.Millisecond), int64(i)))
	}
	return out
}

func decimal2(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// pyFloat is Python's repr of the tests' floats.
func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pyLine formats a row of pyTable as pyExpected.
func pyLine(r types.Row) string {
	v := r.Values
	var name *string
	if !v[1].Null {
		name = &v[1].S
	}
	var tags []string
	for _, x := range v[4].List() {
		tags = append(tags, x.S)
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	n := "null"
	if name != nil {
		n = q(*name)
	}
	var tl []string
	for _, s := range tags {
		tl = append(tl, q(s))
	}
	added := "null"
	if !v[7].Null {
		added = q(v[7].S)
	}
	return fmt.Sprintf(`{"added": %s, "amount": %s, "id": %d, "name": %s, "price": %s, "qty": %d, "tags": [%s], "ts": %s}`,
		added, q("dec:"+decimal2(v[6].I)), v[0].I, n, q("f:"+pyFloat(v[2].Float())), v[3].I, strings.Join(tl, ", "), q("ts:"+time.UnixMicro(v[5].I).UTC().Format("2006-01-02 15:04:05.000000")))
}

// readRows reads a filesystem table of schema with a job, and returns
// its rows formatted by f, sorted.
func readRows(t *testing.T, schema types.Schema, opts map[string]string, f func(types.Row) string) []string {
	t.Helper()
	src, err := connector.CreateSource(&connector.Table{Name: "in", Schema: schema, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("read", weir.Parallelism(2))
	var mu sync.Mutex
	var got []string
	weir.To(weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row](), src.Options...), weir.SinkFunc[types.Row](func(_ context.Context, rows []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			got = append(got, f(r))
		}
		return nil
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

// Apache Avro's Python library writes object-container files, with every
// codec it has (null, deflate and bzip2 always; snappy and zstandard when
// their modules are installed), that weir's SQL source reads with schema
// resolution; weir's SQL sink writes them out with each of its codecs,
// and the Python library reads those that it has the codec of, finding
// the same records.
func TestAvroFilesWithPython(t *testing.T) {
	py := pyavro(t)
	dir := t.TempDir()
	schema := filepath.Join(dir, "w.avsc")
	writeFile(t, schema, pySchema)
	pyCodecs := strings.Fields(runPy(t, py, "codecs")[0])
	if os.Getenv("WEIR_REQUIRE_PYAVRO") != "" {
		// scripts/avro.sh installs python3-snappy and python3-zstandard
		for _, c := range []string{"null", "deflate", "snappy", "zstandard"} {
			if !slices.Contains(pyCodecs, c) {
				t.Fatalf("Python's avro has codecs %v, not %s: bash scripts/avro.sh install", pyCodecs, c)
			}
		}
	}
	in := filepath.Join(dir, "py")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range pyCodecs {
		runPy(t, py, "ocf-write", schema, filepath.Join(in, c+".avro"), c, strconv.Itoa(pyGenerated))
		want = append(want, pyExpected()...)
	}
	slices.Sort(want)
	inOpts := map[string]string{"connector": "filesystem", "path": in, "format": "avro"}
	if got := readRows(t, pyTable, inOpts, pyLine); !slices.Equal(got, want) {
		t.Fatalf("weir read %d rows of Python's files (%v), want %d\nfirst %q\nwant  %q", len(got), pyCodecs, len(want), got[:min(2, len(got))], want[:2])
	}
	t.Logf("Python wrote codecs %v", pyCodecs)
	for _, c := range []string{"null", "deflate", "snappy", "zstandard"} {
		out := filepath.Join(dir, "weir-"+c)
		opts := map[string]string{"connector": "filesystem", "path": out, "format": "avro", "avro.codec": c}
		job := weir.NewJob("copy", weir.Parallelism(2))
		copyJob(t, job, &connector.Table{Name: "py", Schema: pyTable, Options: inOpts}, &connector.Table{Name: "out", Schema: pyTable, Options: opts})
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		// weir reads its own files back
		if got := readRows(t, pyTable, opts, pyLine); !slices.Equal(got, want) {
			t.Fatalf("%s: weir read %d rows back, want %d", c, len(got), len(want))
		}
		if !slices.Contains(pyCodecs, c) {
			t.Logf("%s: Python's avro library lacks the codec here; not read by Python", c)
			continue
		}
		files, err := filepath.Glob(filepath.Join(out, "part-*.avro"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: part files %v, %v", c, files, err)
		}
		got := runPy(t, py, append([]string{"ocf-read"}, files...)...)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("%s: Python read %d records of weir's files, want %d\nfirst %q\nwant  %q", c, len(got), len(want), got[:min(2, len(got))], want[:2])
		}
	}
}
