package wlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

const lockFile = ".lock"

// LockedError is returned when a partition already has a writer, in this
// process or another.
type LockedError struct {
	Topic     string
	Partition int
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("wlog: partition %d of topic %q is locked by another writer", e.Partition, e.Topic)
}

// ErrLocked matches a *LockedError with errors.Is.
var ErrLocked = errors.New("wlog: partition locked by another writer")

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// lockDir takes an exclusive flock on dir/.lock without waiting. flock
// locks belong to the open file description, so two writers in one process
// exclude each other too, and the kernel releases the lock when the
// process dies, however it dies.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, errLockHeld
		}
		return nil, err
	}
	return f, nil
}

var errLockHeld = errors.New("lock held")
