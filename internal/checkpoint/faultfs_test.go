package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func openFaultStore(t *testing.T, opts ...Option) (*Store, *FaultFS) {
	t.Helper()
	ffs := NewFaultFS(nil)
	s, _ := openStore(t, append(opts, WithFS(ffs))...)
	return s, ffs
}

// wantIntact checks that a failed checkpoint 2 left checkpoint 1 as the
// latest, and nothing of itself, as a new process would see it.
func wantIntact(t *testing.T, s *Store) {
	t.Helper()
	s2, err := Open(s.Dir(), WithLogger(s.cfg.logger))
	if err != nil {
		t.Fatal(err)
	}
	checkContents(t, wantLatest(t, s2, 1))
	if des, _ := os.ReadDir(s.Dir()); len(des) != 1 {
		t.Fatalf("directory holds %v, want chk 1 only", des)
	}
}

func TestDiskFull(t *testing.T) {
	stateSize := int64(len(content(2, 0)) + len(content(2, 1)) + len(content(2, 2)))
	for _, tc := range []struct {
		name  string
		space int64
		path  string // the file that fills the disk
	}{
		{"state file", 50000, "window.0"},
		{"metadata", stateSize + 100, metadataTmp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ffs := openFaultStore(t)
			mustWrite(t, s, 1)
			ffs.SetSpace(tc.space)
			_, err := writeCheckpoint(s, 2, KindCheckpoint)
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("checkpoint on a full disk: %v, want ENOSPC", err)
			}
			path := filepath.Join(chkPath(s, 2)+inProgressSuffix, tc.path)
			wantContains(t, "error", err.Error(), path)
			ffs.Reset()
			wantIntact(t, s)
			mustWrite(t, s, 3)
		})
	}
}

// TestDiskFullCommit is what a caller that ignores write errors gets: Commit
// refuses a checkpoint with a failed file.
func TestDiskFullCommit(t *testing.T) {
	s, ffs := openFaultStore(t)
	mustWrite(t, s, 1)
	p, err := s.Begin(2, KindCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	w, err := p.Create("big")
	if err != nil {
		t.Fatal(err)
	}
	ffs.SetSpace(1000)
	for range 100 {
		w.Write(make([]byte, 1000))
	}
	w.Close()
	_, err = p.Commit(Metadata{MaxParallelism: 1})
	path := filepath.Join(p.dir, "big")
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Commit: %v", err)
	}
	wantContains(t, "error", err.Error(), "file big failed", path, "no space left on device")
	ffs.Reset()
	wantIntact(t, s)
}

func TestMetadataRenameFails(t *testing.T) {
	s, ffs := openFaultStore(t)
	mustWrite(t, s, 1)
	ffs.Inject(Fault{Op: OpRename, Path: metadataTmp, Err: syscall.EROFS})
	_, err := writeCheckpoint(s, 2, KindCheckpoint)
	if !errors.Is(err, syscall.EROFS) {
		t.Fatalf("Commit: %v", err)
	}
	tmp := filepath.Join(chkPath(s, 2)+inProgressSuffix, metadataTmp)
	wantContains(t, "error", err.Error(), tmp, filepath.Join(filepath.Dir(tmp), metadataName))
	wantLatest(t, s, 1)
	wantIntact(t, s)
}

func TestParentSyncFails(t *testing.T) {
	s, ffs := openFaultStore(t)
	mustWrite(t, s, 1)
	// The second SyncDir of a commit is the parent's.
	ffs.Inject(Fault{Op: OpSyncDir, N: 2})
	_, err := writeCheckpoint(s, 2, KindCheckpoint)
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("Commit: %v", err)
	}
	wantContains(t, "error", err.Error(), s.Dir()+": input/output error")
	wantIntact(t, s)
}

// TestEveryFault fails each operation of a checkpoint in turn, and checks
// that either the checkpoint completed, or it failed with an error naming a
// path and left the previous one as the latest. With Retain(1), a
// successful commit removes the previous checkpoint, so retention's
// operations are failed too.
func TestEveryFault(t *testing.T) {
	ops := []Op{OpCreate, OpOpen, OpRead, OpWrite, OpSync, OpClose, OpRename, OpRemove,
		OpRemoveAll, OpMkdirAll, OpReadDir, OpStat, OpSyncDir}
	for _, op := range ops {
		t.Run(op.String(), func(t *testing.T) {
			fired := 0
			for n := 1; ; n++ {
				if n > 200 {
					t.Fatal("the fault keeps firing")
				}
				s, ffs := openFaultStore(t, Retain(1))
				mustWrite(t, s, 1)
				ffs.Inject(Fault{Op: op, N: n})
				_, err := writeCheckpoint(s, 2, KindCheckpoint)
				injected := ffs.Injected()
				ffs.Reset()
				if injected == 0 {
					if err != nil {
						t.Fatalf("no fault, yet: %v", err)
					}
					break
				}
				fired++
				if err == nil {
					// The fault hit after the commit point (retention).
					checkContents(t, wantLatest(t, s, 2))
					continue
				}
				if !errors.Is(err, syscall.EIO) || !strings.Contains(err.Error(), s.Dir()) {
					t.Fatalf("fault %d: %v, want EIO with a path", n, err)
				}
				wantIntact(t, s)
			}
			if fired == 0 && op != OpRemove { // Remove is unused
				t.Fatalf("%v: no fault fired", op)
			}
			t.Logf("%v: %d faults", op, fired)
		})
	}
}

func TestFaultFS(t *testing.T) {
	dir := t.TempDir()
	ffs := NewFaultFS(nil)
	ffs.Inject(Fault{Op: OpCreate, Path: "b", N: 2})
	for i, name := range []string{"a", "b1", "b2", "b3"} {
		f, err := ffs.Create(filepath.Join(dir, name))
		var pe *fs.PathError
		if i == 2 {
			if !errors.As(err, &pe) || pe.Path != filepath.Join(dir, "b2") || !errors.Is(err, syscall.EIO) {
				t.Fatalf("create b2: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		f.Close()
	}
	if got := ffs.Injected(); got != 1 {
		t.Fatalf("Injected: %d", got)
	}

	f, err := ffs.Create(filepath.Join(dir, "full"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ffs.SetSpace(10)
	if n, err := f.Write([]byte("0123456")); n != 7 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if n, err := f.Write([]byte("789abc")); n != 3 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write past the end of the disk: %d, %v", n, err)
	}
	if n, err := f.Write([]byte("x")); n != 0 || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write on a full disk: %d, %v", n, err)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "full")); string(data) != "0123456789" {
		t.Fatalf("file holds %q", data)
	}

	ffs.Inject(Fault{Op: OpRename, Path: "a", Err: syscall.EXDEV})
	err = ffs.Rename(filepath.Join(dir, "b1"), filepath.Join(dir, "a"))
	var le *os.LinkError
	if !errors.As(err, &le) || !errors.Is(err, syscall.EXDEV) {
		t.Fatalf("rename: %v", err)
	}
	if err := ffs.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "c")); err == nil {
		t.Fatal("a fault with N == 0 fired once only")
	}
	for op := range OpSyncDir + 2 {
		if op.String() == "" {
			t.Errorf("Op(%d) has no name", op)
		}
	}
}
