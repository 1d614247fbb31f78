package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// UpsertSink is the idempotent upsert sink; see Upsert.
type UpsertSink[T any] struct {
	dsn   string
	table Table
	row   func(T) ([]any, int64)
	cfg   config
	err   error // configuration error, returned by OpenWriter

	applied, skipped atomic.Int64
}

// UpsertStats counts the rows an Upsert sink sent to PostgreSQL.
type UpsertStats struct {
	// Applied rows were inserted or updated a row.
	Applied int64
	// Skipped rows had a position not above the one the table holds for
	// their key (replays), or were superseded by a row with a higher
	// position for the same key in the same flush.
	Skipped int64
}

// Upsert returns a sink that writes each record as an idempotent upsert of
// one row of table t (the "store the input's position with the write"
// technique). row returns the record's values, those of t.Key then those of
// t.Columns, and its position: a number that strictly increases from one
// update of a key to the next (a window's end, an event's sequence number,
// a source offset). The table stores the position of the last update
// applied in PositionColumn, and an update is applied only if its position
// is greater:
//
//	INSERT INTO t AS t (key..., col..., pos) ...
//	ON CONFLICT (key...) DO UPDATE SET col = excluded.col, ..., pos = excluded.pos
//	WHERE t.pos < excluded.pos
//
// so writing a row again with the same position (a replay after a restart)
// changes nothing, whatever it holds, and a late replay of an older update
// never overwrites a newer one. An equal position counts as the same
// update: two distinct updates of a key must have distinct positions.
//
// Delivery is at least once (after a failure the job replays the records
// since the last checkpoint), the writes are idempotent, so the table's
// content is effectively exactly once, provided processing is
// deterministic (a replayed record has the values it had the first time)
// and no other process writes the table. Rows are visible as soon as they
// are flushed: every FlushRows rows, and at each checkpoint barrier, before
// the checkpoint is acknowledged (so no completed checkpoint covers rows
// that are not in the table). Rows buffered when a job fails are not
// written; the job replays them.
//
// Each writer (sink subtask) has its own connection. A flush copies the
// buffered rows into a temporary table and upserts them in one statement
// (keeping, per key, the row with the highest position), in one
// transaction. The table must exist, with the columns, a bigint (or
// integer, or numeric) position column, and a unique index on exactly the
// Key columns; OpenWriter checks and fails with an error that names what
// is missing. A lost connection fails the write; the job's restart policy
// retries.
func Upsert[T any](dsn string, t Table, row func(T) (values []any, position int64), opts ...Option) *UpsertSink[T] {
	s := &UpsertSink[T]{dsn: dsn, table: t, row: row}
	s.cfg, s.err = newConfig(t, opts)
	switch {
	case s.err != nil:
	case len(t.Key) == 0:
		s.err = fmt.Errorf("postgres: Upsert to %s: no Key columns", t.Name)
	case slices.Contains(t.Key, s.cfg.position) || slices.Contains(t.Columns, s.cfg.position):
		s.err = fmt.Errorf("postgres: Upsert to %s: the position column %q is also in Key or Columns", t.Name, s.cfg.position)
	case row == nil:
		s.err = fmt.Errorf("postgres: Upsert to %s: no row function", t.Name)
	}
	return s
}

// Stats returns what the sink's writers sent so far (all writers, all
// attempts of the job in this process).
func (s *UpsertSink[T]) Stats() UpsertStats {
	return UpsertStats{Applied: s.applied.Load(), Skipped: s.skipped.Load()}
}

// positionTypes are the column types a position fits in.
var positionTypes = []string{"bigint", "numeric", "integer"}

// OpenWriter implements weir.Sink. The writer is a weir.FlushingWriter: it
// flushes at every checkpoint barrier (and at the end of a bounded input
// without checkpointing).
func (s *UpsertSink[T]) OpenWriter(ctx context.Context, subtask, parallelism int) (weir.SinkWriter[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	conn, err := connect(ctx, s.dsn, "weir "+s.cfg.name+" "+strconv.Itoa(subtask))
	if err != nil {
		return nil, fmt.Errorf("%w (sink %s, subtask %d)", err, s.cfg.name, subtask)
	}
	w, err := s.open(ctx, conn, subtask)
	if err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	return w, nil
}

func (s *UpsertSink[T]) open(ctx context.Context, conn *pgx.Conn, subtask int) (*upsertWriter[T], error) {
	t, err := describe(ctx, conn, s.table.Name)
	if err != nil {
		return nil, err
	}
	cols := append(append(append([]string{}, s.table.Key...), s.table.Columns...), s.cfg.position)
	if err := t.need(cols...); err != nil {
		return nil, err
	}
	if typ := t.columns[s.cfg.position]; !slices.Contains(positionTypes, typ) {
		return nil, fmt.Errorf("postgres: position column %q of table %s is %s, want bigint", s.cfg.position, t.name, typ)
	}
	if err := t.needUnique(s.table.Key); err != nil {
		return nil, err
	}
	// A temporary table per connection receives each flush by COPY; its
	// rows go at commit.
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE weir_upsert ON COMMIT DELETE ROWS AS SELECT "+quoteAll("", cols)+" FROM "+t.quoted+" WITH NO DATA"); err != nil {
		return nil, fmt.Errorf("postgres: create temporary table like %s: %w", t.name, err)
	}
	pos := pgx.Identifier{s.cfg.position}.Sanitize()
	keys := quoteAll("", s.table.Key)
	set := setExcluded(append(append([]string{}, s.table.Columns...), s.cfg.position))
	// DISTINCT ON keeps one row per key (ON CONFLICT cannot update a row
	// twice in one statement): the one with the highest position, which
	// is what applying the rows one by one would leave.
	upsert := "INSERT INTO " + t.quoted + " AS t (" + quoteAll("", cols) + ") SELECT DISTINCT ON (" + keys + ") " + quoteAll("", cols) +
		" FROM pg_temp.weir_upsert ORDER BY " + keys + ", " + pos + " DESC ON CONFLICT (" + keys + ") DO UPDATE SET " + set +
		" WHERE t." + pos + " < excluded." + pos
	return &upsertWriter[T]{s: s, writer: writer{conn: conn}, subtask: subtask, cols: cols, upsert: upsert, width: len(s.table.Key) + len(s.table.Columns)}, nil
}

type upsertWriter[T any] struct {
	s       *UpsertSink[T]
	subtask int
	cols    []string // key, columns, position
	upsert  string
	width   int // values a row function returns

	writer
}

var _ weir.FlushingWriter = (*upsertWriter[int])(nil)

// Write implements weir.SinkWriter.
func (w *upsertWriter[T]) Write(ctx context.Context, items []T) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	for _, it := range items {
		vals, pos := w.s.row(it)
		if len(vals) != w.width {
			return w.fail(fmt.Errorf("postgres: Upsert to %s: the row function returned %d values, want %d (%s)",
				w.s.table.Name, len(vals), w.width, quoteAll("", w.cols[:w.width])))
		}
		r := make([]any, w.width+1)
		copy(r, vals)
		r[w.width] = pos
		w.buf = append(w.buf, r)
		if len(w.buf) >= w.s.cfg.flushRows {
			if err := w.flush(ctx); err != nil {
				return w.fail(err)
			}
		}
	}
	return nil
}

// flush upserts the buffered rows in one transaction.
func (w *upsertWriter[T]) flush(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	var applied int64
	err := pgx.BeginFunc(ctx, w.conn, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", "weir_upsert"}, w.cols, pgx.CopyFromRows(w.buf)); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, w.upsert)
		applied = tag.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: upsert %d rows into %s (sink %s, subtask %d): %w", len(w.buf), w.s.table.Name, w.s.cfg.name, w.subtask, err)
	}
	w.s.applied.Add(applied)
	w.s.skipped.Add(int64(len(w.buf)) - applied)
	clear(w.buf)
	w.buf = w.buf[:0]
	return nil
}

// Flush implements weir.FlushingWriter: the checkpoint then covers only
// rows that are in the table.
func (w *upsertWriter[T]) Flush(ctx context.Context, _ int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.flush(ctx); err != nil {
		return w.fail(err)
	}
	return nil
}

// closeConn closes a connection, politely if ctx allows (a cancelled
// context closes the socket at once).
func closeConn(ctx context.Context, conn *pgx.Conn) error {
	if conn == nil {
		return nil
	}
	if ctx.Err() != nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	conn.Close(ctx) // its error says the server was gone: nothing left to release
	return nil
}
