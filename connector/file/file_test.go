package file

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

type event struct {
	ID   int       `json:"id"`
	Name string    `json:"name"`
	Tags []string  `json:"tags,omitempty"`
	At   time.Time `json:"at"`
}

func events(n int) []event {
	out := make([]event, n)
	for i := range out {
		out[i] = event{ID: i, Name: fmt.Sprintf("e<%d> & \"ü\"", i), At: time.UnixMilli(1_700_000_000_000 + int64(i)).UTC()}
		if i%3 == 0 {
			// Records without tags follow records with tags: decoding into a
			// reused batch slot must not leave the old tags behind.
			out[i].Tags = []string{"a", strconv.Itoa(i)}
		}
	}
	return out
}

func eventLine(id int) string {
	b, err := json.Marshal(event{ID: id, Name: "n" + strconv.Itoa(id)})
	if err != nil {
		panic(err)
	}
	return string(b) + "\n"
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func appendFile(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// waitFor polls cond until it holds, failing the test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	weirtest.WaitFor(t, what, 30*time.Second, cond)
}

// collect runs a job reading src and returns what it read.
func collect[T any](t *testing.T, src weir.Source[T], opts ...weir.JobOption) ([]T, *weir.Job, error) {
	t.Helper()
	job := weir.NewJob("test", opts...)
	out := weir.Collect(weir.FromSource(job, "in", src, weir.NoWatermarks[T]()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := job.Run(ctx)
	return out.Items(), job, err
}

func skippedMetric(job *weir.Job) int64 {
	return job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 { return o.BadRecordsSkipped })
}

// openReader opens the reader of the first split of src.
func openReader[T any](t *testing.T, src weir.Source[T]) *Reader[T] {
	t.Helper()
	splits, err := src.Splits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Open(context.Background(), splits[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.(*Reader[T])
}

func byID(es []event) []event {
	sort.Slice(es, func(i, j int) bool { return es[i].ID < es[j].ID })
	return es
}

func TestJSONLinesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.jsonl")
	in := events(5000)

	job := weir.NewJob("write")
	weir.To(weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[event]()), JSONLinesSink[event](path))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != len(in) {
		t.Fatalf("%d lines, want %d", len(lines), len(in))
	}
	if !strings.Contains(lines[0], `e<0> & \"ü\"`) {
		t.Errorf("first line %s: want HTML characters unescaped", lines[0])
	}

	got, _, err := collect(t, JSONLines[event]([]string{path}), weir.BatchSize(64))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("read back %d events, differ from the %d written", len(got), len(in))
	}
}

func TestJSONLinesSkipsBlankLines(t *testing.T) {
	path := writeFile(t, t.TempDir(), "x.jsonl", "\n"+eventLine(1)+"  \r\n\n"+eventLine(2)+"\t\n"+strings.TrimSuffix(eventLine(3), "\n"))
	got, _, err := collect(t, JSONLines[event]([]string{path}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].ID != 1 || got[1].ID != 2 || got[2].ID != 3 {
		t.Fatalf("got %+v", got)
	}
}

func TestJSONLinesSinkParallel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	in := events(3000)
	job := weir.NewJob("write")
	src := weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[event]())
	weir.To(src, JSONLinesSink[event](path), weir.Parallelism(3))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s should not exist at parallelism 3: %v", path, err)
	}
	var paths []string
	for i := range 3 {
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", i)))
	}
	// Three splits over two subtasks.
	got, _, err := collect(t, JSONLines[event](paths), weir.Parallelism(2))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(byID(got), in) {
		t.Fatalf("read back %d events, differ from the %d written", len(got), len(in))
	}
}

func TestSubtaskPath(t *testing.T) {
	for _, c := range []struct {
		path string
		i, p int
		want string
	}{
		{"out.jsonl", 0, 1, "out.jsonl"},
		{"out.jsonl", 0, 2, "out-0.jsonl"},
		{"out.jsonl", 1, 2, "out-1.jsonl"},
		{"dir.d/out", 3, 4, "dir.d/out-3"},
		{"a/out.tar.gz", 2, 3, "a/out.tar-2.gz"},
	} {
		if got := subtaskPath(c.path, c.i, c.p); got != c.want {
			t.Errorf("subtaskPath(%q, %d, %d) = %q, want %q", c.path, c.i, c.p, got, c.want)
		}
	}
}

type item struct {
	Name string
	Qty  int
	Note string
}

func parseItem(f []string) (item, error) {
	if len(f) != 3 {
		return item{}, fmt.Errorf("%d fields, want 3", len(f))
	}
	q, err := strconv.Atoi(f[1])
	if err != nil {
		return item{}, err
	}
	return item{f[0], q, f[2]}, nil
}

const itemsCSV = "name,qty,note\r\n" +
	"apple,3,plain\r\n" +
	"\r\n" +
	"\"pear, green\",4,\"said \"\"hi\"\"\"\n" +
	"plum,5,\"two\n" +
	"\n" +
	"lines\"\n" +
	"fig,6,"

var items = []item{
	{"apple", 3, "plain"},
	{"pear, green", 4, `said "hi"`},
	{"plum", 5, "two\n\nlines"},
	{"fig", 6, ""},
}

func TestCSVRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "items.csv", itemsCSV)
	got, _, err := collect(t, CSV([]string{path}, parseItem, Header(true)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, items) {
		t.Fatalf("got %+v\nwant %+v", got, items)
	}

	// Without Header, the header is a record (that parseItem rejects).
	_, _, err = collect(t, CSV([]string{path}, parseItem))
	var re *RecordError
	if !errors.As(err, &re) || re.Line != 1 || re.Offset != 0 || !errors.Is(err, strconv.ErrSyntax) {
		t.Fatalf("without Header: %v", err)
	}

	// Written by encoding/csv, read back.
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	var want []item
	for i := range 2000 {
		it := item{fmt.Sprintf("n,%d", i), i, strings.Repeat("\"q\"\n", i%3)}
		want = append(want, it)
		w.Write([]string{it.Name, strconv.Itoa(it.Qty), it.Note})
	}
	w.Flush()
	path = writeFile(t, dir, "gen.csv", buf.String())
	got, _, err = collect(t, CSV([]string{path}, parseItem), weir.BatchSize(7))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %d items, differ from the %d written", len(got), len(want))
	}
}

func TestMalformedLineFailsJob(t *testing.T) {
	dir := t.TempDir()
	l1, l2, bad := eventLine(1), eventLine(2), `{"id": 3, "name": x}`+"\n"
	writeFile(t, dir, "clicks.jsonl", l1+l2+bad+eventLine(4))
	path := dir + "/./clicks.jsonl" // cleaned by the source
	got, _, err := collect(t, JSONLines[event]([]string{path}))
	if err == nil {
		t.Fatal("job succeeded")
	}
	var re *RecordError
	if !errors.As(err, &re) {
		t.Fatalf("%v: not a *RecordError", err)
	}
	clean := filepath.Join(dir, "clicks.jsonl")
	off := int64(len(l1) + len(l2))
	if re.Path != clean || re.Line != 3 || re.Offset != off {
		t.Errorf("got %s:%d@%d, want %s:3@%d", re.Path, re.Line, re.Offset, clean, off)
	}
	want := fmt.Sprintf("file: %s:3 (byte offset %d): invalid character 'x'", clean, off)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("%v does not unwrap to a *json.SyntaxError", err)
	}
	// The records before the bad one were delivered.
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 2 {
		t.Errorf("delivered %+v, want events 1 and 2", got)
	}
}

func TestMalformedCSVFailsJob(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name, data string
		line, off  int64
		is         error
	}{
		{"bare quote", "a,1,x\nb,2,\"two\nlines\"\nc,3,x\"y\"\n", 4, 22, csv.ErrBareQuote},
		{"unterminated", "a,1,x\nb,2,\"never\nends\n", 2, 6, csv.ErrQuote},
		{"parse", "a,1,x\nb,two,x\n", 2, 6, strconv.ErrSyntax},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := writeFile(t, dir, "x.csv", c.data)
			_, _, err := collect(t, CSV([]string{path}, parseItem))
			var re *RecordError
			if !errors.As(err, &re) {
				t.Fatalf("%v: not a *RecordError", err)
			}
			if re.Line != c.line || re.Offset != c.off || !errors.Is(err, c.is) {
				t.Fatalf("%v: want line %d, offset %d, cause %v", err, c.line, c.off, c.is)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%s:%d (byte offset %d)", path, c.line, c.off)) {
				t.Fatalf("%v does not name the place", err)
			}
		})
	}
}

func TestSkipBadRecords(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	bad := []string{`{"id": 1,`, `garbage`, `{"id": "not a number"}`, `[1, 2`}
	var want []int
	for i := range 20 {
		if i%5 == 2 {
			b.WriteString(bad[i/5] + "\n")
			continue
		}
		b.WriteString(eventLine(i))
		want = append(want, i)
	}
	path := writeFile(t, dir, "x.jsonl", b.String())

	got, job, err := collect(t, JSONLines[event]([]string{path}, SkipBadRecords()))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int
	for _, e := range got {
		ids = append(ids, e.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("got ids %v, want %v", ids, want)
	}
	if n := skippedMetric(job); n != int64(len(bad)) {
		t.Errorf("metric: %d skipped, want %d", n, len(bad))
	}

	r := openReader(t, JSONLines[event]([]string{path}, SkipBadRecords()))
	dst := make([]event, 3)
	total := 0
	for {
		n, err := r.Read(context.Background(), dst)
		total += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if total != len(want) || r.Skipped() != int64(len(bad)) {
		t.Errorf("reader: %d records, %d skipped; want %d, %d", total, r.Skipped(), len(want), len(bad))
	}
	if r.Offset() != int64(b.Len()) {
		t.Errorf("Position %d at the end, want %d", r.Offset(), b.Len())
	}

	// CSV: syntax errors and parse errors.
	path = writeFile(t, dir, "x.csv", "a,1,x\nb,2\nc,3,\"z\"z\nd,4,\"multi\nline\"\ne,x,x\nf,6,y\n")
	gotItems, job, err := collect(t, CSV([]string{path}, parseItem, SkipBadRecords()))
	if err != nil {
		t.Fatal(err)
	}
	wantItems := []item{{"a", 1, "x"}, {"d", 4, "multi\nline"}, {"f", 6, "y"}}
	if !reflect.DeepEqual(gotItems, wantItems) || skippedMetric(job) != 3 {
		t.Fatalf("got %+v and %d skipped, want %+v and 3", gotItems, skippedMetric(job), wantItems)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.jsonl")
	_, _, err := collect(t, JSONLines[event]([]string{missing}))
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
	_, _, err = collect(t, JSONLines[event]([]string{dir}))
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("directory: %v", err)
	}
	for _, c := range []struct {
		src  weir.Source[event]
		want string
	}{
		{JSONLines[event](nil), "no paths"},
		{JSONLines[event]([]string{"a", "./a"}), "given twice"},
		{JSONLines[event]([]string{missing}, Header(true)), "only valid for CSV"},
		{JSONLines[event]([]string{missing}, Follow(0)), "must be positive"},
		{CSV[event]([]string{missing}, nil), "parse function"},
	} {
		if _, _, err := collect(t, c.src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want an error containing %q", err, c.want)
		}
	}
}

func TestFollowJob(t *testing.T) {
	dir := t.TempDir()
	pathA := writeFile(t, dir, "a.jsonl", eventLine(1)+eventLine(2))
	pathB := writeFile(t, dir, "b.jsonl", "")
	base := runtime.NumGoroutine()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	job := weir.NewJob("follow")
	src := JSONLines[event]([]string{pathA, pathB}, Follow(2*time.Millisecond))
	out := weir.Collect(weir.FromSource(job, "in", src, weir.NoWatermarks[event]()))
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	has := func(ids ...int) func() bool {
		return func() bool {
			var got []int
			for _, e := range out.Items() {
				got = append(got, e.ID)
			}
			sort.Ints(got)
			return slices.Equal(got, ids)
		}
	}

	waitFor(t, "the existing lines", has(1, 2))
	appendFile(t, pathA, eventLine(3)+eventLine(4))
	waitFor(t, "the appended lines", has(1, 2, 3, 4))

	// A line being written: were it decoded, the job would fail.
	five := eventLine(5)
	appendFile(t, pathA, five[:7])
	appendFile(t, pathB, eventLine(100))
	waitFor(t, "a line of the other file", has(1, 2, 3, 4, 100))
	appendFile(t, pathA, five[7:])
	waitFor(t, "the completed line", has(1, 2, 3, 4, 5, 100))
	for _, e := range out.Items() {
		if e.ID == 5 && e.Name != "n5" {
			t.Errorf("completed line read as %+v", e)
		}
	}

	select {
	case err := <-done:
		t.Fatalf("job ended while following: %v", err)
	default:
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	waitFor(t, "the job's goroutines to end", func() bool { return runtime.NumGoroutine() <= base })
}

func TestFollowHoldsBackPartialLine(t *testing.T) {
	path := writeFile(t, t.TempDir(), "x.jsonl", eventLine(1))
	r := openReader(t, JSONLines[event]([]string{path}, Follow(time.Millisecond)))
	ctx := context.Background()
	dst := make([]event, 4)
	waitForRead := func(what string) []event {
		t.Helper()
		var got []event
		waitFor(t, what, func() bool {
			n, err := r.Read(ctx, dst)
			if err != nil {
				t.Fatal(err)
			}
			got = dst[:n]
			return n > 0
		})
		return got
	}
	if got := waitForRead("line 1"); len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("got %+v", got)
	}
	start := int64(len(eventLine(1)))
	two := eventLine(2)
	appendFile(t, path, two[:5])
	// Read until the reader has seen the partial line, then some more.
	waitFor(t, "the partial line to be read", func() bool {
		n, err := r.Read(ctx, dst)
		if n != 0 || err != nil {
			t.Fatalf("Read = %d, %v with only a partial line", n, err)
		}
		return len(r.lines.partial) > 0
	})
	appendFile(t, path, two[5:len(two)-1]) // all but the '\n'
	for range 10 {
		if n, err := r.Read(ctx, dst); n != 0 || err != nil {
			t.Fatalf("Read = %d, %v with only a partial line", n, err)
		}
	}
	if r.Offset() != start {
		t.Errorf("Position %d, want %d", r.Offset(), start)
	}
	appendFile(t, path, "\n")
	if got := waitForRead("line 2"); len(got) != 1 || got[0].ID != 2 || got[0].Name != "n2" {
		t.Fatalf("got %+v", got)
	}
	if want := start + int64(len(two)); r.Offset() != want {
		t.Errorf("Position %d, want %d", r.Offset(), want)
	}

	// Cancelled: Read returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.Read(cctx, dst); !errors.Is(err, context.Canceled) {
		t.Errorf("Read after cancel: %v", err)
	}
}

func TestFollowCSVRecordAcrossPolls(t *testing.T) {
	path := writeFile(t, t.TempDir(), "x.csv", "name,qty,note\n")
	r := openReader(t, CSV([]string{path}, parseItem, Header(true), Follow(time.Millisecond)))
	ctx := context.Background()
	dst := make([]item, 4)
	const first = "plum,5,\"two\n"
	appendFile(t, path, first)
	waitFor(t, "the first line to be read", func() bool {
		n, err := r.Read(ctx, dst)
		if n != 0 || err != nil {
			t.Fatalf("Read = %d, %v with half a record", n, err)
		}
		return r.lines.consumed() == int64(len("name,qty,note\n")+len(first))
	})
	if r.Offset() != int64(len("name,qty,note\n")) {
		t.Errorf("Position %d: want the start of the pending record", r.Offset())
	}
	appendFile(t, path, "lines\"\n")
	var got []item
	waitFor(t, "the record", func() bool {
		n, err := r.Read(ctx, dst)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, dst[:n]...)
		return len(got) > 0
	})
	if want := []item{{"plum", 5, "two\nlines"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestFollowTruncatedFile(t *testing.T) {
	path := writeFile(t, t.TempDir(), "x.jsonl", eventLine(1)+eventLine(2))
	r := openReader(t, JSONLines[event]([]string{path}, Follow(time.Millisecond)))
	ctx := context.Background()
	dst := make([]event, 4)
	var ids []int
	read := func() bool {
		n, err := r.Read(ctx, dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range dst[:n] {
			ids = append(ids, e.ID)
		}
		return n > 0
	}
	waitFor(t, "lines 1 and 2", func() bool { read(); return len(ids) == 2 })
	if err := os.WriteFile(path, []byte(eventLine(9)), 0o644); err != nil { // truncates
		t.Fatal(err)
	}
	waitFor(t, "the line written after truncation", func() bool { read(); return len(ids) == 3 })
	if !slices.Equal(ids, []int{1, 2, 9}) || r.Offset() != int64(len(eventLine(9))) {
		t.Fatalf("ids %v, Position %d", ids, r.Offset())
	}
}

func TestLongLines(t *testing.T) {
	long := event{ID: 7, Name: strings.Repeat("λ", 400_000)} // 800 KB, beyond the buffer
	b, _ := json.Marshal(long)
	content := eventLine(1) + string(b) + "\n" + eventLine(2)
	path := writeFile(t, t.TempDir(), "x.jsonl", content)
	r := openReader(t, JSONLines[event]([]string{path}))
	dst := make([]event, 2)
	n, err := r.Read(context.Background(), dst)
	if n != 2 || err != nil || !reflect.DeepEqual(dst[1], long) {
		t.Fatalf("Read = %d, %v", n, err)
	}
	if want := int64(len(eventLine(1)) + len(b) + 1); r.Offset() != want {
		t.Errorf("Position %d, want %d", r.Offset(), want)
	}
	n, err = r.Read(context.Background(), dst)
	if n != 1 || err != io.EOF || dst[0].ID != 2 || r.Offset() != int64(len(content)) {
		t.Fatalf("Read = %d, %v; Position %d", n, err, r.Offset())
	}
	if n, err := r.Read(context.Background(), dst); n != 0 || err != io.EOF {
		t.Fatalf("Read after EOF = %d, %v", n, err)
	}
}

func TestWriterSink(t *testing.T) {
	in := events(5000)
	var buf bytes.Buffer // not safe for concurrent use: the sink serializes
	job := weir.NewJob("print")
	src := weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[event]())
	ids := weir.Map(src, func(e event) int { return e.ID })
	weir.To(ids, Writer[int](&buf, nil), weir.Parallelism(4))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		id, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, id)
	}
	sort.Ints(got)
	if len(got) != len(in) || got[0] != 0 || got[len(got)-1] != len(in)-1 {
		t.Fatalf("%d lines", len(got))
	}
}

func TestStdout(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout := os.Stdout
	os.Stdout = f
	sink := Stdout(func(e event) string { return "event " + e.Name })
	os.Stdout = stdout

	job := weir.NewJob("print")
	src := weir.FromSource(job, "in", weir.SliceSource([]event{{Name: "a"}, {Name: "b"}}), weir.NoWatermarks[event]())
	weir.To(src, sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "event a\nevent b\n" {
		t.Fatalf("printed %q", data)
	}
}

// growReader reads data[:avail]; growing avail is like appending to a
// followed file.
type growReader struct {
	data       []byte
	avail, pos int
}

func (g *growReader) Read(p []byte) (int, error) {
	if g.pos >= g.avail {
		return 0, io.EOF
	}
	n := copy(p, g.data[g.pos:g.avail])
	g.pos += n
	return n, nil
}

// expectJSONLines is what a JSONLines reader skipping bad records returns:
// the records (values without the whitespace around them), how many bad
// records it skips and its final position.
func expectJSONLines(data []byte, follow bool, max int64) (recs [][]byte, skipped, pos int64) {
	for rest := data; len(rest) > 0; {
		var line []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else if follow {
			break // not complete
		} else {
			line, rest = rest, nil
		}
		pos += int64(len(line))
		v := bytes.Trim(line, " \t\r\n")
		switch {
		case max > 0 && int64(len(bytes.TrimSuffix(line, []byte("\n")))) > max:
			skipped++ // too long, whatever it holds
		case len(v) == 0:
		case json.Valid(v):
			recs = append(recs, v)
		default:
			skipped++
		}
	}
	return recs, skipped, pos
}

func FuzzJSONLinesReader(f *testing.F) {
	f.Add([]byte(`{"a":1}`+"\n"+`{"b":[1,2]}`+"\n"), false, uint8(0), uint8(3))
	f.Add([]byte("1\n\n  2 \r\n{\"x\n3"), true, uint8(1), uint8(1))
	f.Add([]byte(`"a long string that is longer than the small buffer"`+"\n[true, false, null]\n\"\\u00e9\"\n"), true, uint8(0), uint8(0))
	f.Add([]byte("\n\n\n"), false, uint8(200), uint8(255))
	f.Add([]byte("{\"unterminated\n\"x\"\n1 2\n"), false, uint8(5), uint8(9))
	// Lines over the limit (5, 20 or 40 bytes), longer than the buffer or
	// not, complete or not.
	f.Add([]byte("1\n\"a string of more than forty bytes, longer than the buffer\"\n2\n[1,2,3,4,5,6,7]\n\"tail without end that is long"), false, uint8(0), uint8(0xc0))
	f.Add([]byte("1\n\"a string of more than forty bytes, longer than the buffer\"\n2\n[1,2,3,4,5,6,7]\n\"tail without end that is long"), true, uint8(0), uint8(0x82))
	f.Add([]byte("123456\n12345\n      \n1\n"), true, uint8(3), uint8(0x40))
	f.Fuzz(func(t *testing.T, data []byte, follow bool, bufSize, chunk uint8) {
		// A zero poll interval (which Follow does not allow) makes Read
		// return at once when there is nothing new. The top two bits of
		// chunk pick a line limit below or above the buffer size (0: none).
		maxRec := []int64{0, 5, 20, 40}[chunk>>6]
		cfg := config{bufSize: 16 + int(bufSize), follow: follow, skipBad: true, maxRecord: maxRec}
		g := &growReader{data: data}
		r := newReader[json.RawMessage]("fuzz", g, cfg, formatJSON, nil)
		defer r.Close()
		dst := make([]json.RawMessage, 1+int(chunk%8))
		var got []json.RawMessage
		ctx := context.Background()
		guard := 0
		read := func() (int, error) {
			if guard++; guard > 4*len(data)+1000 {
				t.Fatal("no progress")
			}
			n, err := r.Read(ctx, dst)
			got = append(got, dst[:n]...)
			return n, err
		}
		if !follow {
			g.avail = len(data)
			for {
				_, err := read()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
		} else {
			step := 1 + int(chunk)
			for {
				g.avail = min(g.avail+step, len(data))
				for {
					n, err := read()
					if err != nil {
						t.Fatal(err)
					}
					if n == 0 && g.pos == g.avail && r.lines.br.Buffered() == 0 {
						break
					}
				}
				if g.avail == len(data) {
					break
				}
			}
		}
		recs, skipped, pos := expectJSONLines(data, follow, maxRec)
		if len(got) != len(recs) {
			t.Fatalf("%d records, want %d", len(got), len(recs))
		}
		for i := range got {
			if !bytes.Equal(got[i], recs[i]) {
				t.Fatalf("record %d: %q, want %q", i, got[i], recs[i])
			}
		}
		if r.Skipped() != skipped || r.Offset() != pos {
			t.Fatalf("skipped %d, position %d; want %d, %d", r.Skipped(), r.Offset(), skipped, pos)
		}
	})
}

// FuzzCSVReader checks that the CSV reader splits records as encoding/csv
// does when it reads the whole input.
func FuzzCSVReader(f *testing.F) {
	f.Add([]byte(itemsCSV), uint8(0))
	f.Add([]byte("a,\"b\nc\"d,e\nf\n\"g\"\"\"\r\n\r\nx\"y,z\n\"open\n"), uint8(1))
	f.Add([]byte("\"a\"\r,b\n\r\n\r"), uint8(40))
	f.Fuzz(func(t *testing.T, data []byte, bufSize uint8) {
		cfg := config{bufSize: 16 + int(bufSize), skipBad: true}
		clone := func(f []string) ([]string, error) { return slices.Clone(f), nil }
		r := newReader("fuzz", bytes.NewReader(data), cfg, formatCSV, clone)
		var got [][]string
		dst := make([][]string, 3)
		for i := 0; ; i++ {
			if i > len(data)+10 {
				t.Fatal("no progress")
			}
			n, err := r.Read(context.Background(), dst)
			got = append(got, dst[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}

		cr := csv.NewReader(bytes.NewReader(data))
		cr.FieldsPerRecord = -1
		var want [][]string
		var bad int64
		for {
			rec, err := cr.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				bad++
				continue
			}
			want = append(want, rec)
		}
		if !reflect.DeepEqual(got, want) || r.Skipped() != bad {
			t.Fatalf("got %q (%d bad)\nwant %q (%d bad)", got, r.Skipped(), want, bad)
		}
		if r.Offset() != int64(len(data)) {
			t.Fatalf("Position %d at the end, want %d", r.Offset(), len(data))
		}
	})
}

func BenchmarkJSONLinesRead(b *testing.B) {
	var buf bytes.Buffer
	for i := range 100_000 {
		buf.WriteString(eventLine(i))
	}
	path := writeFile(b, b.TempDir(), "x.jsonl", buf.String())
	src := JSONLines[event]([]string{path})
	splits, _ := src.Splits(context.Background())
	dst := make([]event, 1024)
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		r, err := src.Open(context.Background(), splits[0])
		if err != nil {
			b.Fatal(err)
		}
		for {
			_, err := r.Read(context.Background(), dst)
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		r.Close()
	}
}
