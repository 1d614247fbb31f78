//go:build linux && (amd64 || arm64)

package wlog

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// aioContext is a Linux AIO context (io_setup(2)) for asynchronous
// fdatasyncs (IOCB_CMD_FDSYNC, generic since Linux 4.18).
type aioContext struct {
	id uintptr
}

// iocb is struct iocb of linux/aio_abi.h on a little-endian machine.
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   int32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const iocbCmdFdsync = 3

func newAIOContext(n int) (*aioContext, error) {
	var id uintptr
	if _, _, e := syscall.Syscall(unix.SYS_IO_SETUP, uintptr(n), uintptr(unsafe.Pointer(&id)), 0); e != 0 {
		return nil, fmt.Errorf("%w: io_setup: %v", errAIOUnavailable, e)
	}
	return &aioContext{id: id}, nil
}

// submitFdatasync starts an fdatasync of f whose completion carries tag.
func (a *aioContext) submitFdatasync(f *os.File, tag uint64) error {
	cb := iocb{data: tag, opcode: iocbCmdFdsync, fildes: uint32(f.Fd())}
	cbs := [1]*iocb{&cb}
	for {
		n, _, e := syscall.Syscall(unix.SYS_IO_SUBMIT, a.id, 1, uintptr(unsafe.Pointer(&cbs[0])))
		switch {
		case e == syscall.EINTR:
			continue
		case e == syscall.EAGAIN:
			// The context's ring is full (more fsyncs in flight than
			// it has events): this one goes to a goroutine.
			return fmt.Errorf("%w: io_submit: %v", errAIOUnavailable, e)
		case e != 0:
			return fmt.Errorf("%w: io_submit: %v", errAIOUnavailable, e)
		case n != 1:
			return fmt.Errorf("%w: io_submit took %d of 1", errAIOUnavailable, n)
		}
		return nil
	}
}

// wait waits for n completions, calling done with each one's tag and
// result.
func (a *aioContext) wait(n int, done func(tag uint64, err error)) error {
	var evs [16]ioEvent
	for n > 0 {
		m := min(n, len(evs))
		got, _, e := syscall.Syscall6(unix.SYS_IO_GETEVENTS, a.id, uintptr(m), uintptr(m), uintptr(unsafe.Pointer(&evs[0])), 0, 0)
		if e == syscall.EINTR {
			continue
		}
		if e != 0 {
			return fmt.Errorf("wlog: io_getevents: %w", e)
		}
		for _, ev := range evs[:got] {
			var err error
			if ev.res < 0 {
				err = syscall.Errno(-ev.res)
			}
			done(ev.data, err)
		}
		n -= int(got)
	}
	return nil
}

func (a *aioContext) close() error {
	if _, _, e := syscall.Syscall(unix.SYS_IO_DESTROY, a.id, 0, 0); e != 0 {
		return fmt.Errorf("wlog: io_destroy: %w", e)
	}
	return nil
}
