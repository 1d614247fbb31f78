// Package statedir gives each process a directory of its own in a job's
// state dir, for the working copies of its Pebble backends, and removes
// the directories of processes that are gone.
package statedir

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// The working state of a process's Pebble backends lives under a directory
// of its own in the state dir, proc-*, holding a LOCK file that the process
// keeps locked (flock) until it exits. A process that is killed leaves its
// directory behind; the next process to use the same state dir finds its
// LOCK free and removes it, so restarts after crashes do not fill the disk
// with dead working copies (their state is in the checkpoints, not there).

var procDirs struct {
	sync.Mutex
	m map[string]string // state dir -> this process's directory in it
}

// ProcessDir returns this process's directory in the state dir root,
// creating and locking it on first use, after removing the directories of
// processes that are gone.
func ProcessDir(root string) (string, error) {
	procDirs.Lock()
	defer procDirs.Unlock()
	if d, ok := procDirs.m[root]; ok {
		return d, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", fmt.Errorf("pebble state dir: %w", err)
	}
	removeDeadStateDirs(root)
	dir, err := os.MkdirTemp(root, "proc-")
	if err != nil {
		return "", fmt.Errorf("pebble state dir: %w", err)
	}
	if err := lockForLife(filepath.Join(dir, "LOCK")); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("pebble state dir: %w", err)
	}
	if procDirs.m == nil {
		procDirs.m = map[string]string{}
	}
	procDirs.m[root] = dir
	return dir, nil
}

// removeDeadStateDirs removes the proc-* directories of root whose LOCK no
// process holds. Errors are ignored: what cannot be removed now is tried
// again by the next process.
func removeDeadStateDirs(root string) {
	dirs, _ := filepath.Glob(filepath.Join(root, "proc-*"))
	for _, d := range dirs {
		if free, err := lockIsFree(filepath.Join(d, "LOCK")); err == nil && free {
			os.RemoveAll(d)
		}
	}
}
