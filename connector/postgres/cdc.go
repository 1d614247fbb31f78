package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/weirstream/weir"
)

// statusInterval is how often the reader tells the server where it is,
// well under the server's wal_sender_timeout (60s by default).
const statusInterval = 10 * time.Second

// readWait is how long a Read waits for the server when nothing is
// buffered (the weir.SplitReader contract: a little, then 0, nil).
const readWait = 10 * time.Millisecond

// CDCSource is PostgreSQL's change stream as a weir source; see CDC.
type CDCSource[T any] struct {
	cfg    CDCConfig
	decode func(*Record) (T, error)
	err    error
}

// CDC returns a source of the changes of the tables cfg names, read
// through a logical replication slot with the pgoutput plugin: a
// consistent snapshot of the tables (StartupMode "initial"), then every
// committed insert, update, delete and truncate, as weir.Change values of
// the type decode makes of each row image:
//
//   - a snapshot row, an INSERT: Insert(new row);
//   - an UPDATE: UpdateBefore(old row) then UpdateAfter(new row) when the
//     table's REPLICA IDENTITY is FULL; UpdateBefore(old key, KeyOnly) then
//     UpdateAfter(new row) when the update changed the key; UpdateAfter(new
//     row) alone otherwise (put weir.NormalizeChanges after the source to
//     get before-images from state);
//   - a DELETE: Delete(old row), or Delete(old key, KeyOnly) without FULL;
//   - a TRUNCATE: Delete of a Record with Truncate set, per table.
//
// decode gets each row image as a *Record (valid during the call only) and
// returns the job's value, or ErrSkip to drop it; any other error fails the
// job, naming the table and LSN. CDCRows uses DecodeRow, a column
// name/value row.
//
// The source has one split (one slot, one reader). The records of one
// transaction go out together, in commit order, each carrying the commit
// LSN and time. The position in the checkpoint is the end LSN of the last
// transaction handed out plus the number of records handed out of the one
// in progress, so a restored job resumes exactly there; the slot is
// acknowledged (its confirmed_flush_lsn advanced) only when a checkpoint
// holding a position completes (weir.CheckpointListener), and while no
// transaction of the captured tables arrives the position follows the
// server's keepalives so the slot does not hold WAL written for other
// tables. See docs/tables.md for the operations side (slots, publications,
// WAL retention, REPLICA IDENTITY) and the snapshot algorithm.
func CDC[T any](cfg CDCConfig, decode func(*Record) (T, error)) *CDCSource[T] {
	s := &CDCSource[T]{cfg: cfg.withDefaults(), decode: decode}
	if s.err = cfg.Validate(); s.err == nil && decode == nil {
		s.err = errors.New("postgres-cdc: no decoder")
	}
	return s
}

// CDCRows is CDC with the ready-made Row.
func CDCRows(cfg CDCConfig) *CDCSource[Row] { return CDC(cfg, DecodeRow) }

var _ weir.RestorableSource[weir.Change[int]] = (*CDCSource[int])(nil)

type cdcSplit string

func (s cdcSplit) ID() string { return "slot " + string(s) }

// Splits implements weir.Source: one split, the slot.
func (s *CDCSource[T]) Splits(context.Context) ([]weir.Split, error) {
	if s.err != nil {
		return nil, s.err
	}
	return []weir.Split{cdcSplit(s.cfg.SlotName)}, nil
}

// Open implements weir.Source: a job without state. With StartupMode
// "initial" it creates the slot with an exported snapshot (dropping an
// idle slot of the same name: its position is not consistent with a new
// snapshot) and reads the tables in it before streaming; with
// "latest-offset" it streams from the slot's position (creating the slot
// if missing). A slot in use by another connection is an error.
func (s *CDCSource[T]) Open(ctx context.Context, split weir.Split) (weir.SplitReader[weir.Change[T]], error) {
	return s.open(ctx, nil)
}

// OpenAt implements weir.RestorableSource: it resumes at a checkpoint's
// position. The slot must exist and not be acknowledged beyond it.
func (s *CDCSource[T]) OpenAt(ctx context.Context, split weir.Split, pos []byte) (weir.SplitReader[weir.Change[T]], error) {
	var p cdcPosition
	if err := json.Unmarshal(pos, &p); err != nil {
		return nil, fmt.Errorf("postgres-cdc: slot %s: malformed checkpoint position %q: %w", s.cfg.SlotName, pos, err)
	}
	if p.Slot != s.cfg.SlotName {
		return nil, fmt.Errorf("postgres-cdc: the checkpoint's position is for slot %s, the job reads slot %s", p.Slot, s.cfg.SlotName)
	}
	if p.Phase == "snapshot" && p.Table == 0 && p.Rows == 0 {
		// A checkpoint before the first row (the first barrier can come
		// before the first Read): nothing was emitted, so the job starts
		// over with a new slot and a new snapshot.
		if err := dropSlot(ctx, s.cfg); err != nil {
			return nil, err
		}
		return s.open(ctx, nil)
	}
	if p.Phase == "snapshot" {
		// The exported snapshot lived in the failed process's
		// transaction: the rest of the tables cannot be read as of the same
		// instant, and the rows already emitted are in the restored state.
		return nil, fmt.Errorf("postgres-cdc: slot %s: the checkpoint was taken during the initial snapshot (table %d, %d rows emitted), which cannot be resumed: start the job afresh (drop the slot first) or restore a later checkpoint",
			s.cfg.SlotName, p.Table, p.Rows)
	}
	return s.open(ctx, &p)
}

// cdcPosition is the reader's checkpointed position.
type cdcPosition struct {
	Slot  string `json:"slot"`
	Phase string `json:"phase"` // "snapshot" or "stream"
	// LSN is where streaming resumes: the end of the last transaction
	// handed out (or a keepalive's position while idle), or the slot's
	// consistent point after the snapshot.
	LSN LSN `json:"lsn"`
	// Skip records of the first transaction after LSN were handed out.
	Skip int64 `json:"skip,omitempty"`
	// Snapshot progress: table index and rows of it emitted.
	Table int   `json:"table,omitempty"`
	Rows  int64 `json:"rows,omitempty"`
}

type cdcReader[T any] struct {
	s      *CDCSource[T]
	ctx    context.Context // the reader's lifetime: queries outlive one Read
	cancel context.CancelFunc
	conn   *pgx.Conn      // snapshot and catalog queries
	repl   *pgconn.PgConn // the replication connection
	tmap   *pgtype.Map
	tables []*relation // captured tables, by snapshot order
	want   map[string]bool

	phase string
	// snapshot
	snapTime time.Time
	ti       int
	rr       *pgconn.ResultReader
	srel     *relation
	srows    int64
	// stream
	started bool
	rels    map[uint32]*relation
	pos     LSN   // resume point
	inTx    bool  // between Begin and Commit
	skip    int64 // records of the current transaction still to drop (restore)
	emitted int64 // records of the current transaction handed out or skipped
	txLSN   LSN
	txTime  time.Time
	xid     uint32
	acked   LSN // last position sent to the server as flushed
	status  time.Time

	pending []weir.Change[T] // decoded, not yet handed out
	rec     Record
	tup     [][]byte // the values of a WAL tuple (snapshot rows use the query's)
}

// freeSlot looks up the job's slot: whether it exists and its confirmed
// position. A slot that another connection holds is looked at again until
// it is free or SlotMaxRetries times SlotRetryDelay have passed (the
// session of a reader that a restart replaces ends on the server's time).
func (r *cdcReader[T]) freeSlot(ctx context.Context) (exists bool, confirmed *LSN, err error) {
	c := r.s.cfg
	wait := time.Duration(max(c.SlotMaxRetries, 0)) * c.SlotRetryDelay
	deadline := time.Now().Add(wait)
	poll := min(c.SlotRetryDelay, 100*time.Millisecond)
	for {
		var active bool
		var plugin, db string
		var pid *int32
		err := r.conn.QueryRow(ctx, "SELECT confirmed_flush_lsn::text, plugin, database, active, active_pid FROM pg_replication_slots WHERE slot_name = $1 AND slot_type = 'logical'",
			c.SlotName).Scan(&lsnText{&confirmed}, &plugin, &db, &active, &pid)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return false, nil, nil
		case err != nil:
			return false, nil, fmt.Errorf("postgres-cdc: look up slot %s: %w", c.SlotName, err)
		case plugin != "pgoutput":
			return false, nil, fmt.Errorf("postgres-cdc: slot %s uses plugin %s, not pgoutput", c.SlotName, plugin)
		case db != r.conn.Config().Database:
			return false, nil, fmt.Errorf("postgres-cdc: slot %s belongs to database %s, the job reads %s", c.SlotName, db, r.conn.Config().Database)
		case !active:
			return true, confirmed, nil
		}
		if !time.Now().Before(deadline) {
			p := int32(0)
			if pid != nil {
				p = *pid
			}
			return false, nil, fmt.Errorf("postgres-cdc: replication slot %s is in use by another connection (pid %d), still after %v ('debezium.slot.max.retries' times 'debezium.slot.retry.delay.ms'): another job reads it, or a killed one's session has not ended yet", c.SlotName, p, wait)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, nil, fmt.Errorf("postgres-cdc: waiting for replication slot %s, held by another connection: %w", c.SlotName, ctx.Err())
		case <-t.C:
		}
	}
}

func (s *CDCSource[T]) open(ctx context.Context, at *cdcPosition) (_ *cdcReader[T], err error) {
	if s.err != nil {
		return nil, s.err
	}
	c := s.cfg
	rctx, cancel := context.WithCancel(context.Background())
	r := &cdcReader[T]{s: s, ctx: rctx, cancel: cancel, tmap: pgtype.NewMap(), rels: map[uint32]*relation{}, want: map[string]bool{}}
	r.rec.tmap = r.tmap
	defer func() {
		if err != nil {
			r.Close()
		}
	}()
	r.conn, err = connect(ctx, c.dsn(false), "weir cdc "+c.SlotName)
	if err != nil {
		return nil, fmt.Errorf("postgres-cdc: %w", err)
	}
	if err := r.check(ctx); err != nil {
		return nil, err
	}
	if err := r.ensurePublication(ctx); err != nil {
		return nil, err
	}
	slotExists, confirmed, err := r.freeSlot(ctx)
	if err != nil {
		return nil, err
	}
	rcfg, err := pgconn.ParseConfig(c.dsn(true))
	if err != nil {
		return nil, fmt.Errorf("postgres-cdc: connection string: %w", err)
	}
	rcfg.RuntimeParams["application_name"] = "weir cdc " + c.SlotName + " replication"
	r.repl, err = pgconn.ConnectConfig(ctx, rcfg)
	if err != nil {
		return nil, fmt.Errorf("postgres-cdc: replication connection to %s:%d (the role needs REPLICATION and pg_hba.conf must allow it): %w", rcfg.Host, rcfg.Port, err)
	}
	switch {
	case at != nil:
		if !slotExists {
			return nil, fmt.Errorf("postgres-cdc: replication slot %s does not exist (dropped?): the changes after the checkpoint's position %s are gone; start the job afresh", c.SlotName, at.LSN)
		}
		if confirmed != nil && *confirmed > at.LSN {
			return nil, fmt.Errorf("postgres-cdc: slot %s is acknowledged up to %s, beyond the checkpoint's position %s (an older checkpoint or savepoint?): the changes between are gone", c.SlotName, *confirmed, at.LSN)
		}
		r.phase, r.pos, r.skip = "stream", at.LSN, at.Skip
		r.acked = at.LSN
		if confirmed != nil {
			r.acked = *confirmed
		}
	case c.StartupMode == "latest-offset":
		if !slotExists {
			res, err := pglogrepl.CreateReplicationSlot(ctx, r.repl, c.SlotName, "pgoutput", pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "NOEXPORT_SNAPSHOT"})
			if err != nil {
				return nil, slotError(c.SlotName, err)
			}
			p, _ := pglogrepl.ParseLSN(res.ConsistentPoint)
			confirmed = ptr(LSN(p))
		}
		r.phase, r.pos = "stream", *confirmed
		r.acked = r.pos
	default:
		if slotExists {
			// The job starts without state (a new job, or one whose first
			// attempt died before its first checkpoint): its view must be
			// built from a new snapshot, and the slot's position is not
			// consistent with one. The slot is the job's (slot.name): drop it.
			if err := dropSlot(ctx, c); err != nil {
				return nil, err
			}
		}
		if err := r.startSnapshot(ctx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }

// slotError explains the usual causes of a failed CREATE_REPLICATION_SLOT.
func slotError(slot string, err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "53400" {
		return fmt.Errorf("postgres-cdc: create replication slot %s: %w (all max_replication_slots are in use: drop unused slots or raise it)", slot, err)
	}
	return fmt.Errorf("postgres-cdc: create replication slot %s: %w", slot, err)
}

// lsnText scans a pg_lsn's text into **LSN (nil for NULL).
type lsnText struct{ dst **LSN }

func (l lsnText) Scan(src any) error {
	if src == nil {
		*l.dst = nil
		return nil
	}
	s, ok := src.(string)
	if !ok {
		return fmt.Errorf("lsn: %T", src)
	}
	p, err := pglogrepl.ParseLSN(s)
	if err != nil {
		return err
	}
	*l.dst = ptr(LSN(p))
	return nil
}

// check fails with a clear error when logical decoding cannot work: the
// server's wal_level, the role's REPLICATION attribute, the tables.
func (r *cdcReader[T]) check(ctx context.Context) error {
	c := r.s.cfg
	var level string
	if err := r.conn.QueryRow(ctx, "SHOW wal_level").Scan(&level); err != nil {
		return fmt.Errorf("postgres-cdc: SHOW wal_level: %w", err)
	}
	if level != "logical" {
		return fmt.Errorf("postgres-cdc: the server's wal_level is %s; logical decoding needs wal_level = logical (ALTER SYSTEM SET wal_level = logical, then restart the server)", level)
	}
	var user string
	var repl bool
	if err := r.conn.QueryRow(ctx, "SELECT current_user, rolreplication OR rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&user, &repl); err != nil {
		return fmt.Errorf("postgres-cdc: read the role's attributes: %w", err)
	}
	if !repl {
		return fmt.Errorf("postgres-cdc: role %s lacks the REPLICATION attribute that a replication slot needs (ALTER ROLE %s REPLICATION)", user, pgx.Identifier{user}.Sanitize())
	}
	rows, err := r.conn.Query(ctx, `SELECT n.nspname, c.relname, c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND n.nspname ~ ('^(?:' || $1 || ')$') AND c.relname ~ ('^(?:' || $2 || ')$')
		AND n.nspname NOT IN ('pg_catalog', 'information_schema') ORDER BY 1, 2`, c.SchemaName, c.TableName)
	if err != nil {
		return fmt.Errorf("postgres-cdc: list the tables: %w", err)
	}
	type tab struct {
		schema, name string
		oid          uint32
	}
	var found []tab
	for rows.Next() {
		var t tab
		if err := rows.Scan(&t.schema, &t.name, &t.oid); err != nil {
			return fmt.Errorf("postgres-cdc: list the tables: %w", err)
		}
		found = append(found, t)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres-cdc: list the tables: %w", err)
	}
	if len(found) == 0 {
		return fmt.Errorf("postgres-cdc: no table matches schema-name '%s' and table-name '%s'", c.SchemaName, c.TableName)
	}
	for _, t := range found {
		rel := &relation{schema: t.schema, name: t.name, qualified: t.schema + "." + t.name}
		rows, err := r.conn.Query(ctx, `SELECT a.attname, a.atttypid, coalesce(a.attnum = ANY(i.indkey::int2[]), false)
			FROM pg_attribute a LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary
			WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, t.oid)
		if err != nil {
			return fmt.Errorf("postgres-cdc: columns of %s: %w", rel.qualified, err)
		}
		for rows.Next() {
			var name string
			var oid uint32
			var key bool
			if err := rows.Scan(&name, &oid, &key); err != nil {
				return fmt.Errorf("postgres-cdc: columns of %s: %w", rel.qualified, err)
			}
			rel.cols, rel.oids, rel.key = append(rel.cols, name), append(rel.oids, oid), append(rel.key, key)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("postgres-cdc: columns of %s: %w", rel.qualified, err)
		}
		r.tables = append(r.tables, rel)
		r.want[rel.qualified] = true
	}
	return nil
}

// ensurePublication checks the publication, creating it when missing
// and allowed.
func (r *cdcReader[T]) ensurePublication(ctx context.Context) error {
	c := r.s.cfg
	var all bool
	err := r.conn.QueryRow(ctx, "SELECT puballtables FROM pg_publication WHERE pubname = $1", c.PublicationName).Scan(&all)
	names := make([]string, len(r.tables))
	for i, t := range r.tables {
		names[i] = pgx.Identifier{t.schema, t.name}.Sanitize()
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		create := "CREATE PUBLICATION " + pgx.Identifier{c.PublicationName}.Sanitize()
		switch c.PublicationAutoCreate {
		case "disabled":
			return fmt.Errorf("postgres-cdc: publication %s does not exist and debezium.publication.autocreate.mode is disabled: create it (%s FOR TABLE %s)", c.PublicationName, create, strings.Join(names, ", "))
		case "all_tables":
			create += " FOR ALL TABLES"
		default:
			create += " FOR TABLE " + strings.Join(names, ", ")
		}
		if _, err := r.conn.Exec(ctx, create); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "42710" { // created concurrently
				return nil
			}
			return fmt.Errorf("postgres-cdc: %s: %w", create, err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("postgres-cdc: look up publication %s: %w", c.PublicationName, err)
	case all:
		return nil
	}
	var missing []string
	for i, t := range r.tables {
		var in bool
		if err := r.conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = $1 AND schemaname = $2 AND tablename = $3)",
			c.PublicationName, t.schema, t.name).Scan(&in); err != nil {
			return fmt.Errorf("postgres-cdc: read publication %s: %w", c.PublicationName, err)
		}
		if !in {
			missing = append(missing, names[i])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("postgres-cdc: publication %s does not publish %s (ALTER PUBLICATION %s ADD TABLE %s)",
			c.PublicationName, strings.Join(missing, ", "), pgx.Identifier{c.PublicationName}.Sanitize(), strings.Join(missing, ", "))
	}
	return nil
}

// startSnapshot creates the slot with an exported snapshot and imports it
// in a REPEATABLE READ transaction on the query connection: the snapshot
// shows exactly the transactions committed before the slot's consistent
// point, and the slot streams exactly those committed after it, so the
// snapshot followed by the stream loses and duplicates nothing.
func (r *cdcReader[T]) startSnapshot(ctx context.Context) error {
	c := r.s.cfg
	res, err := pglogrepl.CreateReplicationSlot(ctx, r.repl, c.SlotName, "pgoutput",
		pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: "EXPORT_SNAPSHOT"})
	if err != nil {
		return slotError(c.SlotName, err)
	}
	p, err := pglogrepl.ParseLSN(res.ConsistentPoint)
	if err != nil {
		return fmt.Errorf("postgres-cdc: slot %s: consistent point %q: %w", c.SlotName, res.ConsistentPoint, err)
	}
	r.pos, r.acked = LSN(p), LSN(p)
	// The exported snapshot is valid until the replication connection runs
	// its next command: import it now.
	if _, err := r.conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("postgres-cdc: snapshot: %w", err)
	}
	if _, err := r.conn.Exec(ctx, "SET TRANSACTION SNAPSHOT "+quoteLiteral(res.SnapshotName)); err != nil {
		return fmt.Errorf("postgres-cdc: snapshot: import %s: %w", res.SnapshotName, err)
	}
	if err := r.conn.QueryRow(ctx, "SELECT now()").Scan(&r.snapTime); err != nil {
		return fmt.Errorf("postgres-cdc: snapshot: %w", err)
	}
	r.phase = "snapshot"
	return nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Position implements weir.CheckpointedReader.
func (r *cdcReader[T]) Position() ([]byte, error) {
	p := cdcPosition{Slot: r.s.cfg.SlotName, Phase: r.phase, LSN: r.pos}
	if r.phase == "snapshot" {
		p.Table, p.Rows = r.ti, r.srows
	} else if r.inTx {
		p.Skip = r.emitted - int64(len(r.pending))
	}
	return json.Marshal(p)
}

// NotifyCheckpointComplete implements weir.CheckpointListener: the slot is
// acknowledged up to the checkpoint's position, so the server may recycle
// the WAL before it.
func (r *cdcReader[T]) NotifyCheckpointComplete(ctx context.Context, _ int64, position []byte) error {
	var p cdcPosition
	if err := json.Unmarshal(position, &p); err != nil {
		return fmt.Errorf("postgres-cdc: position %q: %w", position, err)
	}
	if p.Phase != "stream" || p.LSN <= r.acked {
		return nil
	}
	r.acked = p.LSN
	if !r.started {
		return nil // sent when streaming starts
	}
	return r.sendStatus()
}

func (r *cdcReader[T]) sendStatus() error {
	r.status = time.Now()
	err := pglogrepl.SendStandbyStatusUpdate(r.ctx, r.repl, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(r.acked)})
	if err != nil {
		return fmt.Errorf("postgres-cdc: slot %s: acknowledge %s: %w", r.s.cfg.SlotName, r.acked, err)
	}
	return nil
}

// Read implements weir.SplitReader.
func (r *cdcReader[T]) Read(ctx context.Context, dst []weir.Change[T]) (int, error) {
	n := r.drain(dst)
	if r.phase == "snapshot" {
		for n < len(dst) && r.phase == "snapshot" {
			if err := r.snapshotRow(ctx); err != nil {
				return n, err
			}
			n += r.drain(dst[n:])
		}
		return n, nil
	}
	if !r.started {
		if err := r.startStream(ctx); err != nil {
			return n, err
		}
	}
	if time.Since(r.status) >= statusInterval {
		if err := r.sendStatus(); err != nil {
			return n, err
		}
	}
	// One deadline for the whole Read: messages already buffered come at
	// once, and an idle server costs readWait.
	wctx, cancel := context.WithTimeout(ctx, readWait)
	defer cancel()
	for n < len(dst) {
		msg, err := r.repl.ReceiveMessage(wctx)
		if err != nil {
			if pgconn.Timeout(err) || (ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded)) {
				return n, nil
			}
			if ctx.Err() != nil {
				return n, context.Cause(ctx)
			}
			return n, fmt.Errorf("postgres-cdc: slot %s: receive: %w", r.s.cfg.SlotName, err)
		}
		if err := r.handle(msg); err != nil {
			return n, err
		}
		n += r.drain(dst[n:])
	}
	return n, nil
}

// drain hands out pending changes.
func (r *cdcReader[T]) drain(dst []weir.Change[T]) int {
	k := copy(dst, r.pending)
	if k == len(r.pending) {
		clear(r.pending)
		r.pending = r.pending[:0]
	} else {
		r.pending = append(r.pending[:0], r.pending[k:]...)
	}
	return k
}

// snapshotRow reads one row of the snapshot, moving to the next table at
// the end of one and to streaming at the end of the last.
func (r *cdcReader[T]) snapshotRow(ctx context.Context) error {
	if r.rr == nil {
		if r.ti == len(r.tables) {
			if _, err := r.conn.Exec(ctx, "COMMIT"); err != nil {
				return fmt.Errorf("postgres-cdc: snapshot: commit: %w", err)
			}
			r.phase = "stream"
			return nil
		}
		r.srel, r.srows = r.tables[r.ti], 0
		// Text format, as pgoutput sends: one decoder for both phases.
		r.rr = r.conn.PgConn().ExecParams(r.ctx, "SELECT "+quoteAll("", r.srel.cols)+" FROM "+pgx.Identifier{r.srel.schema, r.srel.name}.Sanitize(), nil, nil, nil, nil)
	}
	if !r.rr.NextRow() {
		_, err := r.rr.Close()
		r.rr = nil
		if err != nil {
			return fmt.Errorf("postgres-cdc: snapshot of %s: %w", r.srel.qualified, err)
		}
		r.ti++
		return nil
	}
	vals := r.rr.Values()
	rec := &r.rec
	*rec = Record{rel: r.srel, tmap: r.tmap, vals: vals, state: rec.state[:0], CommitTime: r.snapTime, Snapshot: true}
	for _, v := range vals {
		if v == nil {
			rec.state = append(rec.state, colNull)
		} else {
			rec.state = append(rec.state, colText)
		}
	}
	r.srows++
	return r.emit(weir.Insert)
}

// emit decodes r.rec into a pending change.
func (r *cdcReader[T]) emit(kind weir.ChangeKind) error {
	v, err := r.s.decode(&r.rec)
	if errors.Is(err, ErrSkip) {
		return nil
	}
	if err != nil {
		at := "snapshot"
		if !r.rec.Snapshot {
			at = "transaction " + fmt.Sprint(r.rec.Xid) + " committed at " + r.rec.LSN.String()
		}
		return fmt.Errorf("postgres-cdc: decode a row of %s (%s, %s): %w", r.rec.rel.qualified, kind, at, err)
	}
	if !r.rec.Snapshot {
		r.emitted++
		if r.skip > 0 {
			// Handed out before the restored checkpoint.
			r.skip--
			return nil
		}
	}
	r.pending = append(r.pending, weir.Change[T]{Kind: kind, Value: v})
	return nil
}

// startStream starts streaming from the position.
func (r *cdcReader[T]) startStream(ctx context.Context) error {
	c := r.s.cfg
	err := pglogrepl.StartReplication(ctx, r.repl, c.SlotName, pglogrepl.LSN(r.pos), pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names " + quoteLiteral(pgx.Identifier{c.PublicationName}.Sanitize())},
	})
	if err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "42704" {
			return fmt.Errorf("postgres-cdc: start streaming slot %s: %w (the slot or the publication %s is missing)", c.SlotName, err, c.PublicationName)
		}
		return fmt.Errorf("postgres-cdc: start streaming slot %s at %s: %w", c.SlotName, r.pos, err)
	}
	r.started = true
	return r.sendStatus()
}

// handle processes one message of the replication stream.
func (r *cdcReader[T]) handle(msg pgproto3.BackendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.CopyData:
		if len(m.Data) == 0 {
			return nil
		}
		switch m.Data[0] {
		case pglogrepl.PrimaryKeepaliveMessageByteID:
			ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(m.Data[1:])
			if err != nil {
				return fmt.Errorf("postgres-cdc: keepalive: %w", err)
			}
			// Idle between transactions: everything before the server's
			// position that concerns us has arrived, so the position
			// follows it (and the slot, once a checkpoint holds it),
			// rather than pinning WAL written for other tables.
			if !r.inTx && len(r.pending) == 0 && LSN(ka.ServerWALEnd) > r.pos {
				r.pos = LSN(ka.ServerWALEnd)
			}
			if ka.ReplyRequested {
				return r.sendStatus()
			}
		case pglogrepl.XLogDataByteID:
			x, err := pglogrepl.ParseXLogData(m.Data[1:])
			if err != nil {
				return fmt.Errorf("postgres-cdc: WAL data: %w", err)
			}
			return r.logical(x.WALData, LSN(x.WALStart))
		}
	case *pgproto3.ErrorResponse:
		return fmt.Errorf("postgres-cdc: slot %s: %w", r.s.cfg.SlotName, pgconn.ErrorResponseToPgError(m))
	}
	return nil
}

// logical processes one pgoutput message.
func (r *cdcReader[T]) logical(data []byte, at LSN) error {
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("postgres-cdc: slot %s: pgoutput message at %s: %w", r.s.cfg.SlotName, at, err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		rel := &relation{schema: m.Namespace, name: m.RelationName, qualified: m.Namespace + "." + m.RelationName}
		for _, col := range m.Columns {
			rel.cols, rel.oids, rel.key = append(rel.cols, col.Name), append(rel.oids, col.DataType), append(rel.key, col.Flags&1 != 0)
		}
		r.rels[m.RelationID] = rel
	case *pglogrepl.BeginMessage:
		r.inTx, r.emitted, r.txLSN, r.txTime, r.xid = true, 0, LSN(m.FinalLSN), m.CommitTime, m.Xid
	case *pglogrepl.CommitMessage:
		r.inTx, r.emitted, r.skip = false, 0, 0
		if end := LSN(m.TransactionEndLSN); end > r.pos {
			r.pos = end
		}
	case *pglogrepl.InsertMessage:
		return r.change(m.RelationID, m.Tuple, false, weir.Insert)
	case *pglogrepl.UpdateMessage:
		switch m.OldTupleType {
		case pglogrepl.UpdateMessageTupleTypeOld:
			if err := r.change(m.RelationID, m.OldTuple, false, weir.UpdateBefore); err != nil {
				return err
			}
		case pglogrepl.UpdateMessageTupleTypeKey:
			if err := r.change(m.RelationID, m.OldTuple, true, weir.UpdateBefore); err != nil {
				return err
			}
		}
		return r.change(m.RelationID, m.NewTuple, false, weir.UpdateAfter)
	case *pglogrepl.DeleteMessage:
		return r.change(m.RelationID, m.OldTuple, m.OldTupleType == pglogrepl.DeleteMessageTupleTypeKey, weir.Delete)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			rel, ok := r.rels[id]
			if !ok {
				return fmt.Errorf("postgres-cdc: slot %s: truncate of unknown relation %d at %s", r.s.cfg.SlotName, id, at)
			}
			if !r.want[rel.qualified] {
				continue
			}
			r.rec = Record{rel: rel, tmap: r.tmap, state: r.rec.state[:0], LSN: r.txLSN, CommitTime: r.txTime, Xid: r.xid, Truncate: true}
			if err := r.emit(weir.Delete); err != nil {
				return err
			}
		}
	}
	return nil
}

// change decodes one tuple of a row change.
func (r *cdcReader[T]) change(relID uint32, tup *pglogrepl.TupleData, keyOnly bool, kind weir.ChangeKind) error {
	rel, ok := r.rels[relID]
	if !ok {
		return fmt.Errorf("postgres-cdc: slot %s: change of unknown relation %d in transaction %d", r.s.cfg.SlotName, relID, r.xid)
	}
	if !r.want[rel.qualified] || tup == nil {
		return nil // a table of a shared publication that the job does not capture
	}
	rec := &r.rec
	*rec = Record{rel: rel, tmap: r.tmap, vals: r.tup[:0], state: rec.state[:0], LSN: r.txLSN, CommitTime: r.txTime, Xid: r.xid, KeyOnly: keyOnly}
	for _, col := range tup.Columns {
		rec.vals = append(rec.vals, col.Data)
		switch col.DataType {
		case pglogrepl.TupleDataTypeNull:
			rec.state = append(rec.state, colNull)
		case pglogrepl.TupleDataTypeToast:
			rec.state = append(rec.state, colUnchanged)
		default:
			rec.state = append(rec.state, colText)
		}
	}
	r.tup = rec.vals
	if len(rec.vals) != len(rel.cols) {
		return fmt.Errorf("postgres-cdc: %s: a row of %d columns, the relation has %d", rel.qualified, len(rec.vals), len(rel.cols))
	}
	return r.emit(kind)
}

// Close implements weir.SplitReader. It keeps the slot: the next run of
// the job resumes from it (DropCDC removes it).
func (r *cdcReader[T]) Close() error {
	if r.rr != nil {
		r.rr.Close()
		r.rr = nil
	}
	r.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if r.repl != nil {
		r.repl.Close(ctx)
	}
	if r.conn != nil {
		r.conn.Close(ctx)
	}
	return nil
}

// dropSlot drops the slot if it exists.
func dropSlot(ctx context.Context, c CDCConfig) error {
	conn, err := connect(ctx, c.dsn(false), "weir cdc "+c.SlotName)
	if err != nil {
		return fmt.Errorf("postgres-cdc: %w", err)
	}
	defer closeConn(ctx, conn)
	if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", c.SlotName); err != nil {
		return fmt.Errorf("postgres-cdc: drop replication slot %s to take the snapshot again: %w", c.SlotName, err)
	}
	return nil
}

// DropCDC removes what a CDC source keeps on the server: its replication
// slot (so the server stops keeping WAL for it) and, unless the
// publication is the user's (autocreate mode disabled), its publication.
// Run it when a job is retired; a slot that is active (a job still reads
// it) cannot be dropped.
func DropCDC(ctx context.Context, cfg CDCConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c := cfg.withDefaults()
	conn, err := connect(ctx, c.dsn(false), "weir cdc drop "+c.SlotName)
	if err != nil {
		return fmt.Errorf("postgres-cdc: %w", err)
	}
	defer closeConn(ctx, conn)
	if _, err := conn.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1", c.SlotName); err != nil {
		return fmt.Errorf("postgres-cdc: drop replication slot %s: %w", c.SlotName, err)
	}
	if c.PublicationAutoCreate != "disabled" {
		if _, err := conn.Exec(ctx, "DROP PUBLICATION IF EXISTS "+pgx.Identifier{c.PublicationName}.Sanitize()); err != nil {
			return fmt.Errorf("postgres-cdc: drop publication %s: %w", c.PublicationName, err)
		}
	}
	return nil
}
