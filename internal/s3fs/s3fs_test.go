package s3fs_test

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/internal/checkpoint"
	_ "github.com/weirstream/weir/internal/s3fs"
	"github.com/weirstream/weir/internal/testing/s3test"
)

func writeFile(t *testing.T, name, content string) {
	t.Helper()
	f, err := checkpoint.Default.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, content); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) (string, error) {
	t.Helper()
	f, err := checkpoint.Default.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

func names(t *testing.T, dir string) string {
	t.Helper()
	des, err := checkpoint.Default.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if de.IsDir() {
			n += "/"
		}
		out = append(out, n)
	}
	return strings.Join(out, " ")
}

// The file system operations checkpoints use, on an S3 store through the
// default (scheme-routing) file system.
func TestFileSystem(t *testing.T) {
	s3test.Start(t, "b")
	fsys := checkpoint.Default
	writeFile(t, "s3://b/ck/x.inprogress/state-1", "one")
	writeFile(t, "s3://b/ck/x.inprogress/_metadata", "meta")
	writeFile(t, "s3:/b/ck/x.inprogress/sub/deep", "deep") // as filepath.Clean leaves a URL
	if got := names(t, "s3://b/ck"); got != "x.inprogress/" {
		t.Fatalf("ReadDir(ck) = %q", got)
	}
	if got := names(t, "s3://b/ck/x.inprogress"); got != "_metadata state-1 sub/" {
		t.Fatalf("ReadDir = %q", got)
	}
	if fi, err := fsys.Stat("s3://b/ck/x.inprogress/state-1"); err != nil || fi.Size() != 3 || fi.IsDir() {
		t.Fatalf("Stat(file) = %v, %v", fi, err)
	}
	if fi, err := fsys.Stat("s3://b/ck/x.inprogress"); err != nil || !fi.IsDir() {
		t.Fatalf("Stat(dir) = %v, %v", fi, err)
	}
	if _, err := fsys.Stat("s3://b/ck/nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Stat(missing) = %v, want fs.ErrNotExist", err)
	}
	if _, err := fsys.Open("s3://b/ck/nope"); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "s3://b/ck/nope") {
		t.Fatalf("Open(missing) = %v, want fs.ErrNotExist naming the object", err)
	}
	// a directory rename moves every object
	if err := fsys.Rename("s3://b/ck/x.inprogress", "s3://b/ck/x"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, "s3://b/ck"); got != "x/" {
		t.Fatalf("after the rename ReadDir(ck) = %q", got)
	}
	for name, want := range map[string]string{"state-1": "one", "_metadata": "meta", "sub/deep": "deep"} {
		if got, err := readFile(t, "s3://b/ck/x/"+name); err != nil || got != want {
			t.Fatalf("%s = %q, %v", name, got, err)
		}
	}
	// a file rename replaces the target
	writeFile(t, "s3://b/ck/x/_metadata.tmp", "meta2")
	if err := fsys.Rename("s3://b/ck/x/_metadata.tmp", "s3://b/ck/x/_metadata"); err != nil {
		t.Fatal(err)
	}
	if got, _ := readFile(t, "s3://b/ck/x/_metadata"); got != "meta2" {
		t.Fatalf("_metadata after the rename = %q", got)
	}
	if err := fsys.RemoveAll("s3://b/ck/x"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, "s3://b/ck"); got != "" {
		t.Fatalf("after RemoveAll ReadDir(ck) = %q", got)
	}
	// errors name the object and say what
	if _, err := fsys.Open("gs://b/x"); err == nil || !strings.Contains(err.Error(), "no file system for gs:// paths") {
		t.Fatalf("Open(gs://) = %v", err)
	}
	// a missing bucket is not a missing file: the store must not start
	// as if empty
	if _, err := readFile(t, "s3://missing-bucket/x"); errors.Is(err, fs.ErrNotExist) || err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("a missing bucket: %v", err)
	}
	if _, err := checkpoint.Open("s3://missing-bucket/ck"); err == nil || !strings.Contains(err.Error(), "NoSuchBucket") {
		t.Fatalf("a store in a missing bucket: %v", err)
	}
}

// A checkpoint store in a bucket: checkpoints written, committed, found
// again after a "restart", retained, and what a crash left behind is
// cleaned; the AWS CLI (Debian's awscli, which nobody here wrote) lists
// and reads what weir wrote.
func TestCheckpointStore(t *testing.T) {
	srv := s3test.Start(t, "ckpt")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := "s3://ckpt/jobs/counts"
	store, err := checkpoint.Open(dir, checkpoint.Retain(2), checkpoint.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	write := func(content string) {
		id, err := store.NextID()
		if err != nil {
			t.Fatal(err)
		}
		p, err := store.Begin(id, checkpoint.KindCheckpoint)
		if err != nil {
			t.Fatal(err)
		}
		w, err := p.Create("counts.0")
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, content)
		file, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		file.Subtask, file.KeyGroups = 0, &checkpoint.KeyGroupRange{Start: 0, End: 128}
		if _, err := p.Commit(checkpoint.Metadata{Job: "counts", MaxParallelism: 128,
			Operators: []checkpoint.OperatorState{{UID: "count", Name: "Count", Parallelism: 1, Files: []checkpoint.FileInfo{file}}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []string{"a=1\n", "a=2\n", "a=3\n"} {
		write(c)
	}
	// a crash in the middle of checkpoint 4
	p, err := store.Begin(4, checkpoint.KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := p.Create("counts.0")
	io.WriteString(w, "half")
	w.Close()

	store, err = checkpoint.Open(dir, checkpoint.WithLogger(quiet), checkpoint.VerifyContents())
	if err != nil {
		t.Fatal(err)
	}
	c, err := store.Latest()
	if err != nil {
		t.Fatal(err)
	}
	state, err := c.ReadFile("counts.0")
	if err != nil || string(state) != "a=3\n" || c.ID() != 3 {
		t.Fatalf("latest: checkpoint %d, %q, %v", c.ID(), state, err)
	}
	if got := names(t, dir); got != "chk-0000000002/ chk-0000000003/" {
		t.Fatalf("the store holds %q, want the two retained checkpoints and no in-progress one", got)
	}

	// a flipped byte in a state file: Latest falls back to checkpoint 2
	corrupt := dir + "/chk-0000000003/counts.0"
	writeFile(t, corrupt, "a=9\n")
	if c, err = store.Latest(); err != nil || c.ID() != 2 {
		t.Fatalf("with checkpoint 3 corrupt, latest = %v, %v; want checkpoint 2", c, err)
	}

	aws := s3test.AWSCLI(t)
	if aws == "" {
		return
	}
	out, err := exec.Command(aws, "--endpoint-url", srv.URL, "s3", "ls", "--recursive", "s3://ckpt/jobs/counts/").CombinedOutput()
	if err != nil {
		t.Fatalf("aws s3 ls: %v\n%s", err, out)
	}
	for _, want := range []string{"jobs/counts/chk-0000000002/_metadata", "jobs/counts/chk-0000000003/counts.0"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("aws s3 ls does not list %s:\n%s", want, out)
		}
	}
	local := filepath.Join(t.TempDir(), "state")
	if out, err := exec.Command(aws, "--endpoint-url", srv.URL, "s3", "cp", "s3://ckpt/jobs/counts/chk-0000000002/counts.0", local).CombinedOutput(); err != nil {
		t.Fatalf("aws s3 cp: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(local); string(b) != "a=2\n" {
		t.Fatalf("aws s3 cp read %q", b)
	}
}
