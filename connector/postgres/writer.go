package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
)

// writer is the part the Upsert and Transactional writers share: the
// connection, the rows buffered since the last flush, a sticky error (a
// writer that failed refuses further work until the job restarts it) and
// Close.
type writer struct {
	mu     sync.Mutex // the sink's task calls one method at a time; the lock makes misuse safe
	conn   *pgx.Conn
	buf    [][]any
	err    error // sticky
	closed bool
}

// Close implements weir.SinkWriter. It does not flush: Close also ends a
// failed attempt, whose buffered rows the next attempt replays (a job that
// succeeds flushed at its final checkpoint, or without checkpointing at
// the end of the input); rows a Transactional writer staged that no
// committable covers stay for the next Recover.
func (w *writer) Close(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	w.buf = nil
	return closeConn(ctx, w.conn)
}

// usable is the error that stops the writer, if any.
func (w *writer) usable() error {
	if w.closed {
		return errors.New("postgres: writer used after Close")
	}
	return w.err
}

// fail makes err sticky and returns it.
func (w *writer) fail(err error) error {
	w.err = err
	return err
}
