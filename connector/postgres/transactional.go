package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
)

// closeTimeout bounds the goodbye to the server when a connection closes.
const closeTimeout = 5 * time.Second

// TxSink is the transactional sink; see Transactional.
type TxSink[T any] struct {
	dsn   string
	table Table
	row   func(T) []any
	cfg   config
	err   error // configuration error, returned by OpenWriter

	written, staged, committed, commits, skipped atomic.Int64
}

// TxStats counts what a Transactional sink did.
type TxStats struct {
	// Written rows were given to the writers; those written after the last
	// checkpoint of a failed attempt are not committed (the job replays
	// them).
	Written int64
	// Staged rows were copied into the staging table.
	Staged int64
	// Committed rows were moved to the target table, by Commits commits.
	Committed, Commits int64
	// SkippedCommits found their committable committed before (a commit
	// repeated after a restore).
	SkippedCommits int64
}

// Transactional returns a two-phase-commit sink (a weir.CommittingSink)
// that writes the rows of each checkpoint to table t in one transaction
// when the checkpoint completes, and records the commit in a bookkeeping
// table in the same transaction, so that a commit repeated after a crash
// is skipped. row returns the values of a record's columns, those of t.Key
// then those of t.Columns. Without a Key the sink appends rows; with a Key
// a row replaces the row with the same key (the last one written wins when
// a checkpoint has several), which needs a unique index on exactly the Key
// columns.
//
// # Staging
//
// Rows wait for their checkpoint to complete in PostgreSQL, not in the
// checkpoint: each writer (sink subtask) buffers up to FlushRows rows and
// copies them (COPY) into the staging table, tagged with the sink's name,
// the subtask, the writer's random id and a sequence number. At the
// checkpoint barrier the writer copies what it still buffers and returns a
// committable of a few dozen bytes: the writer id and the range of sequence
// numbers staged since the previous barrier. The checkpoint stays small
// however many rows a checkpoint holds, and staged rows survive a crash of
// the job.
//
// # Commit
//
// When the checkpoint is complete, the committer runs, for each
// committable, one transaction that inserts a row in the bookkeeping table
// (sink, subtask, checkpoint, writer, first_seq, rows), moves the
// committable's rows from the staging table to the target table, in the
// order they were written, and deletes them from the staging table. The
// bookkeeping table's primary key (sink, writer, first_seq) makes a repeated
// commit conflict: it is skipped, and counted in TxStats.SkippedCommits. A
// committable whose rows are neither staged nor recorded as committed is an
// error (its output would be lost). A reader sees each subtask's rows of a
// checkpoint appear at once; the subtasks of one checkpoint commit one
// after the other.
//
// The committer opens a connection per Commit (commits run once per
// checkpoint and subtask, and the committer has no Close to release a
// connection it kept).
//
// # Recovery
//
// When a job starts, its restored checkpoint's committables are committed
// first; each writer then deletes from the staging table the rows that
// earlier writers of its subtask left (subtask 0 also those of subtasks
// beyond the current parallelism): no completed checkpoint covers them, and
// the job replays their records.
//
// The bookkeeping row is keyed by the writer's id rather than by the
// checkpoint id because checkpoint ids repeat across runs (a job without
// checkpointing commits once, as checkpoint 0, every time it runs). As
// with any sink, a job restored from a savepoint older than output already
// committed writes that output again; with a Key the rows are replaced,
// without a Key they are appended again.
//
// The staging and bookkeeping tables are created if missing (see
// StagingTable, BookkeepingTable); the target table must exist and have
// the columns, and OpenWriter fails with an error naming what is missing.
// A lost connection fails the write or the commit; the job's restart
// policy retries.
//
// Why not PREPARE TRANSACTION: a prepared transaction per checkpoint would
// avoid writing rows twice, but it needs max_prepared_transactions > 0
// (0 by default, so most servers would refuse), and a prepared transaction
// that a job never commits or rolls back (the job is gone) holds its locks
// and blocks VACUUM until an administrator intervenes. Staged rows are
// plain rows in a plain table.
func Transactional[T any](dsn string, t Table, row func(T) []any, opts ...Option) *TxSink[T] {
	s := &TxSink[T]{dsn: dsn, table: t, row: row}
	s.cfg, s.err = newConfig(t, opts)
	if s.err == nil {
		if _, err := ident(s.cfg.staging); err != nil {
			s.err = fmt.Errorf("%w (the staging table of %s)", err, t.Name)
		} else if _, err := ident(s.cfg.bookkeeping); err != nil {
			s.err = fmt.Errorf("%w (the bookkeeping table)", err)
		} else if row == nil {
			s.err = fmt.Errorf("postgres: Transactional to %s: no row function", t.Name)
		}
	}
	return s
}

// Stats returns what the sink did so far (all writers, all attempts of the
// job in this process).
func (s *TxSink[T]) Stats() TxStats {
	return TxStats{Written: s.written.Load(), Staged: s.staged.Load(), Committed: s.committed.Load(), Commits: s.commits.Load(), SkippedCommits: s.skipped.Load()}
}

func (s *TxSink[T]) columns() []string {
	return append(append([]string{}, s.table.Key...), s.table.Columns...)
}

// Committer implements weir.CommittingSink.
func (s *TxSink[T]) Committer() weir.Committer { return (*txCommitter[T])(s) }

// OpenWriter implements weir.Sink. It returns a weir.CommittingWriter.
func (s *TxSink[T]) OpenWriter(ctx context.Context, subtask, parallelism int) (weir.SinkWriter[T], error) {
	if s.err != nil {
		return nil, s.err
	}
	if subtask < 0 || subtask >= parallelism {
		return nil, fmt.Errorf("postgres: Transactional: subtask %d of %d", subtask, parallelism)
	}
	conn, err := connect(ctx, s.dsn, "weir "+s.cfg.name+" "+strconv.Itoa(subtask))
	if err != nil {
		return nil, fmt.Errorf("%w (sink %s, subtask %d)", err, s.cfg.name, subtask)
	}
	if err := s.check(ctx, conn); err != nil {
		conn.Close(context.Background())
		return nil, err
	}
	var id [8]byte
	rand.Read(id[:])
	w := &txWriter[T]{s: s, writer: writer{conn: conn}, subtask: subtask, parallelism: parallelism, id: hex.EncodeToString(id[:])}
	w.cols = append(s.columns(), stagingCols...)
	w.staging, _ = ident(s.cfg.staging)
	return w, nil
}

// check checks the target table and creates the staging and bookkeeping
// tables if needed.
func (s *TxSink[T]) check(ctx context.Context, conn *pgx.Conn) error {
	t, err := describe(ctx, conn, s.table.Name)
	if err != nil {
		return err
	}
	cols := s.columns()
	if err := t.need(cols...); err != nil {
		return err
	}
	if len(s.table.Key) > 0 {
		if err := t.needUnique(s.table.Key); err != nil {
			return err
		}
	}
	if err := ensureStaging(ctx, conn, t, s.cfg.staging, cols); err != nil {
		return err
	}
	return ensureBookkeeping(ctx, conn, s.cfg.bookkeeping)
}

type txWriter[T any] struct {
	s                    *TxSink[T]
	subtask, parallelism int
	id                   string // writer id: random, new for every writer
	cols                 []string
	staging              pgx.Identifier

	writer
	seq  int64 // sequence number of the next row
	from int64 // first sequence number not in a committable yet
}

var _ weir.CommittingWriter[int] = (*txWriter[int])(nil)

// txCommittable is what PreCommit returns and Commit takes: rows
// [From, To) of writer Writer.
type txCommittable struct {
	Sink       string `json:"sink"`
	Subtask    int    `json:"subtask"`
	Checkpoint int64  `json:"checkpoint"`
	Writer     string `json:"writer"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
}

// Write implements weir.SinkWriter.
func (w *txWriter[T]) Write(ctx context.Context, items []T) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	width := len(w.s.table.Key) + len(w.s.table.Columns)
	w.s.written.Add(int64(len(items)))
	for _, it := range items {
		vals := w.s.row(it)
		if len(vals) != width {
			return w.fail(fmt.Errorf("postgres: Transactional to %s: the row function returned %d values, want %d (%s)",
				w.s.table.Name, len(vals), width, quoteAll("", w.cols[:width])))
		}
		r := make([]any, width+len(stagingCols))
		copy(r, vals)
		r[width], r[width+1], r[width+2], r[width+3] = w.s.cfg.name, w.subtask, w.id, w.seq
		w.seq++
		w.buf = append(w.buf, r)
		if len(w.buf) >= w.s.cfg.flushRows {
			if err := w.flush(ctx); err != nil {
				return w.fail(err)
			}
		}
	}
	return nil
}

// flush copies the buffered rows into the staging table.
func (w *txWriter[T]) flush(ctx context.Context) error {
	if len(w.buf) == 0 {
		return nil
	}
	n, err := w.conn.CopyFrom(ctx, w.staging, w.cols, pgx.CopyFromRows(w.buf))
	if err != nil {
		return fmt.Errorf("postgres: stage %d rows for %s in %s (sink %s, subtask %d): %w",
			len(w.buf), w.s.table.Name, w.s.cfg.staging, w.s.cfg.name, w.subtask, err)
	}
	w.s.staged.Add(n)
	clear(w.buf)
	w.buf = w.buf[:0]
	return nil
}

// PreCommit implements weir.CommittingWriter.
func (w *txWriter[T]) PreCommit(ctx context.Context, checkpointID int64) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return nil, err
	}
	if err := w.flush(ctx); err != nil {
		return nil, w.fail(err)
	}
	if w.seq == w.from {
		return nil, nil
	}
	c := txCommittable{Sink: w.s.cfg.name, Subtask: w.subtask, Checkpoint: checkpointID, Writer: w.id, From: w.from, To: w.seq}
	w.from = w.seq
	return json.Marshal(c)
}

// Recover implements weir.CommittingWriter: it deletes the staged rows of
// earlier writers of this subtask (and, for subtask 0, of subtasks beyond
// the current parallelism). The restored checkpoint's committables were
// committed before the writers opened; nothing else staged will be.
func (w *txWriter[T]) Recover(ctx context.Context, _ int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return err
	}
	_, err := w.conn.Exec(ctx, "DELETE FROM "+w.staging.Sanitize()+
		" WHERE weir_sink = $1 AND weir_writer <> $2 AND (weir_subtask = $3 OR ($3 = 0 AND weir_subtask >= $4))",
		w.s.cfg.name, w.id, w.subtask, w.parallelism)
	if err != nil {
		return fmt.Errorf("postgres: recover: delete stale rows from %s (sink %s, subtask %d): %w", w.s.cfg.staging, w.s.cfg.name, w.subtask, err)
	}
	return nil
}

// txCommitter commits the committables of a TxSink. It keeps no state
// besides the sink's counters.
type txCommitter[T any] TxSink[T]

// Commit implements weir.Committer; see Transactional.
func (c *txCommitter[T]) Commit(ctx context.Context, data []byte) error {
	s := (*TxSink[T])(c)
	var cm txCommittable
	if err := json.Unmarshal(data, &cm); err != nil || cm.Writer == "" || cm.To <= cm.From {
		return fmt.Errorf("postgres: commit to %s: malformed committable %q (%v)", s.table.Name, data, err)
	}
	where := fmt.Sprintf("checkpoint %d of sink %s, subtask %d (rows %d..%d of writer %s)", cm.Checkpoint, cm.Sink, cm.Subtask, cm.From, cm.To-1, cm.Writer)
	conn, err := connect(ctx, s.dsn, "weir "+s.cfg.name+" committer")
	if err != nil {
		return fmt.Errorf("%w (commit %s)", err, where)
	}
	defer closeConn(ctx, conn)
	skipped := false
	var moved int64
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		skipped, moved = false, 0
		bk, _ := ident(s.cfg.bookkeeping)
		// The bookkeeping row first: a commit that was done before
		// conflicts (waiting for a concurrent one to end), and is skipped.
		tag, err := tx.Exec(ctx, "INSERT INTO "+bk.Sanitize()+" (sink, subtask, checkpoint, writer, first_seq, rows) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
			cm.Sink, cm.Subtask, cm.Checkpoint, cm.Writer, cm.From, cm.To-cm.From)
		if err != nil {
			return fmt.Errorf("record the commit in %s: %w", s.cfg.bookkeeping, err)
		}
		if tag.RowsAffected() == 0 {
			var rows int64
			if err := tx.QueryRow(ctx, "SELECT rows FROM "+bk.Sanitize()+" WHERE sink = $1 AND writer = $2 AND first_seq = $3",
				cm.Sink, cm.Writer, cm.From).Scan(&rows); err != nil {
				return fmt.Errorf("read %s: %w", s.cfg.bookkeeping, err)
			}
			if rows != cm.To-cm.From {
				return fmt.Errorf("%s records %d rows committed, the committable has %d", s.cfg.bookkeeping, rows, cm.To-cm.From)
			}
			skipped = true
			return nil
		}
		st, _ := ident(s.cfg.staging)
		sel := " FROM " + st.Sanitize() + " WHERE weir_sink = $1 AND weir_writer = $2 AND weir_seq >= $3 AND weir_seq < $4"
		cols := quoteAll("", s.columns())
		var move string
		if key := s.table.Key; len(key) > 0 {
			// One row per key, the last written (ON CONFLICT cannot update a
			// row twice in one statement).
			keys := quoteAll("", key)
			move = "INSERT INTO " + mustQuote(s.table.Name) + " AS t (" + cols + ") SELECT DISTINCT ON (" + keys + ") " + cols + sel +
				" ORDER BY " + keys + ", weir_seq DESC ON CONFLICT (" + keys + ") DO "
			if len(s.table.Columns) == 0 {
				move += "NOTHING"
			} else {
				move += "UPDATE SET " + setExcluded(s.table.Columns)
			}
		} else {
			move = "INSERT INTO " + mustQuote(s.table.Name) + " (" + cols + ") SELECT " + cols + sel + " ORDER BY weir_seq"
		}
		if _, err := tx.Exec(ctx, move, cm.Sink, cm.Writer, cm.From, cm.To); err != nil {
			return fmt.Errorf("move the staged rows from %s: %w", s.cfg.staging, err)
		}
		tag, err = tx.Exec(ctx, "DELETE"+sel, cm.Sink, cm.Writer, cm.From, cm.To)
		if err != nil {
			return fmt.Errorf("delete the staged rows from %s: %w", s.cfg.staging, err)
		}
		if moved = tag.RowsAffected(); moved != cm.To-cm.From {
			return fmt.Errorf("%d of its %d rows are in %s and it is not recorded as committed in %s: its output is lost",
				moved, cm.To-cm.From, s.cfg.staging, s.cfg.bookkeeping)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: commit %s to %s: %w", where, s.table.Name, err)
	}
	if skipped {
		s.skipped.Add(1)
	} else {
		s.commits.Add(1)
		s.committed.Add(moved)
	}
	return nil
}

// mustQuote quotes a table name that newConfig checked.
func mustQuote(name string) string {
	id, _ := ident(name)
	return id.Sanitize()
}
