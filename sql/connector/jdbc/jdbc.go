// Package jdbc is the SQL connector 'jdbc' for PostgreSQL, with Flink's
// options: a sink, and a bounded scan source (see CreateSource; option
// 'scan.fetch-size'). Options: 'url' (required: jdbc:postgresql://host[:port]/db
// [?params], or a postgres:// URL; a Unix socket directory goes in the
// 'host' parameter), 'table-name' (required; "table" or "schema.table"),
// 'username', 'password', 'driver' (accepted, unused),
// 'sink.buffer-flush.max-rows' (default 100), 'sink.buffer-flush.interval'
// (default 1 s: a write flushes when the last flush is older) and
// 'sink.parallelism'.
//
// With a PRIMARY KEY the sink accepts an upsert changelog, as Flink's:
// +I/+U are upserts (INSERT ... ON CONFLICT (key) DO UPDATE), -D deletes
// by the key, -U is ignored. The rows buffered are reduced to the last
// change per key and written in one transaction per flush: when the
// buffer is full, when the interval has passed, and at every checkpoint
// barrier (so a completed checkpoint never covers rows that are not in
// the table) and at the end of a bounded input. Delivery is at least once
// and the writes are idempotent, so the table ends as if each change were
// applied once. Without a primary key the sink appends (INSERT) and
// accepts insert-only rows; a replay after a failure appends again.
//
// The sink reports ExactlyOnce false on purpose: each write is at least
// once, and only the table's final content is exactly once, when the
// replay is deterministic. connector/postgres's UpsertChanges does not
// help here: its idempotence needs a position column in the target table
// and a position growing with each change of a key, which a SQL table
// and row do not have. Exactly once would take a two-phase sink (changes
// staged per checkpoint and applied when it completes, as
// postgres.Transactional does for appends); see docs/sql-connectors.md.
//
// The table must exist. Values are sent as text and cast to the column's
// PostgreSQL type derived from the column's SQL type (DECIMAL(p, s) to
// numeric(p, s), TIMESTAMP to timestamp, TIMESTAMP_LTZ to timestamptz,
// BYTES to bytea, ...); ARRAY, MAP and ROW columns are not supported.
// Lookups (a lookup join's dimension table): see CreateLookup.
package jdbc

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() { connector.Register(Factory{}) }

// Factory is the 'jdbc' connector.
type Factory struct{}

// Identifier implements connector.Factory.
func (Factory) Identifier() string { return "jdbc" }

// DSN turns a JDBC PostgreSQL URL and credentials into a pgx connection
// URL.
func DSN(jdbcURL, user, password string) (string, error) {
	raw := jdbcURL
	switch {
	case strings.HasPrefix(raw, "jdbc:postgresql:"):
		raw = "postgres:" + strings.TrimPrefix(raw, "jdbc:postgresql:")
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
	case strings.HasPrefix(raw, "jdbc:"):
		return "", fmt.Errorf("only PostgreSQL is supported (jdbc:postgresql://...), not %s", strings.SplitN(raw, "//", 2)[0])
	default:
		return "", fmt.Errorf("not a jdbc:postgresql:// URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("not a URL: %v", err)
	}
	if user != "" {
		if password != "" {
			u.User = url.UserPassword(user, password)
		} else {
			u.User = url.User(user)
		}
	}
	return u.String(), nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quoteTable(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		parts[i] = quoteIdent(p)
	}
	return strings.Join(parts, ".")
}

// pgType is the PostgreSQL type a column's text is cast to.
func pgType(t types.Type) (string, error) {
	switch t.Kind {
	case types.Boolean:
		return "boolean", nil
	case types.TinyInt, types.SmallInt:
		return "smallint", nil
	case types.Int:
		return "integer", nil
	case types.BigInt:
		return "bigint", nil
	case types.Float:
		return "real", nil
	case types.Double:
		return "double precision", nil
	case types.Decimal:
		return fmt.Sprintf("numeric(%d,%d)", t.Precision, t.Scale), nil
	case types.Char, types.Varchar:
		return "text", nil
	case types.Binary, types.Varbinary:
		return "bytea", nil
	case types.Date:
		return "date", nil
	case types.Time:
		return "time", nil
	case types.Timestamp:
		return "timestamp", nil
	case types.TimestampLTZ:
		return "timestamptz", nil
	}
	return "", fmt.Errorf("type %s is not supported by the jdbc connector", t)
}

// CreateSink implements connector.SinkFactory.
func (Factory) CreateSink(t *connector.Table) (*connector.Sink, error) {
	o := connector.NewOptions(t)
	rawURL := o.Required("url")
	table := o.Required("table-name")
	user, password := o.String("username", ""), o.String("password", "")
	o.String("driver", "")
	maxRows := o.Int("sink.buffer-flush.max-rows", 100)
	interval := o.Duration("sink.buffer-flush.interval", time.Second)
	par := o.Int("sink.parallelism", 0)
	if par < 0 {
		o.Invalid("sink.parallelism", "must be positive")
	}
	var dsn string
	if rawURL != "" {
		var err error
		if dsn, err = DSN(rawURL, user, password); err != nil {
			o.Invalid("url", "%v", err)
		}
	}
	s := &sink{dsn: dsn, table: quoteTable(table), name: t.Name, pk: t.PrimaryKey, maxRows: int(max(maxRows, 1)), interval: interval}
	for _, col := range t.Schema {
		pt, err := pgType(col.Type)
		if err != nil {
			o.Errorf("column '%s': %v", col.Name, err)
			continue
		}
		enc, _ := format.TextEncoder(col.Type, ' ')
		if col.Type.Kind == types.Binary || col.Type.Kind == types.Varbinary {
			enc = func(dst []byte, v *types.Value) []byte {
				return hex.AppendEncode(append(dst, `\x`...), []byte(v.S))
			}
		}
		s.cols = append(s.cols, column{name: quoteIdent(col.Name), cast: "::text::" + pt, enc: enc})
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	accepts := types.InsertOnly
	if len(t.PrimaryKey) > 0 {
		accepts = types.Upsert
	}
	var opts []weir.OperatorOption
	if par > 0 {
		opts = append(opts, weir.Parallelism(int(par)))
	}
	return &connector.Sink{Sink: s, Accepts: accepts, Options: opts}, nil
}

type column struct {
	name, cast string
	enc        func([]byte, *types.Value) []byte
}

type sink struct {
	dsn, table, name string
	cols             []column
	pk               []int
	maxRows          int
	interval         time.Duration
}

// op is a buffered change: the text of every column (nil: NULL), or of
// the key columns for a delete.
type op struct {
	del    bool
	params []any
}

func (s *sink) OpenWriter(ctx context.Context, subtask, _ int) (weir.SinkWriter[types.Row], error) {
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return nil, fmt.Errorf("table '%s': %w", s.name, err)
	}
	cfg.RuntimeParams["application_name"] = fmt.Sprintf("weir-sql-%s-%d", s.name, subtask)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("table '%s': connecting to PostgreSQL: %w", s.name, err)
	}
	return &writer{s: s, conn: conn, byKey: map[string]int{}, last: time.Now()}, nil
}

type writer struct {
	s     *sink
	conn  *pgx.Conn
	ops   []op
	byKey map[string]int // key -> index in ops (tables with a primary key)
	buf   []byte
	last  time.Time
}

func (w *writer) text(v *types.Value, c *column) any {
	if v.Null {
		return nil
	}
	w.buf = c.enc(w.buf[:0], v)
	return string(w.buf)
}

func (w *writer) Write(ctx context.Context, rows []types.Row) error {
	s := w.s
	for i := range rows {
		r := &rows[i]
		if len(r.Values) != len(s.cols) {
			return fmt.Errorf("table '%s': a row of %d values for %d columns", s.name, len(r.Values), len(s.cols))
		}
		if len(s.pk) == 0 {
			if r.Kind != types.Insert && r.Kind != types.UpdateAfter {
				return fmt.Errorf("table '%s': a %v row into a table without a PRIMARY KEY (it only appends)", s.name, r.Kind)
			}
			w.ops = append(w.ops, op{params: w.all(r)})
			continue
		}
		if r.Kind == types.UpdateBefore {
			continue
		}
		var o op
		if r.Kind == types.Delete {
			o = op{del: true, params: make([]any, len(s.pk))}
			for j, k := range s.pk {
				o.params[j] = w.text(&r.Values[k], &s.cols[k])
			}
		} else {
			o = op{params: w.all(r)}
		}
		key := types.Key(pick(r.Values, s.pk))
		if j, ok := w.byKey[key]; ok {
			w.ops[j] = o // the last change of a key wins
		} else {
			w.byKey[key] = len(w.ops)
			w.ops = append(w.ops, o)
		}
	}
	if len(w.ops) >= s.maxRows || (s.interval > 0 && time.Since(w.last) >= s.interval) {
		return w.flush(ctx)
	}
	return nil
}

func pick(vals []types.Value, idx []int) []types.Value {
	out := make([]types.Value, len(idx))
	for j, i := range idx {
		out[j] = vals[i]
	}
	return out
}

func (w *writer) all(r *types.Row) []any {
	p := make([]any, len(w.s.cols))
	for j := range w.s.cols {
		p[j] = w.text(&r.Values[j], &w.s.cols[j])
	}
	return p
}

// Flush implements weir.FlushingWriter: the buffered changes are written
// before the checkpoint completes.
func (w *writer) Flush(ctx context.Context, _ int64) error { return w.flush(ctx) }

const maxParams = 65535

func (w *writer) flush(ctx context.Context) error {
	w.last = time.Now()
	if len(w.ops) == 0 {
		return nil
	}
	s := w.s
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("table '%s': %w", s.name, err)
	}
	defer tx.Rollback(ctx)
	var dels, ups [][]any
	for _, o := range w.ops {
		if o.del {
			dels = append(dels, o.params)
		} else {
			ups = append(ups, o.params)
		}
	}
	if err := w.exec(ctx, tx, dels, true); err != nil {
		return err
	}
	if err := w.exec(ctx, tx, ups, false); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("table '%s': commit: %w", s.name, err)
	}
	w.ops = w.ops[:0]
	clear(w.byKey)
	return nil
}

// exec runs the deletes or the upserts (inserts) in statements of many
// rows each.
func (w *writer) exec(ctx context.Context, tx pgx.Tx, rows [][]any, del bool) error {
	s := w.s
	if len(rows) == 0 {
		return nil
	}
	cols := make([]int, 0, len(s.cols))
	if del {
		cols = append(cols, s.pk...)
	} else {
		for i := range s.cols {
			cols = append(cols, i)
		}
	}
	per := max(1, maxParams/len(cols))
	for start := 0; start < len(rows); start += per {
		chunk := rows[start:min(start+per, len(rows))]
		var b strings.Builder
		args := make([]any, 0, len(chunk)*len(cols))
		tuple := func(n int) {
			b.WriteByte('(')
			for j, c := range cols {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "$%d%s", n+j+1, s.cols[c].cast)
			}
			b.WriteByte(')')
		}
		names := func(idx []int) string {
			var ns []string
			for _, i := range idx {
				ns = append(ns, s.cols[i].name)
			}
			return strings.Join(ns, ",")
		}
		if del {
			fmt.Fprintf(&b, "DELETE FROM %s WHERE (%s) IN (", s.table, names(s.pk))
		} else {
			fmt.Fprintf(&b, "INSERT INTO %s (%s) VALUES ", s.table, names(cols))
		}
		for i, r := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			tuple(len(args))
			args = append(args, r...)
		}
		if del {
			b.WriteByte(')')
		} else if len(s.pk) > 0 {
			fmt.Fprintf(&b, " ON CONFLICT (%s) DO ", names(s.pk))
			var set []string
			isKey := map[int]bool{}
			for _, k := range s.pk {
				isKey[k] = true
			}
			for i, c := range s.cols {
				if !isKey[i] {
					set = append(set, c.name+" = EXCLUDED."+c.name)
				}
			}
			if len(set) == 0 {
				b.WriteString("NOTHING")
			} else {
				b.WriteString("UPDATE SET " + strings.Join(set, ", "))
			}
		}
		if _, err := tx.Exec(ctx, b.String(), args...); err != nil {
			what := "upsert into"
			if del {
				what = "delete from"
			} else if len(s.pk) == 0 {
				what = "insert into"
			}
			return fmt.Errorf("table '%s': %s %s: %w", s.name, what, s.table, err)
		}
	}
	return nil
}

func (w *writer) Close(ctx context.Context) error { return w.conn.Close(ctx) }
