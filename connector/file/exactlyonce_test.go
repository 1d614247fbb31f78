package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/crashtest"
)

var bg = context.Background()

// withFS lets a test replace the file system operations of a sink.
func withFS(f func(*fsOps)) SinkOption {
	return sinkOptionFunc(func(c *sinkConfig) { f(&c.fs) })
}

// openEO opens the writer of subtask i of p of s.
func openEO[T any](t testing.TB, s weir.CommittingSink[T], i, p int) weir.CommittingWriter[T] {
	t.Helper()
	w, err := s.OpenWriter(bg, i, p)
	if err != nil {
		t.Fatal(err)
	}
	return w.(weir.CommittingWriter[T])
}

// dirFiles returns the names of the visible and of the hidden files of dir,
// sorted.
func dirFiles(t testing.TB, dir string) (visible, hidden []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			hidden = append(hidden, e.Name())
		} else {
			visible = append(visible, e.Name())
		}
	}
	return visible, hidden
}

// committed concatenates the committed part files of dir in name order.
func committed(t testing.TB, dir string) string {
	t.Helper()
	visible, _ := dirFiles(t, dir)
	var b strings.Builder
	for _, name := range visible {
		if _, _, _, ok := parsePartName(name); !ok {
			t.Fatalf("unexpected file %s", name)
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

func jsonLines(t testing.TB, es []event) string {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, e := range es {
		if err := enc.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

func mustWrite[T any](t testing.TB, w weir.CommittingWriter[T], items ...T) {
	t.Helper()
	if err := w.Write(bg, items); err != nil {
		t.Fatal(err)
	}
}

func mustPreCommit[T any](t testing.TB, w weir.CommittingWriter[T], id int64) []byte {
	t.Helper()
	c, err := w.PreCommit(bg, id)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCommit(t testing.TB, c weir.Committer, committables ...[]byte) {
	t.Helper()
	for _, data := range committables {
		if err := c.Commit(bg, data); err != nil {
			t.Fatal(err)
		}
	}
}

func mustRecover[T any](t testing.TB, w weir.CommittingWriter[T], id int64) {
	t.Helper()
	if err := w.Recover(bg, id); err != nil {
		t.Fatal(err)
	}
}

func wantNoHidden(t testing.TB, dir string) {
	t.Helper()
	if _, hidden := dirFiles(t, dir); len(hidden) > 0 {
		t.Fatalf("hidden files left: %v", hidden)
	}
}

func TestExactlyOnceWriteCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") // created by OpenWriter
	s := ExactlyOnce[event](dir)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	in := events(1000)

	if c := mustPreCommit(t, w, 1); c != nil {
		t.Fatalf("committable of an empty checkpoint: %s", c)
	}
	mustWrite(t, w, in[:300]...)
	mustWrite(t, w, in[300:600]...)
	c2 := mustPreCommit(t, w, 2)
	visible, hidden := dirFiles(t, dir)
	if len(visible) != 0 || len(hidden) != 1 || !strings.HasSuffix(hidden[0], ".pending") || !strings.HasPrefix(hidden[0], ".part-0000000002-0000-0000.") {
		t.Fatalf("after PreCommit: visible %v, hidden %v", visible, hidden)
	}
	var cm committable
	if err := json.Unmarshal(c2, &cm); err != nil {
		t.Fatal(err)
	}
	want := jsonLines(t, in[:600])
	if len(cm.Files) != 1 || cm.Files[0].Pending != hidden[0] || cm.Files[0].Final != "part-0000000002-0000-0000" || cm.Files[0].Size != int64(len(want)) {
		t.Fatalf("committable %s", c2)
	}
	mustCommit(t, s.Committer(), c2)
	wantNoHidden(t, dir)
	if got := committed(t, dir); got != want {
		t.Fatalf("committed output differs from what was written")
	}

	mustWrite(t, w, in[600:]...)
	if c := mustPreCommit(t, w, 3); c == nil {
		t.Fatal("no committable")
	} else {
		// The final PreCommit is followed by Close, then Commit (as
		// without checkpointing): nothing stays hidden.
		if err := w.Close(bg); err != nil {
			t.Fatal(err)
		}
		mustCommit(t, s.Committer(), c)
	}
	wantNoHidden(t, dir)
	visible, _ = dirFiles(t, dir)
	if !reflect.DeepEqual(visible, []string{"part-0000000002-0000-0000", "part-0000000003-0000-0000"}) {
		t.Fatalf("committed files %v", visible)
	}
	if got := committed(t, dir); got != jsonLines(t, in) {
		t.Fatal("committed output differs from what was written")
	}
	if err := w.Write(bg, in[:1]); err == nil {
		t.Fatal("Write after Close succeeded")
	}
}

func TestExactlyOnceFormatAndRollSize(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[int](dir, RollSize(10), Format(func(i int) ([]byte, error) {
		if i < 0 {
			return nil, errors.New("negative")
		}
		return []byte(strconv.Itoa(i)), nil
	}))
	w := openEO(t, s, 3, 4)
	mustRecover(t, w, 0)
	mustWrite(t, w, 0, 1, 2, 3, 4, 5, 6) // 0..4 fill a part (10 bytes)
	mustWrite(t, w, 7, 8, 9, 10, 11, 12) // 5..9 another, then 10..
	mustWrite(t, w, 1234567890123)       // a record larger than RollSize
	mustWrite(t, w, 13)
	c := mustPreCommit(t, w, 7)
	mustCommit(t, s.Committer(), c)
	wantNoHidden(t, dir)
	visible, _ := dirFiles(t, dir)
	want := []string{"part-0000000007-0003-0000", "part-0000000007-0003-0001", "part-0000000007-0003-0002", "part-0000000007-0003-0003"}
	if !reflect.DeepEqual(visible, want) {
		t.Fatalf("parts %v, want %v", visible, want)
	}
	for name, content := range map[string]string{
		want[0]: "0\n1\n2\n3\n4\n",
		want[1]: "5\n6\n7\n8\n9\n",
		want[2]: "10\n11\n12\n1234567890123\n",
		want[3]: "13\n",
	} {
		if data, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(data) != content {
			t.Errorf("%s: %q, %v; want %q", name, data, err, content)
		}
	}

	// An error of the format function fails the write, and the writer
	// stages nothing after it.
	mustWrite(t, w, 20)
	if err := w.Write(bg, []int{21, -1, 22}); err == nil || !strings.Contains(err.Error(), "negative") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("format error: %v", err)
	}
	if c, err := w.PreCommit(bg, 8); err == nil || c != nil {
		t.Fatalf("PreCommit after a failed Write: %s, %v", c, err)
	}

	// A Format function of another type.
	if _, err := ExactlyOnce[event](dir, Format(func(int) ([]byte, error) { return nil, nil })).OpenWriter(bg, 0, 1); err == nil || !strings.Contains(err.Error(), "does not take a file.event") {
		t.Fatalf("Format of another type: %v", err)
	}
}

// A writer that crashes (is dropped) mid-file leaves hidden files that the
// next attempt's Recover deletes; committed files stay as they are.
func TestExactlyOnceCrashMidFile(t *testing.T) {
	for _, roll := range []int64{0, 5000} {
		t.Run(fmt.Sprint("roll=", roll), func(t *testing.T) {
			dir := t.TempDir()
			s := ExactlyOnce[event](dir, RollSize(roll))
			in := events(2000)
			w := openEO(t, s, 0, 1)
			mustRecover(t, w, 0)
			mustWrite(t, w, in[:500]...)
			mustCommit(t, s.Committer(), mustPreCommit(t, w, 1))
			before := committed(t, dir)
			if before != jsonLines(t, in[:500]) {
				t.Fatal("committed output differs from what was written")
			}
			mustWrite(t, w, in[500:]...) // more than the write buffer
			_, hidden := dirFiles(t, dir)
			if len(hidden) == 0 {
				t.Fatal("no in-progress file")
			}
			// Crash: w is dropped. The restarted job has a new sink.
			s = ExactlyOnce[event](dir, RollSize(roll))
			mustCommit(t, s.Committer(), nil) // checkpoint 1's committable, say, was lost: nothing to do
			w2 := openEO(t, s, 0, 1)
			mustRecover(t, w2, 1)
			wantNoHidden(t, dir)
			if committed(t, dir) != before {
				t.Fatal("Recover changed committed output")
			}
			// The replay writes the rest again.
			mustWrite(t, w2, in[500:]...)
			c := mustPreCommit(t, w2, 2)
			if err := w2.Close(bg); err != nil {
				t.Fatal(err)
			}
			mustCommit(t, s.Committer(), c)
			wantNoHidden(t, dir)
			if committed(t, dir) != jsonLines(t, in) {
				t.Fatal("committed output differs from what was written")
			}
		})
	}
}

// Close without PreCommit (the job failed) leaves the in-progress file for
// Recover; the records are not committed.
func TestExactlyOnceCloseWithoutPreCommit(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[event](dir)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	mustWrite(t, w, events(10)...)
	if err := w.Close(bg); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PreCommit(bg, 1); err == nil {
		t.Fatal("PreCommit after Close succeeded")
	}
	visible, hidden := dirFiles(t, dir)
	if len(visible) != 0 || len(hidden) != 1 || !strings.HasSuffix(hidden[0], ".inprogress") {
		t.Fatalf("visible %v, hidden %v", visible, hidden)
	}
	mustRecover(t, openEO(t, s, 0, 1), 0)
	wantNoHidden(t, dir)
}

// A checkpoint that was pre-committed but never completed (crash before its
// metadata was written) is deleted when the job restores an earlier one.
func TestExactlyOncePreCommitWithoutCommit(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[event](dir)
	in := events(30)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	mustWrite(t, w, in[:10]...)
	c1 := mustPreCommit(t, w, 1)
	mustCommit(t, s.Committer(), c1)
	mustWrite(t, w, in[10:20]...)
	mustPreCommit(t, w, 2) // checkpoint 2 never completes
	mustWrite(t, w, in[20:25]...)
	if _, hidden := dirFiles(t, dir); len(hidden) != 2 {
		t.Fatalf("hidden files %v, want a pending and an in-progress file", hidden)
	}

	mustCommit(t, s.Committer(), c1) // the job commits the restored checkpoint again
	w2 := openEO(t, s, 0, 1)
	mustRecover(t, w2, 1)
	wantNoHidden(t, dir)
	// The replay produces checkpoint 2 again, with the same final names.
	mustWrite(t, w2, in[10:]...)
	c2 := mustPreCommit(t, w2, 2)
	mustCommit(t, s.Committer(), c2, c2)
	wantNoHidden(t, dir)
	if committed(t, dir) != jsonLines(t, in) {
		t.Fatal("committed output differs from what was written")
	}
}

// Crash after the checkpoint's metadata was written, before (or during)
// Commit: the restarted job commits the restored checkpoint, then recovers.
func TestExactlyOnceCrashBeforeCommit(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[event](dir, RollSize(200))
	in := events(40)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	mustWrite(t, w, in[:20]...)
	c1 := mustPreCommit(t, w, 1)
	var cm committable
	if err := json.Unmarshal(c1, &cm); err != nil || len(cm.Files) < 3 {
		t.Fatalf("committable %s, %v: want several files", c1, err)
	}
	// Crash mid-commit: the first file was renamed, the others not.
	if err := os.Rename(filepath.Join(dir, cm.Files[0].Pending), filepath.Join(dir, cm.Files[0].Final)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, w, in[20:30]...)

	mustCommit(t, s.Committer(), c1)
	w2 := openEO(t, s, 0, 1)
	mustRecover(t, w2, 1)
	wantNoHidden(t, dir)
	mustWrite(t, w2, in[20:]...)
	mustCommit(t, s.Committer(), mustPreCommit(t, w2, 2))
	if committed(t, dir) != jsonLines(t, in) {
		t.Fatal("committed output differs from what was written")
	}
}

func TestExactlyOnceCommitIdempotent(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[event](dir)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	mustWrite(t, w, events(5)...)
	c := mustPreCommit(t, w, 1)
	com := s.Committer()
	mustCommit(t, com, c, c, c)
	mustCommit(t, ExactlyOnce[event](dir).Committer(), c)
	want := jsonLines(t, events(5))
	if committed(t, dir) != want {
		t.Fatal("committed output differs from what was written")
	}
	var cm committable
	if err := json.Unmarshal(c, &cm); err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(dir, cm.Files[0].Final)
	pending := filepath.Join(dir, cm.Files[0].Pending)

	// The committed file was truncated: not what the committable says.
	if err := os.WriteFile(final, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := com.Commit(bg, c); err == nil || !strings.Contains(err.Error(), final) {
		t.Fatalf("committed file of another size: %v", err)
	}
	// Both gone: the data is lost, which must not pass silently.
	if err := os.Remove(final); err != nil {
		t.Fatal(err)
	}
	if err := com.Commit(bg, c); err == nil || !strings.Contains(err.Error(), final) || !strings.Contains(err.Error(), pending) || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("lost output: %v", err)
	}
	// A pending file whose final name is taken is not committed over it.
	if err := os.WriteFile(pending, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(final, []byte("other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := com.Commit(bg, c); err == nil || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), final) {
		t.Fatalf("final name taken: %v", err)
	}
	if data, _ := os.ReadFile(final); string(data) != "other\n" {
		t.Fatal("committed file overwritten")
	}
	// A pending file of another size than the committable says.
	os.Remove(final)
	if err := os.WriteFile(pending, []byte("short\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := com.Commit(bg, c); err == nil || !strings.Contains(err.Error(), pending) {
		t.Fatalf("pending file of another size: %v", err)
	}

	for _, bad := range []string{
		`{`,
		`{"files":[{"pending":"../.part-0000000001-0000-0000.ab.pending","final":"../part-0000000001-0000-0000","size":1}]}`,
		`{"files":[{"pending":".part-0000000001-0000-0000.ab.pending","final":"part-0000000002-0000-0000","size":1}]}`,
		`{"files":[{"pending":"x","final":"y","size":1}]}`,
	} {
		if err := com.Commit(bg, []byte(bad)); err == nil || !strings.Contains(err.Error(), "malformed committable") {
			t.Errorf("committable %s: %v", bad, err)
		}
	}
	if err := com.Commit(bg, nil); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint that the job aborted (its committable dropped) is committed
// with the next one: the writer lists its still pending files again.
func TestExactlyOnceAbortedCheckpoint(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[event](dir)
	in := events(30)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	mustWrite(t, w, in[:10]...)
	mustPreCommit(t, w, 1) // aborted: the committable is dropped
	c2 := mustPreCommit(t, w, 2)
	if c2 == nil {
		t.Fatal("checkpoint 2 does not list the pending files of checkpoint 1")
	}
	mustWrite(t, w, in[10:20]...)
	c3 := mustPreCommit(t, w, 3) // completes, but commits after checkpoint 4's PreCommit
	mustWrite(t, w, in[20:]...)
	c4 := mustPreCommit(t, w, 4)
	mustCommit(t, s.Committer(), c3, c4)
	wantNoHidden(t, dir)
	if c := mustPreCommit(t, w, 5); c != nil {
		t.Fatalf("committed files listed again: %s", c)
	}
	if committed(t, dir) != jsonLines(t, in) {
		t.Fatal("committed output differs from what was written")
	}
}

// Recover leaves pending files of the restored checkpoint or earlier ones
// (the job may still commit them), deletes those of later checkpoints and,
// starting from scratch, all.
func TestExactlyOnceRecoverKeepsEarlierPending(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[event](dir)
	pending := func(id int64) {
		w := openEO(t, s, 0, 1)
		mustWrite(t, w, events(3)...)
		mustPreCommit(t, w, id)
	}
	pending(3)
	pending(4)
	pending(5)
	mustRecover(t, openEO(t, s, 0, 1), 4)
	_, hidden := dirFiles(t, dir)
	if len(hidden) != 2 || !strings.HasPrefix(hidden[0], ".part-0000000003-") || !strings.HasPrefix(hidden[1], ".part-0000000004-") {
		t.Fatalf("hidden files %v", hidden)
	}
	pending(0)
	mustRecover(t, openEO(t, s, 0, 1), 0)
	wantNoHidden(t, dir)
}

// A job of parallelism 2 crashes and restarts at parallelism 1, then 3.
func TestExactlyOnceRescale(t *testing.T) {
	dir := t.TempDir()
	s := ExactlyOnce[int](dir, RollSize(8))
	var want []int
	write := func(w weir.CommittingWriter[int], from, to int) {
		for i := from; i < to; i++ {
			mustWrite(t, w, i)
		}
	}

	// Attempt 1, parallelism 2: checkpoint 1 completes; checkpoint 2 is
	// pre-committed by subtask 1 only, then both crash mid-file.
	a0, a1 := openEO(t, s, 0, 2), openEO(t, s, 1, 2)
	mustRecover(t, a0, 0)
	mustRecover(t, a1, 0)
	write(a0, 0, 10)
	write(a1, 100, 110)
	c1 := [][]byte{mustPreCommit(t, a0, 1), mustPreCommit(t, a1, 1)}
	mustCommit(t, s.Committer(), c1...)
	want = append(want, seq(0, 10)...)
	want = append(want, seq(100, 110)...)
	write(a0, 10, 20)
	write(a1, 110, 120)
	mustPreCommit(t, a1, 2)
	write(a1, 120, 125)
	a0.Close(bg)
	before := committed(t, dir)

	// Attempt 2, parallelism 1, restores checkpoint 1.
	mustCommit(t, s.Committer(), c1...)
	b0 := openEO(t, s, 0, 1)
	mustRecover(t, b0, 1)
	wantNoHidden(t, dir)
	if committed(t, dir) != before {
		t.Fatal("Recover changed committed output")
	}
	write(b0, 10, 20)
	write(b0, 110, 125)
	c2 := mustPreCommit(t, b0, 2)
	mustCommit(t, s.Committer(), c2)
	want = append(want, seq(10, 20)...)
	want = append(want, seq(110, 125)...)
	write(b0, 20, 30) // crash mid-file

	// Attempt 3, parallelism 3, restores checkpoint 2. Subtask 2 recovers
	// and writes before subtask 0 recovers: subtask 0 must leave its file.
	mustCommit(t, s.Committer(), c2)
	d := []weir.CommittingWriter[int]{openEO(t, s, 0, 3), openEO(t, s, 1, 3), openEO(t, s, 2, 3)}
	mustRecover(t, d[2], 2)
	write(d[2], 220, 230)
	mustRecover(t, d[1], 2)
	mustRecover(t, d[0], 2)
	_, hidden := dirFiles(t, dir)
	if len(hidden) == 0 || slices.ContainsFunc(hidden, func(h string) bool { return !strings.HasPrefix(h, ".part-2-") }) {
		t.Fatalf("hidden files %v, want subtask 2's in-progress files", hidden)
	}
	write(d[0], 20, 30)
	write(d[1], 120, 130)
	var c3 [][]byte
	for _, w := range d {
		c3 = append(c3, mustPreCommit(t, w, 3))
		if err := w.Close(bg); err != nil {
			t.Fatal(err)
		}
	}
	mustCommit(t, s.Committer(), c3...)
	want = append(want, seq(20, 30)...)
	want = append(want, seq(120, 130)...)
	want = append(want, seq(220, 230)...)
	wantNoHidden(t, dir)
	if got := parseInts(t, committed(t, dir)); !slices.Equal(got, want) {
		t.Fatalf("committed\n%v\nwant\n%v", got, want)
	}
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func parseInts(t testing.TB, s string) []int {
	t.Helper()
	var out []int
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if l == "" {
			continue
		}
		i, err := strconv.Atoi(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, i)
	}
	return out
}

// faultyFile is a part file that fails writes with ENOSPC once it holds
// limit bytes, and fsyncs with syncErr.
type faultyFile struct {
	*os.File
	limit   int64
	n       int64
	syncErr error
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if f.n+int64(len(p)) > f.limit {
		return 0, &os.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	f.n += int64(len(p))
	return f.File.Write(p)
}

func (f *faultyFile) Sync() error {
	if f.syncErr != nil {
		return &os.PathError{Op: "sync", Path: f.Name(), Err: f.syncErr}
	}
	return f.File.Sync()
}

func TestExactlyOnceErrors(t *testing.T) {
	in := events(5000) // more than the write buffer
	check := func(t *testing.T, err error, target error, substrs ...string) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		if target != nil && !errors.Is(err, target) {
			t.Errorf("%v is not %v", err, target)
		}
		for _, s := range substrs {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%v does not name %s", err, s)
			}
		}
	}

	t.Run("dir is a file", func(t *testing.T) {
		path := writeFile(t, t.TempDir(), "f", "")
		_, err := ExactlyOnce[event](path).OpenWriter(bg, 0, 1)
		check(t, err, nil, path)
		_, err = ExactlyOnce[event](filepath.Join(path, "sub")).OpenWriter(bg, 0, 1)
		check(t, err, syscall.ENOTDIR, path)
	})
	t.Run("bad subtask", func(t *testing.T) {
		_, err := ExactlyOnce[event](t.TempDir()).OpenWriter(bg, 2, 2)
		check(t, err, nil, "subtask 2 of 2")
	})
	t.Run("unwritable dir", func(t *testing.T) {
		dir := t.TempDir()
		if os.Geteuid() != 0 {
			// A real read-only directory (root may write to it anyway).
			w := openEO(t, ExactlyOnce[event](dir), 0, 1)
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(dir, 0o755)
			check(t, w.Write(bg, in[:1]), fs.ErrPermission, dir)
		}
		s := ExactlyOnce[event](dir, withFS(func(o *fsOps) {
			o.create = func(string) (partFile, error) { return nil, syscall.EACCES }
		}))
		w := openEO(t, s, 0, 1)
		check(t, w.Write(bg, in[:1]), fs.ErrPermission, dir)
		if _, err := w.PreCommit(bg, 1); err == nil {
			t.Fatal("PreCommit after a failed Write succeeded")
		}
	})
	faulty := func(limit int64, syncErr error) SinkOption {
		return withFS(func(o *fsOps) {
			o.create = func(path string) (partFile, error) {
				f, err := osFS.create(path)
				if err != nil {
					return nil, err
				}
				return &faultyFile{File: f.(*os.File), limit: limit, syncErr: syncErr}, nil
			}
		})
	}
	t.Run("disk full on write", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir, faulty(100_000, nil)), 0, 1)
		err := w.Write(bg, in)
		check(t, err, syscall.ENOSPC, dir, ".inprogress")
		_, err = w.PreCommit(bg, 1)
		check(t, err, syscall.ENOSPC, dir)
		if _, hidden := dirFiles(t, dir); len(hidden) != 1 || !strings.HasSuffix(hidden[0], ".inprogress") {
			t.Fatalf("hidden files %v", hidden)
		}
	})
	t.Run("disk full on flush", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir, faulty(100, nil)), 0, 1)
		mustWrite(t, w, in[:10]...) // buffered
		_, err := w.PreCommit(bg, 1)
		check(t, err, syscall.ENOSPC, dir, ".inprogress")
	})
	t.Run("disk full on fsync", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir, faulty(1<<30, syscall.ENOSPC)), 0, 1)
		mustWrite(t, w, in[:10]...)
		_, err := w.PreCommit(bg, 1)
		check(t, err, syscall.ENOSPC, "fsync", dir, ".inprogress")
		if err := w.Write(bg, in[:1]); err == nil {
			t.Fatal("Write after a failed PreCommit succeeded")
		}
	})
	t.Run("disk full on roll", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir, RollSize(1000), faulty(1<<30, syscall.ENOSPC)), 0, 1)
		check(t, w.Write(bg, in[:100]), syscall.ENOSPC, "fsync", dir)
	})
	renameFails := func(o *fsOps) {
		o.rename = func(oldpath, newpath string) error {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: syscall.EXDEV}
		}
	}
	t.Run("rename fails in PreCommit", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir, withFS(renameFails)), 0, 1)
		mustWrite(t, w, in[:10]...)
		_, err := w.PreCommit(bg, 1)
		check(t, err, syscall.EXDEV, dir, ".inprogress", ".pending")
	})
	t.Run("rename fails in Commit", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir), 0, 1)
		mustWrite(t, w, in[:10]...)
		c := mustPreCommit(t, w, 1)
		err := ExactlyOnce[event](dir, withFS(renameFails)).Committer().Commit(bg, c)
		check(t, err, syscall.EXDEV, dir, ".pending", "part-0000000001-0000-0000")
		// The job fails, restarts and commits again.
		mustCommit(t, ExactlyOnce[event](dir).Committer(), c)
		if committed(t, dir) != jsonLines(t, in[:10]) {
			t.Fatal("committed output differs from what was written")
		}
	})
	t.Run("fsync of the directory fails", func(t *testing.T) {
		dir := t.TempDir()
		s := ExactlyOnce[event](dir, withFS(func(o *fsOps) {
			o.syncDir = func(string) error { return syscall.EIO }
		}))
		w := openEO(t, s, 0, 1)
		mustWrite(t, w, in[:10]...)
		_, err := w.PreCommit(bg, 1)
		check(t, err, syscall.EIO, dir)
	})
	t.Run("recover", func(t *testing.T) {
		dir := t.TempDir()
		w := openEO(t, ExactlyOnce[event](dir), 0, 1)
		mustWrite(t, w, in[:10]...)
		s := ExactlyOnce[event](dir, withFS(func(o *fsOps) {
			o.remove = func(string) error { return syscall.EROFS }
		}))
		check(t, openEO(t, s, 0, 1).Recover(bg, 0), syscall.EROFS, dir, ".inprogress")
		w = openEO(t, s, 0, 1)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		check(t, w.Recover(bg, 0), fs.ErrNotExist, dir)
	})
	t.Run("checkpoint ids", func(t *testing.T) {
		w := openEO(t, ExactlyOnce[event](t.TempDir()), 0, 1)
		mustWrite(t, w, in[:1]...)
		mustPreCommit(t, w, 5)
		mustPreCommit(t, w, 5) // nothing to stage: fine
		mustWrite(t, w, in[:1]...)
		_, err := w.PreCommit(bg, 5)
		check(t, err, nil, "must be >= 0 and increase")
	})
}

func TestParseNames(t *testing.T) {
	for name, want := range map[string]*hidden{
		".part-3-0a1b2c3d-12.inprogress":                     {subtask: 3, writer: "0a1b2c3d"},
		".part-0000000042-0007-0001.0a1b2c3d.pending":        {pending: true, ckpt: 42, subtask: 7, writer: "0a1b2c3d"},
		".part-12345678901-12345-0001.0a1b2c3d.pending":      {pending: true, ckpt: 12345678901, subtask: 12345, writer: "0a1b2c3d"},
		".part-3-0a1b2c3d-x.inprogress":                      nil,
		".part-3-XYZ-1.inprogress":                           nil,
		".part-3-0a1b2c3d-1.inprogress~":                     nil,
		".part-0000000042-0007-0001.pending":                 nil,
		".part-0000000042-0007.0a1b2c3d.pending":             nil,
		".part--1-0007-0001.0a1b2c3d.pending":                nil,
		"part-0000000042-0007-0001":                          nil,
		".other":                                             nil,
		".part-0000000042-0007-0001.0a1b2c3d.pending.backup": nil,
	} {
		h, ok := parseHidden(name)
		if ok != (want != nil) || ok && h != *want {
			t.Errorf("%s: %+v, %v; want %+v", name, h, ok, want)
		}
	}
	if c, s, q, ok := parsePartName(finalName(12, 3, 4)); !ok || c != 12 || s != 3 || q != 4 {
		t.Errorf("parsePartName(%s) = %d, %d, %d, %v", finalName(12, 3, 4), c, s, q, ok)
	}
}

// TestExactlyOnceCrashSimulation drives the sink the way a job with
// checkpointing does, crashing it at random points (while writing, during the
// PreCommits of a checkpoint, after them but before the checkpoint's
// metadata is written, after the metadata before or during the commit) and
// restarting it from the latest complete checkpoint at a random parallelism,
// the writers of an attempt recovering and starting to write concurrently.
// Some checkpoints are aborted without a crash (their committables are
// dropped, possibly after only some writers pre-committed), as weir's
// coordinator does on a timeout. In the end the committed part files, in
// name order, hold every record exactly once, in the order the model
// predicts, and no hidden file is left.
func TestExactlyOnceCrashSimulation(t *testing.T) {
	runs := 80
	if testing.Short() {
		runs = 10
	}
	seeds := make([]uint64, runs)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	if os.Getenv(crashtest.SeedEnv) != "" {
		seeds = []uint64{crashtest.Seed(t)} // replay one
	}
	for _, seed := range seeds {
		simulateCrashes(t, seed)
		if t.Failed() {
			t.Fatalf("seed %d (replay: %s=%d go test -run '^%s$')", seed, crashtest.SeedEnv, seed, t.Name())
		}
	}
}

// segment is what one writer pre-committed at one checkpoint: the records
// r in [from, to) with r mod p == subtask.
type segment struct {
	id         int64
	subtask, p int
	from, to   int
}

func simulateCrashes(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 42))
	dir := t.TempDir()
	const n = 400
	// fsync is slow and beside the point here.
	opts := []SinkOption{withFS(func(o *fsOps) {
		o.create = func(path string) (partFile, error) {
			f, err := osFS.create(path)
			if err != nil {
				return nil, err
			}
			return noSync{f}, nil
		}
		o.syncDir = func(string) error { return nil }
	})}
	if rng.IntN(2) == 0 {
		opts = append(opts, RollSize(int64(10+rng.IntN(100))))
	}
	// Checkpoint ids after a restore: restoredID+1 (as weir does), or a
	// counter that never goes back.
	reuseIDs := rng.IntN(2) == 0
	var (
		counter    int64
		restoredID int64
		restored   [][]byte // committables of the latest complete checkpoint
		restoredAt int      // its position in the input
		committed  []segment
	)
	s := ExactlyOnce[int](dir, opts...)

	for attempt := 0; ; attempt++ {
		if attempt > 1000 {
			t.Fatal("no end")
		}
		if rng.IntN(2) == 0 {
			s = ExactlyOnce[int](dir, opts...) // a new process; otherwise an in-process restart
		}
		for _, c := range restored {
			mustCommit(t, s.Committer(), c)
		}
		if reuseIDs {
			counter = restoredID
		}
		p := 1 + rng.IntN(4)
		ws := make([]weir.CommittingWriter[int], p)
		for i := range ws {
			ws[i] = openEO(t, s, i, p)
		}
		pos := restoredAt
		since := make([]int, p) // position of each writer's last PreCommit
		for i := range since {
			since[i] = pos
		}
		var segs []segment // pre-committed in this attempt, not yet covered by a complete checkpoint

		// write sends records [pos, to) to the subtasks, record r to
		// subtask r mod p, the subtasks concurrently, in batches.
		write := func(to int, recover bool) {
			var wg sync.WaitGroup
			for i, w := range ws {
				r := rand.New(rand.NewPCG(rng.Uint64(), 0))
				wg.Go(func() {
					if recover {
						if err := w.Recover(bg, restoredID); err != nil {
							t.Error(err)
							return
						}
					}
					var items []int
					for x := pos; x < to; x++ {
						if x%p == i {
							items = append(items, x)
						}
					}
					for len(items) > 0 {
						k := min(len(items), 1+r.IntN(8))
						if err := w.Write(bg, items[:k]); err != nil {
							t.Error(err)
							return
						}
						items = items[k:]
					}
				})
			}
			wg.Wait()
			pos = to
		}
		write(min(n, pos+rng.IntN(20)), true)
		if t.Failed() {
			return
		}

	run:
		for {
			switch a := rng.IntN(20); {
			case pos < n && a < 12:
				write(min(n, pos+1+rng.IntN(30)), false)
			case pos == n || a < 19:
				counter++
				id := counter
				var committables [][]byte
				for k, i := range rng.Perm(p) {
					if rng.IntN(40) == 0 {
						if rng.IntN(2) == 0 {
							break run // crash during the PreCommits
						}
						if k > 0 {
							continue run // checkpoint aborted after some PreCommits
						}
					}
					if c := mustPreCommit(t, ws[i], id); c != nil {
						committables = append(committables, c)
					}
					segs = append(segs, segment{id: id, subtask: i, p: p, from: since[i], to: pos})
					since[i] = pos
				}
				switch rng.IntN(16) {
				case 0, 1:
					break run // crash before the metadata is written
				case 2:
					continue run // aborted: the committables are dropped
				}
				// Complete: everything pre-committed so far is covered.
				restoredID, restored, restoredAt = id, committables, pos
				committed = append(committed, segs...)
				segs = nil
				for _, i := range rng.Perm(len(committables)) {
					if rng.IntN(10) == 0 {
						break run // crash during the commit
					}
					mustCommit(t, s.Committer(), committables[i])
				}
				if pos == n {
					for _, w := range ws {
						if err := w.Close(bg); err != nil {
							t.Fatal(err)
						}
					}
					checkCommitted(t, dir, n, committed)
					return
				}
			default:
				break run // crash while writing
			}
		}
		// The failed attempt's writers are closed, or just dropped.
		if rng.IntN(2) == 0 {
			for _, w := range ws {
				w.Close(bg)
			}
		}
		if t.Failed() {
			return
		}
	}
}

type noSync struct{ partFile }

func (noSync) Sync() error { return nil }

// checkCommitted checks that dir holds no hidden file and that its
// committed files, in name order, hold the records of segs, by checkpoint
// id and subtask, and n records in all.
func checkCommitted(t *testing.T, dir string, n int, segs []segment) {
	t.Helper()
	wantNoHidden(t, dir)
	slices.SortFunc(segs, func(a, b segment) int {
		if a.id != b.id {
			return int(a.id - b.id)
		}
		return a.subtask - b.subtask
	})
	var want []int
	for _, sg := range segs {
		for r := sg.from; r < sg.to; r++ {
			if r%sg.p == sg.subtask {
				want = append(want, r)
			}
		}
	}
	if len(want) != n {
		t.Fatalf("model: %d records, want %d", len(want), n)
	}
	if got := parseInts(t, committed(t, dir)); !slices.Equal(got, want) {
		t.Fatalf("committed\n%v\nwant\n%v", got, want)
	}
}
