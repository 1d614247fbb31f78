//go:build unix

package statedir

import (
	"errors"
	"os"
	"syscall"
)

// lockForLife creates path and takes an exclusive flock on it that lasts
// until the process exits (the file is never closed).
func lockForLife(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return err
	}
	return nil // f stays open: the lock is the process's
}

// lockIsFree reports whether no process holds path's lock (a missing file
// counts as free: the process died before locking it).
func lockIsFree(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return false, nil
	}
	return true, nil
}
