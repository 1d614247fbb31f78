package file

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/internal/testing/s3test"
)

// objectStore starts an S3 store with bucket "lake" and returns weir's
// client of it.
func objectStore(t *testing.T) *s3fs.FS {
	t.Helper()
	s3test.Start(t, "lake")
	obj, err := s3fs.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// objectsCommitted concatenates the committed part objects below dir in
// name order, and lists every object's name relative to dir.
func objectsCommitted(t *testing.T, obj *s3fs.FS, dir string) (string, []string) {
	t.Helper()
	objs, err := obj.Walk(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	var names []string
	for _, o := range objs {
		rel := strings.TrimPrefix(o.Name, dir+"/")
		names = append(names, rel)
		if _, _, _, ok := parsePartName(path.Base(rel)); !ok {
			continue
		}
		data, err := obj.ReadFile(o.Name)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String(), names
}

func openUploads(t *testing.T, obj *s3fs.FS, dir string) int {
	t.Helper()
	us, err := obj.Uploads(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(us)
}

// On s3:// an ExactlyOnce sink stages each part file as a multipart
// upload at PreCommit, which Commit completes: nothing is visible before,
// commits are idempotent, Recover aborts the uploads of checkpoints after
// the restored one, a lost upload and an object in the way fail the
// commit for good.
func TestExactlyOnceObjectStorage(t *testing.T) {
	obj := objectStore(t)
	const dir = "s3://lake/out"
	s := ExactlyOnce[event](dir+"/", RollSize(200))
	in := events(40)
	w := openEO(t, s, 0, 1)
	mustRecover(t, w, 0)
	mustWrite(t, w, in[:20]...)
	c1 := mustPreCommit(t, w, 1)
	var cm committable
	if err := json.Unmarshal(c1, &cm); err != nil || len(cm.Files) < 3 || cm.Dir != dir {
		t.Fatalf("committable %s, %v: want several files in %s", c1, err, dir)
	}
	if got, names := objectsCommitted(t, obj, dir); got != "" || len(names) != 0 {
		t.Fatalf("visible before the commit: %v", names)
	}
	if n := openUploads(t, obj, dir); n != len(cm.Files) {
		t.Fatalf("%d open uploads, want %d", n, len(cm.Files))
	}
	mustWrite(t, w, in[20:30]...) // never pre-committed: lost with the crash below
	mustCommit(t, s.Committer(), c1, c1)
	mustCommit(t, ExactlyOnce[event](dir).Committer(), c1)
	if got, _ := objectsCommitted(t, obj, dir); got != jsonLines(t, in[:20]) {
		t.Fatalf("committed %q", got)
	}
	// A checkpoint pre-committed and never completed, then a crash: the
	// restored writer aborts its uploads, and its committable is lost.
	mustWrite(t, w, in[30:]...)
	c2 := mustPreCommit(t, w, 2)
	w.Close(bg)
	w = openEO(t, s, 0, 1)
	mustRecover(t, w, 1)
	if n := openUploads(t, obj, dir); n != 0 {
		t.Fatalf("%d uploads left after Recover(1)", n)
	}
	err := s.Committer().Commit(bg, c2)
	if !weir.IsPermanent(err) || !strings.Contains(err.Error(), "lost") {
		t.Fatalf("committing aborted uploads: %v", err)
	}
	mustWrite(t, w, in[20:]...)
	c2 = mustPreCommit(t, w, 2)
	mustCommit(t, s.Committer(), c2)
	if got, _ := objectsCommitted(t, obj, dir); got != jsonLines(t, in) {
		t.Fatalf("committed output differs from what was written:\n%s", got)
	}
	if c := mustPreCommit(t, w, 3); c != nil {
		t.Fatalf("committed files listed again: %s", c)
	}

	// An object in the way of an open upload is not overwritten.
	mustWrite(t, w, in[:1]...)
	c4 := mustPreCommit(t, w, 4)
	if err := json.Unmarshal(c4, &cm); err != nil {
		t.Fatal(err)
	}
	final := dir + "/" + cm.Files[0].Final
	if err := obj.Put(final, []byte("other\n")); err != nil {
		t.Fatal(err)
	}
	err = s.Committer().Commit(bg, c4)
	if !weir.IsPermanent(err) || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), final) {
		t.Fatalf("object in the way: %v", err)
	}
	if o, err := obj.Head(final); err != nil || o.Size != 6 {
		t.Fatalf("the object in the way: %+v, %v", o, err)
	}
	// malformed committables
	for _, bad := range []string{
		`{"dir":"s3://lake/out","files":[{"final":"part-0000000001-0000-0000","size":1}]}`,
		`{"dir":"s3://lake/out","files":[{"final":"../part-0000000001-0000-0000","size":1,"upload":"u"}]}`,
		`{"dir":"s3://lake/out","files":[{"final":"x","size":1,"upload":"u"}]}`,
	} {
		if err := s.Committer().Commit(bg, []byte(bad)); !weir.IsPermanent(err) || !strings.Contains(err.Error(), "malformed committable") {
			t.Errorf("committable %s: %v", bad, err)
		}
	}
	// a missing bucket: a clear error when the writer opens
	_, err = ExactlyOnce[event]("s3://nobucket/out").OpenWriter(bg, 0, 1)
	if err == nil || !strings.Contains(err.Error(), "s3://nobucket") {
		t.Fatalf("missing bucket: %v", err)
	}
}

// A partitioned sink on s3:// writes each partition's success file once
// the partition is committed, and a restored subtask 0 takes over the
// partitions committed without one.
func TestPartitionCommitObjectStorage(t *testing.T) {
	obj := objectStore(t)
	const dir = "s3://lake/parts"
	var now atomic.Int64
	now.Store(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli())
	clock := func() time.Time { return time.UnixMilli(now.Load()) }
	s := ExactlyOnce[string](dir, trailer(), Suffix(".tr"), PartitionBy(func(s string) (string, error) { return "p=" + s[:1], nil }),
		PartitionCommit("_SUCCESS", 0, clock))
	w0, w1 := openEO(t, s, 0, 2), openEO(t, s, 1, 2)
	mustRecover(t, w0, 0)
	mustRecover(t, w1, 0)
	mustWrite(t, w0, "a1", "b1")
	mustWrite(t, w1, "a2")
	c0, c1 := mustPreCommit(t, w0, 1), mustPreCommit(t, w1, 1)
	// the first committable leaves p=a to the second (its file is still
	// an open upload)
	mustCommit(t, s.Committer(), c0)
	if _, names := objectsCommitted(t, obj, dir); strings.Contains(strings.Join(names, " "), "p=a/_SUCCESS") {
		t.Fatalf("p=a marked before all its files are committed: %v", names)
	}
	mustCommit(t, s.Committer(), c1)
	got, names := objectsCommitted(t, obj, dir)
	want := "p=a/_SUCCESS p=a/part-0000000001-0000-0000.tr p=a/part-0000000001-0001-0000.tr p=b/_SUCCESS p=b/part-0000000001-0000-0001.tr"
	if strings.Join(names, " ") != want || got != "a1|END(p=a)a2|END(p=a)b1|END(p=b)" {
		t.Fatalf("objects %v holding %q, want %s", names, got, want)
	}
	// a partition committed whose success file was lost (a crash between
	// the two): a restored subtask 0 writes it with its next commit
	if err := s3Remove(obj, dir+"/p=b/_SUCCESS"); err != nil {
		t.Fatal(err)
	}
	w0 = openEO(t, s, 0, 1)
	mustRecover(t, w0, 1)
	mustCommit(t, s.Committer(), mustPreCommit(t, w0, 2))
	if _, err := obj.Head(dir + "/p=b/_SUCCESS"); err != nil {
		t.Fatalf("p=b's success file not written again: %v", err)
	}
}

func s3Remove(obj *s3fs.FS, name string) error {
	if err := obj.Remove(name); err != nil {
		return err
	}
	if _, err := obj.Head(name); !errors.Is(err, fs.ErrNotExist) {
		return errors.New("still there")
	}
	return nil
}

// JSONLines and CSV read s3:// objects: each object a split, a reader
// resumed at a checkpointed position reads on from there (a ranged read),
// and Follow is refused for objects.
func TestSourceObjects(t *testing.T) {
	obj := objectStore(t)
	in := events(300)
	if err := obj.Put("s3://lake/in/a.jsonl", []byte(jsonLines(t, in[:200]))); err != nil {
		t.Fatal(err)
	}
	if err := obj.Put("s3://lake/in/b.jsonl", []byte(jsonLines(t, in[200:]))); err != nil {
		t.Fatal(err)
	}
	src := JSONLines[event]([]string{"s3://lake/in/a.jsonl", "s3:/lake/in//b.jsonl"}).(weir.RestorableSource[event])
	splits, err := src.Splits(bg)
	if err != nil || len(splits) != 2 || splits[1].ID() != "s3://lake/in/b.jsonl" {
		t.Fatalf("splits %v, %v", splits, err)
	}
	var got []event
	read := func(r weir.SplitReader[event], n int) {
		t.Helper()
		buf := make([]event, 7)
		for n > 0 {
			k, err := r.Read(bg, buf[:min(len(buf), n)])
			got = append(got, buf[:k]...)
			n -= k
			if err == io.EOF {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := src.Open(bg, splits[0])
	if err != nil {
		t.Fatal(err)
	}
	read(r, 123)
	pos, err := r.(weir.CheckpointedReader[event]).Position()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	r, err = src.OpenAt(bg, splits[0], pos)
	if err != nil {
		t.Fatal(err)
	}
	read(r, 1000)
	r.Close()
	if r, err = src.Open(bg, splits[1]); err != nil {
		t.Fatal(err)
	}
	read(r, 1000)
	r.Close()
	if fmt.Sprint(got) != fmt.Sprint(in) {
		t.Fatalf("read %d events, want the %d written, in order", len(got), len(in))
	}
	// a missing object, and Follow
	if _, err := src.Open(bg, split("s3://lake/in/none.jsonl")); err == nil || !strings.Contains(err.Error(), "s3://lake/in/none.jsonl") {
		t.Fatalf("missing object: %v", err)
	}
	if _, err := JSONLines[event]([]string{"s3://lake/in/a.jsonl"}, Follow(time.Second)).Splits(bg); err == nil || !strings.Contains(err.Error(), "does not grow") {
		t.Fatalf("Follow on an object: %v", err)
	}
}
