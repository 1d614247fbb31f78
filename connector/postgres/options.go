package postgres

import (
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Table names the target table of a sink and the columns it writes.
type Table struct {
	// Name is the table, "name" (found through the search_path) or
	// "schema.name". Names are taken as written (quoted), so they are case
	// sensitive and may not contain dots.
	Name string
	// Key are the columns that identify a row. Upsert needs them, and a
	// unique index (or primary key) on exactly these columns. Transactional
	// sinks with a Key replace the row with that key; without a Key they
	// append.
	Key []string
	// Columns are the other columns written. The row functions return the
	// values of Key then Columns, in this order.
	Columns []string
}

// Option configures a sink (Name, PositionColumn, StagingTable,
// BookkeepingTable, FlushRows).
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	name        string // sink name, in the bookkeeping and staging tables
	position    string
	staging     string
	bookkeeping string
	flushRows   int
}

// Name names the sink in the bookkeeping and staging tables of a
// Transactional sink and in the application_name of its connections
// (default: the table name). Two sinks writing to the same table, in one job
// or in two, need different names.
func Name(name string) Option { return optionFunc(func(c *config) { c.name = name }) }

// PositionColumn is the column of an Upsert sink that stores the position
// of the last update applied to each row (default "weir_position"; a
// bigint column).
func PositionColumn(column string) Option {
	return optionFunc(func(c *config) { c.position = column })
}

// StagingTable is the table in which a Transactional sink stages the rows
// of checkpoints that are not committed yet (default: the target table's
// name with "_weir_staging" appended, in the same schema). It is created if
// missing.
func StagingTable(name string) Option { return optionFunc(func(c *config) { c.staging = name }) }

// BookkeepingTable is the table in which a Transactional sink records each
// commit (default "weir_commits", through the search_path). It is created
// if missing.
func BookkeepingTable(name string) Option {
	return optionFunc(func(c *config) { c.bookkeeping = name })
}

// FlushRows makes a writer send its buffered rows to PostgreSQL once it
// holds n of them (default 5000), besides at every checkpoint.
func FlushRows(n int) Option { return optionFunc(func(c *config) { c.flushRows = n }) }

func newConfig(t Table, opts []Option) (config, error) {
	c := config{position: "weir_position", bookkeeping: "weir_commits", flushRows: 5000}
	for _, o := range opts {
		o.apply(&c)
	}
	if _, err := ident(t.Name); err != nil {
		return c, err
	}
	if c.name == "" {
		c.name = t.Name
	}
	if c.staging == "" {
		c.staging = t.Name + "_weir_staging"
	}
	if c.flushRows < 1 {
		return c, fmt.Errorf("postgres: FlushRows(%d): must be at least 1", c.flushRows)
	}
	seen := map[string]bool{}
	for _, col := range append(append([]string{}, t.Key...), t.Columns...) {
		if col == "" {
			return c, fmt.Errorf("postgres: table %s: empty column name", t.Name)
		}
		if seen[col] {
			return c, fmt.Errorf("postgres: table %s: column %q is named twice in Key and Columns", t.Name, col)
		}
		seen[col] = true
	}
	if len(seen) == 0 {
		return c, fmt.Errorf("postgres: table %s: no columns to write", t.Name)
	}
	return c, nil
}

// ident parses a table name, "name" or "schema.name".
func ident(name string) (pgx.Identifier, error) {
	parts := strings.Split(name, ".")
	if name == "" || len(parts) > 2 || slicesContainsEmpty(parts) {
		return nil, fmt.Errorf("postgres: table name %q: want \"name\" or \"schema.name\"", name)
	}
	for _, p := range parts {
		if len(p) > 63 {
			return nil, fmt.Errorf("postgres: table name %q: %q is longer than PostgreSQL's 63 bytes", name, p)
		}
	}
	return pgx.Identifier(parts), nil
}

func slicesContainsEmpty(s []string) bool {
	for _, x := range s {
		if x == "" {
			return true
		}
	}
	return false
}

// quoteAll quotes column names and joins them with ", ", each prefixed
// with prefix (an alias and a dot, or "").
func quoteAll(prefix string, cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(prefix)
		b.WriteString(pgx.Identifier{c}.Sanitize())
	}
	return b.String()
}

// setExcluded is "c1 = excluded.c1, c2 = excluded.c2".
func setExcluded(cols []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		q := pgx.Identifier{c}.Sanitize()
		b.WriteString(q + " = excluded." + q)
	}
	return b.String()
}
