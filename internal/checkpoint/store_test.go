package checkpoint

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestRoundTrip(t *testing.T) {
	s, _ := openStore(t)
	if _, err := s.Latest(); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("Latest of an empty store: %v, want ErrNoCheckpoint", err)
	}
	before := time.Now()
	committed, err := writeCheckpoint(s, 7, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if want := chkPath(s, 7); committed.Path() != want {
		t.Fatalf("path %s, want %s", committed.Path(), want)
	}
	c := wantLatest(t, s, 7)
	checkContents(t, c)

	got, want := *c.Metadata(), *committed.Metadata()
	if got.Created.Before(before.Add(-time.Second)) || !got.Created.Equal(want.Created) {
		t.Fatalf("created %v, committed %v", got.Created, want.Created)
	}
	got.Created, want.Created = time.Time{}, time.Time{}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("metadata read back:\n%+v\nwant\n%+v", got, want)
	}
	if got.FormatVersion != 1 || got.Kind != KindCheckpoint || got.Job != "test" ||
		got.JobOptions["parallelism"] != "3" || string(got.Operators[0].Extra["offsets"]) != `{"p0":700}` {
		t.Fatalf("metadata: %+v", got)
	}
	if kg := got.Operators[1].Files[2].KeyGroups; *kg != (KeyGroupRange{20, 30}) {
		t.Fatalf("key groups %v", kg)
	}

	// Streaming read, in small pieces.
	r, err := c.Open("window.0")
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(io.LimitReader(r, 1<<30))
	r.Close()
	if err != nil || len(data) != len(content(7, 0)) {
		t.Fatalf("read %d bytes, err %v", len(data), err)
	}
	if _, err := c.Open("nope"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open of an unlisted file: %v", err)
	}

	// OpenPath opens the same thing.
	c2, err := OpenPath(c.Path())
	if err != nil {
		t.Fatal(err)
	}
	checkContents(t, c2)
}

func TestEmptyCheckpoint(t *testing.T) {
	// A job with no state (or nothing but Extra) still checkpoints.
	s, _ := openStore(t)
	p, err := s.Begin(1, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(Metadata{MaxParallelism: 1,
		Operators: []OperatorState{{UID: "src", Parallelism: 1}}}); err != nil {
		t.Fatal(err)
	}
	c := wantLatest(t, s, 1)
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestRetention(t *testing.T) {
	s, logs := openStore(t, Retain(2))
	mustWrite(t, s, 1, 2)
	if _, err := writeCheckpoint(s, 3, KindSavepoint); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, 4, 5, 6)
	infos, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range infos {
		if !in.Valid() {
			t.Errorf("%s: not valid: %v", in.Path, in.Err)
		}
		got = append(got, fmt.Sprintf("%s %d", in.Kind, in.ID))
	}
	want := []string{"savepoint 3", "checkpoint 5", "checkpoint 6"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after retention: %v, want %v", got, want)
	}
	wantContains(t, "log", logs.String(), "removed old checkpoint", chkPath(s, 4))
}

func TestRetentionCountsValidCheckpoints(t *testing.T) {
	s, _ := openStore(t, Retain(2))
	mustWrite(t, s, 1, 2, 3)
	// 3 goes bad: committing 4 must keep 2, the newest valid one after 4.
	if err := os.Remove(filepath.Join(chkPath(s, 3), "window.1")); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, 4)
	for id, want := range map[int64]bool{1: false, 2: true, 3: true, 4: true} {
		if _, err := os.Stat(chkPath(s, id)); (err == nil) != want {
			t.Errorf("chk %d: exists=%t, want %t", id, err == nil, want)
		}
	}
	mustWrite(t, s, 5)
	for id, want := range map[int64]bool{2: false, 3: false, 4: true, 5: true} {
		if _, err := os.Stat(chkPath(s, id)); (err == nil) != want {
			t.Errorf("chk %d: exists=%t, want %t", id, err == nil, want)
		}
	}
}

func TestSavepoints(t *testing.T) {
	s, _ := openStore(t)
	mustWrite(t, s, 1)
	sp, err := writeCheckpoint(s, 2, KindSavepoint)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := filepath.Match("savepoint-2-*", filepath.Base(sp.Path())); !ok {
		t.Fatalf("savepoint directory %s", sp.Path())
	}
	// The newest by id, savepoint or not, is the one to restore.
	c := wantLatest(t, s, 2)
	if c.Kind() != KindSavepoint {
		t.Fatalf("kind %s", c.Kind())
	}

	// A savepoint the user names lives outside the store.
	target := filepath.Join(t.TempDir(), "my", "savepoint")
	if _, err := s.BeginSavepointAt(target, 3); err != nil { // an earlier attempt's, left by a crash
		t.Fatal(err)
	}
	p, err := s.BeginSavepointAt(target, 3)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := p.Create("state")
	w.Write([]byte("hello"))
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Commit(Metadata{MaxParallelism: 8,
		Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: []FileInfo{info}}}}); err != nil {
		t.Fatal(err)
	}
	u, err := OpenPath(target)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := u.ReadFile("state"); err != nil || string(b) != "hello" || u.Kind() != KindSavepoint {
		t.Fatalf("ReadFile: %q, %v, kind %s", b, err, u.Kind())
	}
	if _, err := s.BeginSavepointAt(filepath.Join(t.TempDir(), "chk-0000000004"), 4); err == nil {
		t.Fatal("a savepoint named like a checkpoint")
	}
	if _, err := s.BeginSavepointAt(target, 4); !errors.Is(err, ErrExists) {
		t.Fatalf("savepoint over an existing directory: %v", err)
	}
	wantLatest(t, s, 2)
}

func TestBeginIDs(t *testing.T) {
	s, _ := openStore(t)
	if id, err := s.NextID(); err != nil || id != 1 {
		t.Fatalf("NextID of an empty store: %d, %v", id, err)
	}
	mustWrite(t, s, 5)
	for _, id := range []int64{3, 5} {
		if _, err := s.Begin(id, KindCheckpoint); !errors.Is(err, ErrStaleID) {
			t.Fatalf("Begin(%d) after 5: %v, want ErrStaleID", id, err)
		}
	}
	if _, err := s.Begin(0, KindCheckpoint); err == nil {
		t.Fatal("Begin(0) succeeded")
	}
	if _, err := s.Begin(6, "backup"); err == nil {
		t.Fatal("Begin with a bad kind succeeded")
	}
	p, err := s.Begin(6, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Begin(6, KindCheckpoint); !errors.Is(err, ErrExists) {
		t.Fatalf("Begin(6) twice: %v", err)
	}
	if id, _ := s.NextID(); id != 7 {
		t.Fatalf("NextID with 6 in progress: %d", id)
	}
	if err := p.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := p.Abort(); err != nil {
		t.Fatalf("second Abort: %v", err)
	}
	if _, err := os.Stat(p.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("aborted directory: %v", err)
	}
	if _, err := p.Create("late"); !errors.Is(err, ErrDone) {
		t.Fatalf("Create after Abort: %v", err)
	}
	if _, err := p.Commit(Metadata{}); !errors.Is(err, ErrDone) {
		t.Fatalf("Commit after Abort: %v", err)
	}
	// A corrupt checkpoint still takes its id.
	if err := os.Remove(filepath.Join(chkPath(s, 5), metadataName)); err != nil {
		t.Fatal(err)
	}
	if id, _ := s.NextID(); id != 6 {
		t.Fatalf("NextID: %d, want 6", id)
	}
	mustWrite(t, s, 6)
}

func TestCommitChecksFiles(t *testing.T) {
	s, _ := openStore(t)
	mustWrite(t, s, 1)
	cases := []struct {
		name string
		edit func(p *Pending, files []FileInfo) Metadata
		want string
	}{
		{"unlisted file", func(p *Pending, files []FileInfo) Metadata {
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files[:1]}}}
		}, "b was written but is not listed"},
		{"listed but not written", func(p *Pending, files []FileInfo) Metadata {
			files = append(files, FileInfo{Name: "c"})
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files}}}
		}, "c is listed in the metadata but was not written"},
		{"wrong checksum", func(p *Pending, files []FileInfo) Metadata {
			files[1].CRC32C++
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files}}}
		}, "b is listed with size 1 crc32c"},
		{"file still open", func(p *Pending, files []FileInfo) Metadata {
			p.Create("d")
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files}}}
		}, "d not closed"},
		{"subtask out of range", func(p *Pending, files []FileInfo) Metadata {
			files[0].Subtask = 1
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files}}}
		}, "subtask 1 not in [0, 1)"},
		{"key groups beyond max parallelism", func(p *Pending, files []FileInfo) Metadata {
			files[0].KeyGroups = &KeyGroupRange{0, 9}
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files}}}
		}, "key groups [0, 9)"},
		{"duplicate operator", func(p *Pending, files []FileInfo) Metadata {
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{
				{UID: "op", Parallelism: 1, Files: files[:1]}, {UID: "op", Parallelism: 1, Files: files[1:]}}}
		}, `operator "op": listed twice`},
		{"wrong id", func(p *Pending, files []FileInfo) Metadata {
			return Metadata{ID: 99, MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files}}}
		}, "metadata has id 99"},
		{"bad extra", func(p *Pending, files []FileInfo) Metadata {
			return Metadata{MaxParallelism: 8, Operators: []OperatorState{{UID: "op", Parallelism: 1, Files: files,
				Extra: map[string]json.RawMessage{"x": json.RawMessage("{")}}}}
		}, "encoding metadata"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := s.Begin(int64(i+2), KindCheckpoint)
			if err != nil {
				t.Fatal(err)
			}
			var files []FileInfo
			for _, name := range []string{"a", "b"} {
				w, err := p.Create(name)
				if err != nil {
					t.Fatal(err)
				}
				w.Write([]byte(name))
				info, err := w.Close()
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, info)
			}
			_, err = p.Commit(tc.edit(p, files))
			if err == nil {
				t.Fatal("Commit succeeded")
			}
			wantContains(t, "error", err.Error(), tc.want, p.final)
			if _, err := os.Stat(p.dir); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("in-progress directory after a failed commit: %v", err)
			}
			wantLatest(t, s, 1)
		})
	}
}

func TestCreateNames(t *testing.T) {
	s, _ := openStore(t)
	p, err := s.Begin(1, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	for _, name := range []string{"", "_metadata", ".hidden", "a/b", "../x", "a b", string(make([]byte, 256))} {
		if _, err := p.Create(name); err == nil {
			t.Errorf("Create(%q) succeeded", name)
		}
	}
	w, err := p.Create("ok-1.state")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Create("ok-1.state"); !errors.Is(err, ErrExists) {
		t.Fatalf("Create twice: %v", err)
	}
	w.Close()
}

func TestSubsumed(t *testing.T) {
	s, _ := openStore(t)
	p7, err := s.Begin(7, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, 8)
	_, err = p7.Commit(Metadata{MaxParallelism: 1})
	if !errors.Is(err, ErrSubsumed) {
		t.Fatalf("commit of 7 after 8: %v", err)
	}
	wantLatest(t, s, 8)
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	s, _ := openStore(t, Retain(2))
	const subtasks = 8
	var readers sync.WaitGroup
	stop := make(chan struct{})
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if c, err := s.Latest(); err == nil {
				if _, err := c.ReadFile("s0"); err != nil {
					t.Error(err)
				}
			} else if !errors.Is(err, ErrNoCheckpoint) {
				t.Error(err)
			}
			if _, err := s.List(); err != nil {
				t.Error(err)
			}
		}
	})
	for id := int64(1); id <= 10; id++ {
		p, err := s.Begin(id, KindCheckpoint)
		if err != nil {
			t.Fatal(err)
		}
		op := OperatorState{UID: "op", Parallelism: subtasks, Files: make([]FileInfo, subtasks)}
		var wg sync.WaitGroup
		for i := range subtasks {
			wg.Go(func() {
				w, err := p.Create(fmt.Sprintf("s%d", i))
				if err != nil {
					t.Error(err)
					return
				}
				for range 100 {
					w.Write(content(id, i)[:1000])
				}
				info, err := w.Close()
				if err != nil {
					t.Error(err)
				}
				info.Subtask = i
				op.Files[i] = info
			})
		}
		wg.Wait()
		if _, err := p.Commit(Metadata{MaxParallelism: 128, Operators: []OperatorState{op}}); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	readers.Wait()
	c := wantLatest(t, s, 10)
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestList(t *testing.T) {
	s, _ := openStore(t)
	mustWrite(t, s, 1, 2)
	if err := os.Truncate(filepath.Join(chkPath(s, 2), "window.2"), 10); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(chkPath(s, 3), 0o755); err != nil { // no _metadata
		t.Fatal(err)
	}
	p, err := s.Begin(4, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	os.WriteFile(filepath.Join(s.Dir(), "README"), nil, 0o644) // ignored

	infos, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 4 {
		t.Fatalf("%d infos: %+v", len(infos), infos)
	}
	want := int64(len(content(1, 0)) + len(content(1, 1)) + len(content(1, 2)))
	if in := infos[0]; !in.Valid() || in.Size != want || in.Operators != 2 || in.Created.IsZero() {
		t.Errorf("chk 1: %+v", in)
	}
	if in := infos[1]; in.Valid() || !in.Complete || !errors.Is(in.Err, ErrCorrupt) || in.Operators != 2 {
		t.Errorf("chk 2 (truncated file): %+v", in)
	}
	if in := infos[2]; in.Valid() || in.Complete || !errors.Is(in.Err, ErrCorrupt) {
		t.Errorf("chk 3 (no metadata): %+v", in)
	}
	if in := infos[3]; !in.InProgress || in.Complete || in.ID != 4 {
		t.Errorf("chk 4 (in progress): %+v", in)
	}
}

func TestReadOnly(t *testing.T) {
	s, _ := openStore(t)
	mustWrite(t, s, 1)
	p, err := s.Begin(2, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Abort()
	// The CLI, looking at a running job's directory, must not touch it.
	ro, err := Open(s.Dir(), ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.dir); err != nil {
		t.Fatalf("read-only Open removed an in-progress checkpoint: %v", err)
	}
	if _, err := ro.Begin(3, KindCheckpoint); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Begin on a read-only store: %v", err)
	}
	wantLatest(t, ro, 1)
	if _, err := Open(filepath.Join(t.TempDir(), "none"), ReadOnly()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read-only Open of a missing directory: %v", err)
	}
}

func TestOptions(t *testing.T) {
	for _, opt := range []Option{Retain(0), WithFS(nil), WithLogger(nil)} {
		if _, err := Open(t.TempDir(), opt); err == nil {
			t.Errorf("Open with %#v succeeded", opt)
		}
	}
}

// A directory at the path's .inprogress that weir did not make is neither
// removed nor written into; one an earlier attempt left is removed.
func TestBeginSavepointAtKeepsForeignInProgress(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "sp")
	tmp := target + inProgressSuffix
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "precious"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginSavepointAt(target, 1); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), "not made by weir") {
		t.Fatalf("BeginSavepointAt over a foreign %s: %v", tmp, err)
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "precious")); err != nil || string(b) != "mine" {
		t.Fatalf("the foreign directory was touched: %q, %v", b, err)
	}
	if des, _ := os.ReadDir(tmp); len(des) != 1 {
		t.Fatalf("the foreign directory holds %d entries, want 1", len(des))
	}

	// An attempt that crashed: its leftover is weir's and goes.
	if err := os.RemoveAll(tmp); err != nil {
		t.Fatal(err)
	}
	crashed, err := s.BeginSavepointAt(target, 1)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := crashed.Create("half")
	w.Write([]byte("x"))
	w.Close()
	p, err := s.BeginSavepointAt(target, 2)
	if err != nil {
		t.Fatalf("over an earlier attempt's leftover: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "half")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the earlier attempt's file is still there: %v", err)
	}
	p.Abort()
}

// A savepoint named X.inprogress, then one named X: the suffix is
// reserved, and a completed savepoint keeps no owner marker, so the second
// can never remove the first (issue 35: it did).
func TestSavepointAtNeverRemovesACompletedSavepoint(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "sp")
	if _, err := s.BeginSavepointAt(target+inProgressSuffix, 1); err == nil || !strings.Contains(err.Error(), "reserved") {
		t.Fatalf("BeginSavepointAt(%s): %v; want the suffix refused as reserved", target+inProgressSuffix, err)
	}
	// A completed savepoint at X.inprogress, as an older weir could write.
	old, err := s.BeginSavepointAt(filepath.Join(t.TempDir(), "other"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := old.Commit(Metadata{MaxParallelism: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(old.final), "other", ownerMarker)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a completed savepoint keeps its owner marker: %v", err)
	}
	if err := os.Rename(old.final, target+inProgressSuffix); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(target+inProgressSuffix, ownerMarker), []byte("weir savepoint in progress\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.BeginSavepointAt(target, 2); !errors.Is(err, ErrExists) {
		t.Fatalf("BeginSavepointAt over a completed savepoint at %s: %v; want ErrExists", target+inProgressSuffix, err)
	}
	if _, err := OpenPath(target + inProgressSuffix); err != nil {
		t.Fatalf("the completed savepoint was damaged: %v", err)
	}
}
