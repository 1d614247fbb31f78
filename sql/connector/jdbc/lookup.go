package jdbc

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// CreateLookup implements connector.LookupFactory: a lookup join's
// dimension table, one SELECT ... WHERE key = $n per probe row (a prepared
// statement per subtask's connection), with Flink's options
// 'lookup.cache.max-rows', 'lookup.cache.ttl',
// 'lookup.cache.caching-missing-key' and 'lookup.max-retries' (default 3:
// a failed query reconnects and retries that many times before it fails
// the job).
func (Factory) CreateLookup(t *connector.Table, keys []int) (*connector.LookupSource, error) {
	o := connector.NewOptions(t)
	rawURL := o.Required("url")
	table := o.Required("table-name")
	user, password := o.String("username", ""), o.String("password", "")
	o.String("driver", "")
	o.Int("scan.fetch-size", 1000)
	maxRows, ttl, missing := connector.LookupCacheOptions(o)
	retries := int(o.Int("lookup.max-retries", 3))
	if retries < 0 {
		o.Invalid("lookup.max-retries", "must not be negative")
	}
	var dsn string
	if rawURL != "" {
		var err error
		if dsn, err = DSN(rawURL, user, password); err != nil {
			o.Invalid("url", "%v", err)
		}
	}
	var sel []string
	var decs []func([]byte, *types.Value) error
	for _, col := range t.Schema {
		if _, err := pgType(col.Type); err != nil {
			o.Errorf("column '%s': %v", col.Name, err)
			continue
		}
		sel = append(sel, selectExpr(col))
		dec, _ := format.TextDecoder(col.Type)
		decs = append(decs, dec)
	}
	var where []string
	var encs []func([]byte, *types.Value) []byte
	for i, k := range keys {
		col := t.Schema[k]
		pt, err := pgType(col.Type)
		if err != nil {
			continue // reported above
		}
		where = append(where, fmt.Sprintf("%s = $%d::text::%s", quoteIdent(col.Name), i+1, pt))
		encs = append(encs, textEncoder(col.Type))
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	query := fmt.Sprintf("SELECT %s FROM %s WHERE %s", strings.Join(sel, ", "), quoteTable(table), strings.Join(where, " AND "))
	lk := &lookup{dsn: dsn, name: t.Name, query: query, decs: decs, encs: encs, retries: retries}
	return &connector.LookupSource{Open: func(ctx context.Context) (connector.LookupClient, error) {
		c := &lookupClient{l: lk}
		if err := c.connect(ctx); err != nil {
			return nil, err
		}
		return connector.CachedLookup(c, maxRows, ttl, missing, time.Now), nil
	}}, nil
}

// selectExpr reads a column as text the scan's decoders understand.
func selectExpr(col types.Field) string {
	name := quoteIdent(col.Name)
	switch col.Type.Kind {
	case types.Binary, types.Varbinary:
		return "translate(encode(" + name + ", 'base64'), E'\\n', '')"
	case types.TimestampLTZ:
		return "to_char(" + name + " AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US')"
	}
	return name + "::text"
}

func textEncoder(t types.Type) func([]byte, *types.Value) []byte {
	if t.Kind == types.Binary || t.Kind == types.Varbinary {
		return func(dst []byte, v *types.Value) []byte {
			return hex.AppendEncode(append(dst, `\x`...), []byte(v.S))
		}
	}
	enc, _ := format.TextEncoder(t, ' ')
	return enc
}

type lookup struct {
	dsn, name, query string
	decs             []func([]byte, *types.Value) error
	encs             []func([]byte, *types.Value) []byte
	retries          int
}

type lookupClient struct {
	l    *lookup
	conn *pgx.Conn
	args []any
	buf  []byte
}

const lookupStmt = "weir_lookup"

func (c *lookupClient) connect(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, c.l.dsn)
	if err != nil {
		return fmt.Errorf("table '%s': connecting to PostgreSQL: %w", c.l.name, err)
	}
	if _, err := conn.Exec(ctx, "SET TIME ZONE 'UTC'", pgx.QueryExecModeSimpleProtocol); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("table '%s': %w", c.l.name, err)
	}
	if _, err := conn.Prepare(ctx, lookupStmt, c.l.query); err != nil {
		conn.Close(ctx)
		return fmt.Errorf("table '%s': preparing the lookup query: %w", c.l.name, err)
	}
	c.conn = conn
	return nil
}

func (c *lookupClient) Lookup(ctx context.Context, key []types.Value) ([]types.Row, error) {
	c.args = c.args[:0]
	for i := range key {
		c.buf = c.l.encs[i](c.buf[:0], &key[i])
		c.args = append(c.args, string(c.buf))
	}
	var err error
	for attempt := 0; attempt <= c.l.retries; attempt++ {
		if c.conn == nil {
			if err = c.connect(ctx); err != nil {
				continue
			}
		}
		var rows []types.Row
		if rows, err = c.query(ctx); err == nil {
			return rows, nil
		}
		if ctx.Err() != nil {
			break
		}
		// a broken connection is replaced on the next attempt
		c.conn.Close(ctx)
		c.conn = nil
	}
	return nil, fmt.Errorf("table '%s': lookup: %w", c.l.name, err)
}

func (c *lookupClient) query(ctx context.Context) ([]types.Row, error) {
	rows, err := c.conn.Query(ctx, lookupStmt, c.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []types.Row
	for rows.Next() {
		raw := rows.RawValues()
		vals := make([]types.Value, len(c.l.decs))
		for i, b := range raw {
			if b == nil {
				vals[i] = types.NullValue
				continue
			}
			if err := c.l.decs[i](b, &vals[i]); err != nil {
				return nil, fmt.Errorf("column %d: %v", i+1, err)
			}
		}
		out = append(out, types.Row{Kind: types.Insert, Values: vals})
	}
	return out, rows.Err()
}

func (c *lookupClient) Close() error {
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close(context.Background())
	c.conn = nil
	return err
}
