//go:build unix

package statedir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDeadProcessStateDirsAreRemoved(t *testing.T) {
	root := t.TempDir()
	// A directory left by a killed process: its LOCK is free.
	dead := filepath.Join(root, "proc-dead")
	if err := os.MkdirAll(filepath.Join(dead, "counter-0-x", "db"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "LOCK"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// One of a live process: its LOCK is held (here by this process,
	// through another open file, which flock treats as another owner).
	live := filepath.Join(root, "proc-live")
	if err := os.MkdirAll(live, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := lockForLife(filepath.Join(live, "LOCK")); err != nil {
		t.Fatal(err)
	}
	// Something that is not weir's is never touched.
	other := filepath.Join(root, "mine")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := ProcessDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{dead: false, live: true, other: true, dir: true} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s: exists = %v, want %v", path, err == nil, want)
		}
	}
	if free, err := lockIsFree(filepath.Join(dir, "LOCK")); err != nil || free {
		t.Fatalf("this process's LOCK: free = %v, %v; want held", free, err)
	}
	if again, _ := ProcessDir(root); again != dir {
		t.Fatalf("second call: %s, want the same %s", again, dir)
	}
}
