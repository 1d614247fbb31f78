package wlog

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// writeAt2 writes a and then b at off of f with one pwritev(2) (more only
// if the kernel writes less), so that a batch whose header and records
// are in two buffers is not copied into one.
func writeAt2(f *os.File, a, b []byte, off int64) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	iov := [][]byte{a, b}
	for len(iov) > 0 {
		var n int
		var werr error
		if err := rc.Write(func(fd uintptr) bool {
			for {
				n, werr = unix.Pwritev(int(fd), iov, off)
				if werr != unix.EINTR {
					return true
				}
			}
		}); err != nil {
			return err
		}
		if werr != nil {
			return &os.PathError{Op: "pwritev", Path: f.Name(), Err: werr}
		}
		if n == 0 {
			return io.ErrShortWrite
		}
		off += int64(n)
		for n > 0 && len(iov) > 0 {
			if n >= len(iov[0]) {
				n -= len(iov[0])
				iov = iov[1:]
			} else {
				iov[0] = iov[0][n:]
				n = 0
			}
		}
		for len(iov) > 0 && len(iov[0]) == 0 {
			iov = iov[1:]
		}
	}
	return nil
}
