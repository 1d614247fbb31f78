package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// connect opens a connection named after the sink (application_name), so
// that an operator can find the sink's sessions in pg_stat_activity.
func connect(ctx context.Context, dsn, app string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: connection string: %w", err)
	}
	if _, set := cfg.RuntimeParams["application_name"]; !set {
		if len(app) > 63 {
			app = app[:63]
		}
		cfg.RuntimeParams["application_name"] = app
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect to %s:%d: %w", cfg.Host, cfg.Port, err)
	}
	return conn, nil
}

// tableInfo is what the sinks check of a table: its columns with their
// types, and its unique indexes.
type tableInfo struct {
	name    string            // as the user wrote it, for errors
	quoted  string            // sanitized, for SQL
	columns map[string]string // name -> type (format_type)
	unique  [][]string        // column sets of unique, non-partial indexes (sorted)
}

// describe loads the columns and unique indexes of a table, failing with
// an error that names it when it does not exist.
func describe(ctx context.Context, conn *pgx.Conn, name string) (*tableInfo, error) {
	id, err := ident(name)
	if err != nil {
		return nil, err
	}
	t := &tableInfo{name: name, quoted: id.Sanitize(), columns: map[string]string{}}
	var oid *uint32
	if err := conn.QueryRow(ctx, "SELECT to_regclass($1)::oid", t.quoted).Scan(&oid); err != nil {
		return nil, fmt.Errorf("postgres: look up table %s: %w", name, err)
	}
	if oid == nil {
		return nil, fmt.Errorf("postgres: table %s does not exist", name)
	}
	rows, err := conn.Query(ctx, `SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
		WHERE attrelid = $1 AND attnum > 0 AND NOT attisdropped`, *oid)
	if err != nil {
		return nil, fmt.Errorf("postgres: columns of table %s: %w", name, err)
	}
	for rows.Next() {
		var col, typ string
		if err := rows.Scan(&col, &typ); err != nil {
			return nil, fmt.Errorf("postgres: columns of table %s: %w", name, err)
		}
		t.columns[col] = typ
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: columns of table %s: %w", name, err)
	}
	rows, err = conn.Query(ctx, `SELECT (SELECT array_agg(a.attname::text ORDER BY a.attname) FROM pg_attribute a
			WHERE a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey::int2[]))
		FROM pg_index i WHERE i.indrelid = $1 AND i.indisunique AND i.indpred IS NULL AND 0 <> ALL(i.indkey::int2[])`, *oid)
	if err != nil {
		return nil, fmt.Errorf("postgres: indexes of table %s: %w", name, err)
	}
	for rows.Next() {
		var cols []string
		if err := rows.Scan(&cols); err != nil {
			return nil, fmt.Errorf("postgres: indexes of table %s: %w", name, err)
		}
		t.unique = append(t.unique, cols)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: indexes of table %s: %w", name, err)
	}
	return t, nil
}

// need checks that the table has the columns.
func (t *tableInfo) need(cols ...string) error {
	var missing []string
	for _, c := range cols {
		if _, ok := t.columns[c]; !ok {
			missing = append(missing, fmt.Sprintf("%q", c))
		}
	}
	if len(missing) > 0 {
		have := make([]string, 0, len(t.columns))
		for c := range t.columns {
			have = append(have, c)
		}
		slices.Sort(have)
		return fmt.Errorf("postgres: table %s has no column %s (it has %s)", t.name, strings.Join(missing, ", "), strings.Join(have, ", "))
	}
	return nil
}

// needUnique checks that a unique index covers exactly the key columns,
// which INSERT ... ON CONFLICT (key) needs.
func (t *tableInfo) needUnique(key []string) error {
	want := slices.Sorted(slices.Values(key))
	for _, u := range t.unique {
		if slices.Equal(u, want) {
			return nil
		}
	}
	return fmt.Errorf("postgres: table %s has no primary key or unique index on exactly the key columns (%s)", t.name, strings.Join(key, ", "))
}

// ddlLock serialises the sinks' CREATE TABLEs across writers and
// processes (CREATE TABLE IF NOT EXISTS races in PostgreSQL).
const ddlLock = "SELECT pg_advisory_xact_lock(hashtext('weir connector/postgres ddl'))"

// ensureBookkeeping creates the bookkeeping table if it is missing and
// checks its columns.
func ensureBookkeeping(ctx context.Context, conn *pgx.Conn, name string) error {
	id, err := ident(name)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, ddlLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+id.Sanitize()+` (
			sink text NOT NULL,
			subtask integer NOT NULL,
			checkpoint bigint NOT NULL,
			writer text NOT NULL,
			first_seq bigint NOT NULL,
			rows bigint NOT NULL,
			committed_at timestamptz NOT NULL DEFAULT now(),
			PRIMARY KEY (sink, writer, first_seq))`)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: create bookkeeping table %s: %w", name, err)
	}
	t, err := describe(ctx, conn, name)
	if err != nil {
		return err
	}
	if err := t.need("sink", "subtask", "checkpoint", "writer", "first_seq", "rows"); err != nil {
		return fmt.Errorf("%w: not a bookkeeping table of this sink", err)
	}
	return t.needUnique([]string{"sink", "writer", "first_seq"})
}

// Columns of the staging table besides the target's.
var stagingCols = []string{"weir_sink", "weir_subtask", "weir_writer", "weir_seq"}

// ensureStaging creates the staging table of a transactional sink if it is
// missing: the target's columns (same types) plus stagingCols, keyed by
// (weir_sink, weir_writer, weir_seq). It checks an existing one.
func ensureStaging(ctx context.Context, conn *pgx.Conn, target *tableInfo, name string, cols []string) error {
	id, err := ident(name)
	if err != nil {
		return err
	}
	for _, c := range stagingCols {
		if slices.Contains(cols, c) {
			return fmt.Errorf("postgres: table %s: column %q clashes with a column of the staging table %s", target.name, c, name)
		}
	}
	q := id.Sanitize()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, ddlLock); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", q).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		if _, err := tx.Exec(ctx, "CREATE TABLE "+q+" AS SELECT "+quoteAll("", cols)+" FROM "+target.quoted+" WITH NO DATA"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "ALTER TABLE "+q+` ADD COLUMN weir_sink text NOT NULL, ADD COLUMN weir_subtask integer NOT NULL,
			ADD COLUMN weir_writer text NOT NULL, ADD COLUMN weir_seq bigint NOT NULL, ADD PRIMARY KEY (weir_sink, weir_writer, weir_seq)`)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: create staging table %s: %w", name, err)
	}
	st, err := describe(ctx, conn, name)
	if err != nil {
		return err
	}
	if err := st.need(append(append([]string{}, cols...), stagingCols...)...); err != nil {
		return fmt.Errorf("%w: the staging table does not match the sink's columns (drop it when it is empty, or name another with StagingTable)", err)
	}
	for _, c := range cols {
		if st.columns[c] != target.columns[c] {
			return fmt.Errorf("postgres: column %q is %s in staging table %s but %s in table %s (drop the staging table when it is empty)",
				c, st.columns[c], name, target.columns[c], target.name)
		}
	}
	return nil
}
