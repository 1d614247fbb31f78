package jdbc

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// CreateSource implements connector.SourceFactory: a bounded scan of the
// table, as Flink's JDBC scan source: one split, the rows of one snapshot
// (a REPEATABLE READ transaction) in the order of the primary key (or of
// all the columns), fetched through a cursor 'scan.fetch-size' rows at a
// time (default 1000). A checkpoint keeps the number of rows read; a
// restore reads the table again and skips them, which is exact if the
// table did not change meanwhile.
func (Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	rawURL := o.Required("url")
	table := o.Required("table-name")
	user, password := o.String("username", ""), o.String("password", "")
	o.String("driver", "")
	fetch := o.Int("scan.fetch-size", 1000)
	// a table that lookup joins use may be scanned too
	connector.LookupCacheOptions(o)
	o.Int("lookup.max-retries", 3)
	if fetch <= 0 {
		o.Invalid("scan.fetch-size", "must be positive")
	}
	var dsn string
	if rawURL != "" {
		var err error
		if dsn, err = DSN(rawURL, user, password); err != nil {
			o.Invalid("url", "%v", err)
		}
	}
	var sel, order []string
	var decs []func([]byte, *types.Value) error
	for _, col := range t.Schema {
		if _, err := pgType(col.Type); err != nil {
			o.Errorf("column '%s': %v", col.Name, err)
			continue
		}
		name := quoteIdent(col.Name)
		expr := name + "::text"
		switch col.Type.Kind {
		case types.Binary, types.Varbinary:
			expr = "translate(encode(" + name + ", 'base64'), E'\\n', '')"
		case types.TimestampLTZ:
			// The session is in UTC: the text is the instant without its zone.
			expr = "to_char(" + name + " AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
		}
		sel = append(sel, expr)
		dec, _ := format.TextDecoder(col.Type)
		decs = append(decs, dec)
	}
	for _, k := range t.PrimaryKey {
		order = append(order, quoteIdent(t.Schema[k].Name))
	}
	if len(order) == 0 {
		for i := range t.Schema {
			order = append(order, fmt.Sprint(i+1))
		}
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	query := fmt.Sprintf("SELECT %s FROM %s ORDER BY %s", strings.Join(sel, ", "), quoteTable(table), strings.Join(order, ", "))
	src := &scan{dsn: dsn, name: t.Name, query: query, decs: decs, fetch: int(fetch)}
	return &connector.Source{Source: src, Bounded: true, Changelog: types.InsertOnly, Options: t.Settings.SourceOptions()}, nil
}

type scan struct {
	dsn, name, query string
	decs             []func([]byte, *types.Value) error
	fetch            int
}

type scanSplit struct{}

func (scanSplit) ID() string { return "table" }

var _ weir.RestorableSource[types.Row] = (*scan)(nil)

func (s *scan) Splits(context.Context) ([]weir.Split, error) { return []weir.Split{scanSplit{}}, nil }

func (s *scan) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[types.Row], error) {
	return s.OpenAt(ctx, sp, nil)
}

func (s *scan) OpenAt(ctx context.Context, _ weir.Split, pos []byte) (weir.SplitReader[types.Row], error) {
	var skip int64
	if pos != nil {
		v, n := binary.Uvarint(pos)
		if n <= 0 {
			return nil, fmt.Errorf("table '%s': invalid checkpointed position", s.name)
		}
		skip = int64(v)
	}
	conn, err := pgx.Connect(ctx, s.dsn)
	if err != nil {
		return nil, fmt.Errorf("table '%s': connecting to PostgreSQL: %w", s.name, err)
	}
	r := &scanReader{s: s, conn: conn, read: skip}
	fail := func(err error) (weir.SplitReader[types.Row], error) {
		conn.Close(ctx)
		return nil, fmt.Errorf("table '%s': %w", s.name, err)
	}
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'UTC'", pgx.QueryExecModeSimpleProtocol); err != nil {
		return fail(err)
	}
	if r.tx, err = conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}); err != nil {
		return fail(err)
	}
	q := s.query
	if skip > 0 {
		q += fmt.Sprintf(" OFFSET %d", skip)
	}
	if _, err := r.tx.Exec(ctx, "DECLARE weir_scan NO SCROLL CURSOR FOR "+q, pgx.QueryExecModeSimpleProtocol); err != nil {
		return fail(err)
	}
	return r, nil
}

type scanReader struct {
	s    *scan
	conn *pgx.Conn
	tx   pgx.Tx
	read int64
	eof  bool
}

func (r *scanReader) Read(ctx context.Context, dst []types.Row) (int, error) {
	if r.eof {
		return 0, io.EOF
	}
	s := r.s
	rows, err := r.tx.Query(ctx, fmt.Sprintf("FETCH %d FROM weir_scan", min(len(dst), s.fetch)), pgx.QueryExecModeSimpleProtocol)
	if err != nil {
		return 0, fmt.Errorf("table '%s': %w", s.name, err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		raw := rows.RawValues()
		vals := make([]types.Value, len(s.decs))
		for i, b := range raw {
			if b == nil {
				vals[i] = types.NullValue
				continue
			}
			if err := s.decs[i](b, &vals[i]); err != nil {
				return n, fmt.Errorf("table '%s': row %d, column %d: %v", s.name, r.read+int64(n)+1, i+1, err)
			}
		}
		dst[n] = types.Row{Kind: types.Insert, Values: vals}
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("table '%s': %w", s.name, err)
	}
	r.read += int64(n)
	if n < min(len(dst), s.fetch) {
		r.eof = true
		return n, io.EOF
	}
	return n, nil
}

func (r *scanReader) Position() ([]byte, error) {
	return binary.AppendUvarint(nil, uint64(r.read)), nil
}

func (r *scanReader) Close() error {
	ctx := context.Background()
	r.tx.Rollback(ctx)
	return r.conn.Close(ctx)
}
