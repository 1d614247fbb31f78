package postgres

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// UpsertSink is the idempotent upsert sink; see Upsert.
type UpsertSink[T any] struct {
	dsn   string
	table Table
	row   func(T) ([]any, int64)
	kind  func(T) weir.ChangeKind // nil: every record is an upsert (Upsert)
	cfg   config
	err   error // configuration error, returned by OpenWriter

	applied, skipped atomic.Int64
}

// UpsertStats counts the rows an Upsert sink sent to PostgreSQL.
type UpsertStats struct {
	// Applied rows were inserted or updated a row, or deleted one
	// (UpsertChanges).
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

// UpsertChanges is Upsert for a changelog (weir.Change values, as
// AggregateChanges, Fold, Table.Rows and the CDC source emit): Insert and
// UpdateAfter upsert their row, Delete deletes the row of its key, and an
// UpdateBefore deletes it unless an Insert or UpdateAfter of the same key
// follows before the next checkpoint (so the usual UpdateBefore/UpdateAfter
// pair is one upsert, and a row that leaves its key for good is deleted).
// row gives the values and the position of the change's value, as for
// Upsert. Positions keep replays idempotent: an upsert applies when the
// table holds an older position for the key (or no row), a delete when it
// holds the retracted position or an older one, so a replayed retraction of
// a row that a later change already replaced does nothing. Within one flush
// the last change of each key, in arrival order, is the one applied.
//
// Rows are applied at every checkpoint barrier (and every FlushRows rows,
// holding back an UpdateBefore whose key has no later change in the
// buffer), before the checkpoint is acknowledged: after a failure the job
// replays the changes since the last checkpoint, in the same order, and
// the table ends as if each had been applied once.
func UpsertChanges[T any](dsn string, t Table, row func(T) (values []any, position int64), opts ...Option) *UpsertSink[weir.Change[T]] {
	var r func(weir.Change[T]) ([]any, int64)
	if row != nil {
		r = func(c weir.Change[T]) ([]any, int64) { return row(c.Value) }
	}
	s := Upsert(dsn, t, r, opts...)
	s.kind = func(c weir.Change[T]) weir.ChangeKind { return c.Kind }
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
	// rows go at commit. A changelog adds the operation and the arrival
	// order.
	tcols := cols
	extra := ""
	if s.kind != nil {
		tcols = append(append([]string{}, cols...), "weir_op", "weir_seq")
		extra = ", 0::smallint AS weir_op, 0::bigint AS weir_seq"
	}
	if _, err := conn.Exec(ctx, "CREATE TEMP TABLE weir_upsert ON COMMIT DELETE ROWS AS SELECT "+quoteAll("", cols)+extra+" FROM "+t.quoted+" WITH NO DATA"); err != nil {
		return nil, fmt.Errorf("postgres: create temporary table like %s: %w", t.name, err)
	}
	pos := pgx.Identifier{s.cfg.position}.Sanitize()
	keys := quoteAll("", s.table.Key)
	set := setExcluded(append(append([]string{}, s.table.Columns...), s.cfg.position))
	w := &upsertWriter[T]{s: s, writer: writer{conn: conn}, subtask: subtask, cols: tcols, width: len(s.table.Key) + len(s.table.Columns)}
	if s.kind != nil {
		// The last change of each key in arrival order; deletes where the
		// table holds the retracted position or an older one, upserts
		// where it holds an older one.
		var match []string
		for _, k := range s.table.Key {
			q := pgx.Identifier{k}.Sanitize()
			match = append(match, "t."+q+" = l."+q)
		}
		w.upsert = "WITH l AS (SELECT DISTINCT ON (" + keys + ") * FROM pg_temp.weir_upsert ORDER BY " + keys + ", weir_seq DESC), " +
			"d AS (DELETE FROM " + t.quoted + " AS t USING l WHERE l.weir_op = 1 AND " + strings.Join(match, " AND ") + " AND t." + pos + " <= l." + pos + " RETURNING 1), " +
			"i AS (INSERT INTO " + t.quoted + " AS t (" + quoteAll("", cols) + ") SELECT " + quoteAll("", cols) + " FROM l WHERE l.weir_op = 0" +
			" ON CONFLICT (" + keys + ") DO UPDATE SET " + set + " WHERE t." + pos + " < excluded." + pos + " RETURNING 1) " +
			"SELECT (SELECT count(*) FROM d) + (SELECT count(*) FROM i)"
		return w, nil
	}
	// DISTINCT ON keeps one row per key (ON CONFLICT cannot update a row
	// twice in one statement): the one with the highest position, which
	// is what applying the rows one by one would leave.
	w.upsert = "INSERT INTO " + t.quoted + " AS t (" + quoteAll("", cols) + ") SELECT DISTINCT ON (" + keys + ") " + quoteAll("", cols) +
		" FROM pg_temp.weir_upsert ORDER BY " + keys + ", " + pos + " DESC ON CONFLICT (" + keys + ") DO UPDATE SET " + set +
		" WHERE t." + pos + " < excluded." + pos
	return w, nil
}

type upsertWriter[T any] struct {
	s       *UpsertSink[T]
	subtask int
	cols    []string // key, columns, position (and weir_op, weir_seq for changes)
	upsert  string
	width   int               // values a row function returns
	seq     int64             // arrival order of changes
	kinds   []weir.ChangeKind // of the buffered rows, for changes

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
		r := make([]any, len(w.cols))
		copy(r, vals)
		r[w.width] = pos
		if w.s.kind != nil {
			k := w.s.kind(it)
			op := int16(0)
			if k == weir.Delete || k == weir.UpdateBefore {
				op = 1
			}
			r[w.width+1], r[w.width+2] = op, w.seq
			w.seq++
			w.kinds = append(w.kinds, k)
		}
		w.buf = append(w.buf, r)
		if len(w.buf) >= w.s.cfg.flushRows {
			if err := w.flushHolding(ctx); err != nil {
				return w.fail(err)
			}
		}
	}
	return nil
}

// flushHolding is the flush of a full buffer between checkpoints: an
// UpdateBefore whose key has no later change in the buffer stays buffered,
// as its UpdateAfter may come with the next records.
func (w *upsertWriter[T]) flushHolding(ctx context.Context) error {
	if w.s.kind == nil {
		return w.flush(ctx)
	}
	var held [][]any
	var heldKinds []weir.ChangeKind
	seen := map[string]bool{}
	keep := w.buf[:0]
	for i := len(w.buf) - 1; i >= 0; i-- {
		key := fmt.Sprint(w.buf[i][:len(w.s.table.Key)])
		if w.kinds[i] == weir.UpdateBefore && !seen[key] {
			held = append(held, w.buf[i])
			heldKinds = append(heldKinds, w.kinds[i])
		}
		seen[key] = true
	}
	if len(held) == 0 {
		return w.flush(ctx)
	}
	isHeld := map[*any]bool{}
	for _, h := range held {
		isHeld[&h[0]] = true
	}
	for _, r := range w.buf {
		if !isHeld[&r[0]] {
			keep = append(keep, r)
		}
	}
	w.buf = keep
	if err := w.flush(ctx); err != nil {
		return err
	}
	for i := len(held) - 1; i >= 0; i-- {
		w.buf = append(w.buf, held[i])
		w.kinds = append(w.kinds, heldKinds[i])
	}
	return nil
}

// flush applies the buffered rows in one transaction.
func (w *upsertWriter[T]) flush(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	var applied int64
	err := pgx.BeginFunc(ctx, w.conn, func(tx pgx.Tx) error {
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"pg_temp", "weir_upsert"}, w.cols, pgx.CopyFromRows(w.buf)); err != nil {
			return err
		}
		if w.s.kind != nil {
			return tx.QueryRow(ctx, w.upsert).Scan(&applied)
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
	w.kinds = w.kinds[:0]
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
