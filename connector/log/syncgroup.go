package wlog

import (
	"errors"
	"os"
	"sync"
)

// A SyncGroup makes the appends of several writers durable together. An
// append given a group (AppendKafkaTo) writes its batch and, where the
// writer's policy is SyncEveryBatch, starts its segment's fdatasync in
// the group instead of waiting for it; Wait waits for every fsync the
// group started and records each writer's new recovery point.
//
// It is for a server that appends to many partitions for one request (a
// Kafka broker's produce of eight partitions, say): the fsyncs then run
// at the same time in the kernel, and the file system commits them
// together. On Linux they are asynchronous fdatasyncs (IOCB_CMD_FDSYNC
// through io_submit(2)), which cost no thread each; a goroutine per fsync,
// as elsewhere, would hold one of Go's Ps while it blocks until the
// runtime takes it back (up to 10 ms later), so with GOMAXPROCS 2 only two
// fsyncs would be in flight. Where asynchronous fsync is refused (another
// kernel, a seccomp filter), the group falls back to goroutines.
//
// A group is used by one caller at a time for one round of appends and
// Wait (AppendKafkaTo may be called from several goroutines in a round);
// it may be reused for the next round. Close releases its kernel
// context.
type SyncGroup struct {
	mu      sync.Mutex
	pending []syncToken
	aio     *aioContext // nil until needed, or where unavailable
	noAIO   bool        // io_setup failed: goroutines only
	wg      sync.WaitGroup
}

// A syncToken is one started fsync: the writer, the segment and how much
// of it the fsync makes durable.
type syncToken struct {
	w         *Writer
	f         *os.File
	base, pos int64
	next      int64
	aio       bool // started with io_submit (else a goroutine)
	err       error
	done      bool
}

// start starts the fsync of w's active segment as it is now. w.mu is
// held.
func (g *SyncGroup) start(w *Writer) {
	t := syncToken{w: w, f: w.mu.f, base: w.mu.base, pos: w.mu.pos, next: w.mu.next}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aio == nil && !g.noAIO {
		a, err := newAIOContext(aioEvents)
		if err != nil {
			g.noAIO = true
		} else {
			g.aio = a
		}
	}
	if g.aio != nil {
		if err := g.aio.submitFdatasync(t.f, uint64(len(g.pending))); err == nil {
			t.aio = true
			g.pending = append(g.pending, t)
			return
		}
		// Refused (a file system without asynchronous fsync): this one
		// in a goroutine.
	}
	i, f := len(g.pending), t.f
	g.pending = append(g.pending, t)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		err := groupFdatasync(f)
		g.mu.Lock() // g.pending's array may have grown meanwhile
		g.pending[i].err, g.pending[i].done = err, true
		g.mu.Unlock()
	}()
}

// aioEvents is the number of fsyncs a group may have in flight at once
// through its kernel context; more go to goroutines (a variable for a
// test).
var aioEvents = 256

// Wait waits for the fsyncs started since the last Wait and records each
// writer's recovery point. A failed fsync fails its writer, as a failed
// fsync in an append does (the writer then refuses appends: Err); Wait
// returns the first such error, naming the partition.
func (g *SyncGroup) Wait() error {
	g.mu.Lock()
	pending := g.pending
	aio := g.aio
	inFlight := 0
	for i := range pending {
		if pending[i].aio {
			inFlight++
		}
	}
	g.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	var waitErr error
	if inFlight > 0 {
		waitErr = aio.wait(inFlight, func(tag uint64, err error) {
			if tag < uint64(len(pending)) {
				pending[tag].err, pending[tag].done = err, true
			}
		})
		if waitErr != nil {
			// Completions may still come: a new context for the next
			// round, so that they are not taken for its own.
			g.mu.Lock()
			g.aio.close() // waits for what is in flight
			g.aio = nil
			g.mu.Unlock()
		}
	}
	g.wg.Wait() // the goroutines wrote their results into pending
	g.mu.Lock()
	g.pending = g.pending[:0]
	g.mu.Unlock()
	var first error
	for _, t := range pending {
		err := t.err
		if !t.done {
			err = waitErr
		}
		if err := t.w.synced(t, err); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Close releases the group's kernel context. Call it after Wait.
func (g *SyncGroup) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.aio == nil {
		return nil
	}
	err := g.aio.close()
	g.aio = nil
	return err
}

// synced records the end of an fsync the group started: the segment is
// durable up to t.pos. A failed fsync fails the writer (its pages may be
// lost: the fsync cannot be retried).
func (w *Writer) synced(t syncToken, err error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.closed || w.mu.base != t.base {
		// Closed or rolled since: Close and the roll synced the segment
		// themselves (or failed the writer).
		return w.mu.err
	}
	if err != nil {
		if w.mu.err == nil {
			return w.failLocked(err)
		}
		return w.mu.err
	}
	if w.mu.err != nil {
		return w.mu.err
	}
	if w.mu.pos == t.pos {
		w.mu.dirty = false
	}
	if t.pos > w.mu.rpPos {
		w.writeRecoveryAtLocked(t.pos, t.next)
	}
	return nil
}

// Err returns the error that makes w refuse appends (a failed write or
// fsync, ErrClosed), or nil.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.usableLocked()
}

var errAIOUnavailable = errors.New("wlog: asynchronous fsync unavailable")

// groupFdatasync is the fsync of a SyncGroup without asynchronous fsync
// (a variable for the tests of failed fsyncs).
var groupFdatasync = fdatasyncHeld
