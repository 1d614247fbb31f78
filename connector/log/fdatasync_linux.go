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
