package file

import (
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// trailerWriter is a bulk format: it buffers its records and writes them
// with a trailer at Finish only.
type trailerWriter struct {
	w   io.Writer
	dir string
	buf []string
}

func (b *trailerWriter) Write(s string) error { b.buf = append(b.buf, s); return nil }
func (b *trailerWriter) Finish() error {
	_, err := io.WriteString(b.w, strings.Join(b.buf, ",")+"|END("+b.dir+")")
	return err
}

func trailer() SinkOption {
	return Bulk(BulkFactory[string](func(w io.Writer, dir string) (BulkWriter[string], error) {
		return &trailerWriter{w: w, dir: dir}, nil
	}))
}

// A bulk part file is complete (trailer written) when it becomes visible;
// records after the last PreCommit never are. Part files get the suffix,
// and a partitioned sink writes each record under its partition.
func TestBulkPartitioned(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[string](dir, trailer(), Suffix(".tr"), PartitionBy(func(s string) (string, error) { return "p=" + s[:1], nil }))
	w := openEO(t, s, 0, 1)
	if err := w.Recover(bg, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(bg, []string{"a1", "b1", "a2"}); err != nil {
		t.Fatal(err)
	}
	c, err := w.PreCommit(bg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Committer().Commit(bg, c); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(bg, []string{"a3"}); err != nil { // never pre-committed
		t.Fatal(err)
	}
	w.Close(bg)
	read := func(p string) string {
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for p, want := range map[string]string{"p=a": "a1,a2|END(p=a)", "p=b": "b1|END(p=b)"} {
		visible, hidden := dirFiles(t, filepath.Join(dir, p))
		if len(visible) != 1 || !strings.HasSuffix(visible[0], ".tr") {
			t.Fatalf("%s: visible %v, hidden %v", p, visible, hidden)
		}
		if got := read(filepath.Join(p, visible[0])); got != want {
			t.Errorf("%s: %q, want %q", p, got, want)
		}
	}
	// A new attempt's Recover removes the in-progress file of "a3".
	w = openEO(t, s, 0, 1)
	if err := w.Recover(bg, 1); err != nil {
		t.Fatal(err)
	}
	if _, hidden := dirFiles(t, filepath.Join(dir, "p=a")); len(hidden) != 0 {
		t.Fatalf("hidden files left after Recover: %v", hidden)
	}
	w.Close(bg)
	// a partition that is not a local path fails the write
	s = ExactlyOnce[string](dir, trailer(), PartitionBy(func(s string) (string, error) { return "../" + s, nil }))
	w = openEO(t, s, 0, 1)
	if err := w.Write(bg, []string{"x"}); err == nil || !strings.Contains(err.Error(), "not a local path") {
		t.Fatalf("Write: %v", err)
	}
}

// PartitionCommit writes the success file of a partition once the
// checkpoint that wrote to it is committed and the delay has passed since
// its first write; a restored writer takes over the partitions committed
// without one.
func TestPartitionCommitDelay(t *testing.T) {
	dir := t.TempDir()
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
	clock := func() time.Time { return time.UnixMilli(now.Load()) }
	s := ExactlyOnce[string](dir, trailer(), PartitionBy(func(s string) (string, error) { return "p=" + s[:1], nil }),
		PartitionCommit("_SUCCESS", time.Minute, clock))
	success := func() []string {
		var ps []string
		for _, p := range []string{"p=a", "p=b"} {
			if _, err := os.Stat(filepath.Join(dir, p, "_SUCCESS")); err == nil {
				ps = append(ps, p)
			}
		}
		return ps
	}
	w := openEO(t, s, 0, 1)
	if err := w.Recover(bg, 0); err != nil {
		t.Fatal(err)
	}
	step := func(id int64, records ...string) {
		t.Helper()
		if err := w.Write(bg, records); err != nil {
			t.Fatal(err)
		}
		c, err := w.PreCommit(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Committer().Commit(bg, c); err != nil {
			t.Fatal(err)
		}
	}
	step(1, "a1", "b1")
	if got := success(); len(got) != 0 {
		t.Fatalf("success files before the delay: %v", got)
	}
	now.Add(61_000)
	step(2)
	if got := success(); !slices.Equal(got, []string{"p=a", "p=b"}) {
		t.Fatalf("success files after the delay: %v", got)
	}
	// Written again: committed again (the file is rewritten).
	os.Remove(filepath.Join(dir, "p=a", "_SUCCESS"))
	step(3, "a2")
	if got := success(); !slices.Equal(got, []string{"p=a", "p=b"}) {
		t.Fatalf("success files after a new write: %v", got)
	}
	w.Close(bg)
	// A partition committed without its success file (the job crashed
	// between the two) is taken over by subtask 0 after a restore.
	os.Remove(filepath.Join(dir, "p=b", "_SUCCESS"))
	w = openEO(t, s, 0, 2)
	if err := w.Recover(bg, 3); err != nil {
		t.Fatal(err)
	}
	now.Add(61_000)
	step(4)
	if got := success(); !slices.Equal(got, []string{"p=a", "p=b"}) {
		t.Fatalf("success files after a restore: %v", got)
	}
	w.Close(bg)
	// PartitionCommit needs PartitionBy.
	if _, err := ExactlyOnce[string](dir, PartitionCommit("_SUCCESS", 0, nil)).OpenWriter(bg, 0, 1); err == nil {
		t.Fatal("PartitionCommit without PartitionBy was accepted")
	}
}

// Two subtasks write to one partition in a checkpoint: the success file
// comes with the commit of the second committable, once both subtasks'
// files are visible, not with the first.
func TestPartitionCommitAfterEverySubtask(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[string](dir, trailer(), PartitionBy(func(s string) (string, error) { return "p=" + s[:1], nil }),
		PartitionCommit("_SUCCESS", 0, nil))
	var cs [][]byte
	for i := range 2 {
		w := openEO(t, s, i, 2)
		if err := w.Recover(bg, 0); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(bg, []string{"a" + string(rune('0'+i))}); err != nil {
			t.Fatal(err)
		}
		c, err := w.PreCommit(bg, 1)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
		defer w.Close(bg)
	}
	success := filepath.Join(dir, "p=a", "_SUCCESS")
	if err := s.Committer().Commit(bg, cs[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(success); err == nil {
		t.Fatal("_SUCCESS before the other subtask's file is committed")
	}
	if err := s.Committer().Commit(bg, cs[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(success); err != nil {
		t.Fatalf("no _SUCCESS once both are committed: %v", err)
	}
	if visible, _ := dirFiles(t, filepath.Join(dir, "p=a")); len(visible) != 3 {
		t.Fatalf("files %v, want two parts and _SUCCESS", visible)
	}
}

// By partition time: a partition's success file is written at the
// checkpoint whose least watermark, over every writer, has reached the
// partition's time plus the delay; not before every writer's committable
// is in, and the end of the input commits the rest.
func TestPartitionTimeCommit(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	s := ExactlyOnce[string](dir, trailer(),
		PartitionBy(func(s string) (string, error) { return "h=" + s[:2], nil }),
		PartitionCommit("_SUCCESS", 30*time.Minute, nil),
		PartitionTime(func(p string) (time.Time, error) {
			h, err := time.Parse("15", strings.TrimPrefix(p, "h="))
			return day.Add(time.Duration(h.Hour()) * time.Hour), err
		}))
	ws := []*eoWriter[string]{openEO(t, s, 0, 2).(*eoWriter[string]), openEO(t, s, 1, 2).(*eoWriter[string])}
	for _, w := range ws {
		if err := w.Recover(bg, 0); err != nil {
			t.Fatal(err)
		}
		defer w.Close(bg)
	}
	round := func(id int64, wms [2]time.Time, data [2]string) {
		t.Helper()
		var cs [][]byte
		for i, w := range ws {
			if data[i] != "" {
				if err := w.Write(bg, []string{data[i]}); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.WriteWatermark(bg, wms[i]); err != nil {
				t.Fatal(err)
			}
			c, err := w.PreCommit(bg, id)
			if err != nil || c == nil {
				t.Fatalf("PreCommit(%d) of writer %d: %q, %v; want a committable (its watermark)", id, i, c, err)
			}
			cs = append(cs, c)
		}
		for i, c := range cs {
			if err := s.Committer().Commit(bg, c); err != nil {
				t.Fatal(err)
			}
			if i == 0 && hasSuccess(dir, "h=10") && id == 2 {
				t.Fatal("h=10 committed before every writer's committable was in")
			}
		}
	}
	round(1, [2]time.Time{at(11, 0), at(10, 20)}, [2]string{"10a", "11b"})
	if hasSuccess(dir, "h=10") || hasSuccess(dir, "h=11") {
		t.Fatal("committed at a least watermark of 10:20, before 10:00 + 30 min")
	}
	round(2, [2]time.Time{at(11, 0), at(11, 45)}, [2]string{"", ""})
	if !hasSuccess(dir, "h=10") || hasSuccess(dir, "h=11") {
		t.Fatalf("at a least watermark of 11:00: h=10 committed %t (want true), h=11 %t (want false)", hasSuccess(dir, "h=10"), hasSuccess(dir, "h=11"))
	}
	end := time.UnixMilli(math.MaxInt64)
	round(3, [2]time.Time{end, end}, [2]string{"", ""})
	if !hasSuccess(dir, "h=11") {
		t.Fatal("the end of the input did not commit h=11")
	}
	if visible, _ := dirFiles(t, filepath.Join(dir, "h=10")); len(visible) != 2 {
		t.Fatalf("h=10 holds %v, want its part and _SUCCESS", visible)
	}
}

func hasSuccess(dir, partition string) bool {
	_, err := os.Stat(filepath.Join(dir, partition, "_SUCCESS"))
	return err == nil
}

// RollInterval: a part file open longer than the interval is finished at
// the next write, within the checkpoint.
func TestRollInterval(t *testing.T) {
	dir := t.TempDir()
	clock := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	now := func() time.Time { return clock }
	s := ExactlyOnce[string](dir, RollInterval(time.Minute), PartitionCommit("", 0, now))
	w := openEO(t, s, 0, 1)
	defer w.Close(bg)
	if err := w.Recover(bg, 0); err != nil {
		t.Fatal(err)
	}
	write := func(v string) {
		t.Helper()
		if err := w.Write(bg, []string{v}); err != nil {
			t.Fatal(err)
		}
	}
	write("a")
	clock = clock.Add(30 * time.Second)
	write("b") // 30 s old: same file
	clock = clock.Add(31 * time.Second)
	write("c") // 61 s old: finished after c
	write("d")
	c, err := w.PreCommit(bg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Committer().Commit(bg, c); err != nil {
		t.Fatal(err)
	}
	visible, _ := dirFiles(t, dir)
	if len(visible) != 2 {
		t.Fatalf("files %v, want two parts (a, b, c rolled by time; d)", visible)
	}
}
