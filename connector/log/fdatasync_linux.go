package wlog

import (
	"os"
	"syscall"
)

// fdatasync makes the file's data durable without its metadata's times
// (fdatasync(2)), retrying when a signal interrupts it.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// fdatasyncHeld is fdatasync for a file another goroutine may close
// meanwhile (a roll): the descriptor stays open until it returns, and a
// file already closed is os.ErrClosed.
func fdatasyncHeld(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	cerr := rc.Control(func(fd uintptr) {
		for {
			err = syscall.Fdatasync(int(fd))
			if err != syscall.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return cerr
	}
	return err
}
