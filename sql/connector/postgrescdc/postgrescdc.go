// Package postgrescdc is the SQL table source 'postgres-cdc': a
// PostgreSQL table's rows and then its changes, read through a logical
// replication slot by connector/postgres's CDC source, with Flink CDC's
// option names:
//
//	'hostname', 'port' (5432), 'username', 'password', 'database-name',
//	'schema-name' (public), 'table-name' (required; both regular
//	expressions matched entirely), 'slot.name' (required, one per job),
//	'decoding.plugin.name' (pgoutput only), 'debezium.publication.name'
//	(default: the slot's name), 'debezium.publication.autocreate.mode'
//	(filtered, all_tables or disabled), 'scan.startup.mode' (initial or
//	latest-offset), 'debezium.slot.max.retries' (6) and
//	'debezium.slot.retry.delay.ms' (10000: how long to wait for a slot
//	that another connection still holds, as Debezium does),
//	'changelog-mode' (all or upsert; see below),
//
// and one that is weir's only: 'dsn', a libpq connection string or URL used
// instead of hostname, port, username, password and database-name.
//
// # Rows
//
// Rows are typed by the table's declared columns, found in PostgreSQL by
// name (exactly, else ignoring case); PostgreSQL columns that are not
// declared are not read. A declared column missing in PostgreSQL, or a
// PostgreSQL type the declared type cannot hold, fails the job at the
// table's first row, naming the table and the column. The type mapping
// (docs/sql-connectors.md has the table): smallint, integer, bigint to
// SMALLINT/INT/BIGINT (or wider); numeric (and the integers) to DECIMAL(p,
// s) exactly (a value with more fractional digits than s, or more than p
// digits, is an error, never rounded); real, double precision to
// FLOAT/DOUBLE; text, varchar, char, uuid, json, jsonb, xml, inet and
// user-defined types (enums, domains, citext) to STRING/VARCHAR/CHAR as
// their text; boolean; bytea to BYTES; date; time; timestamp to TIMESTAMP
// and timestamptz to TIMESTAMP_LTZ, in microseconds; one-dimensional
// arrays of those to ARRAY.
//
// # Changelog
//
// With 'changelog-mode' = 'upsert' — the default when the table declares a
// PRIMARY KEY — the source produces an upsert changelog keyed by that key
// (+I, +U, and -D carrying the key), and the planner puts Flink's
// ChangelogNormalize after it: an operator that keeps the last row of each
// key in keyed state (checkpointed) and turns the stream into the full
// changelog (+I, -U old, +U new, -D old). This is what makes the default
// REPLICA IDENTITY work: PostgreSQL then sends no before-image for an
// update and only the key for a delete (or for an update that changes the
// key, which becomes a -D of the old key). The declared PRIMARY KEY must
// be PostgreSQL's replica identity (its primary key, normally).
//
// With 'changelog-mode' = 'all' — the default without a PRIMARY KEY, and
// Flink CDC's default — the source produces PostgreSQL's changes as they
// come (+I, -U, +U, -D with full before-images) and needs no state; that
// is only correct with REPLICA IDENTITY FULL, so the job fails on the
// first change of a table without it, saying so.
//
// TRUNCATE is not a row change and is skipped (as Flink CDC does); an
// update that leaves a large (TOASTed) value unchanged does not carry it
// under the default REPLICA IDENTITY, which fails the job naming the
// column: use REPLICA IDENTITY FULL for such tables.
//
// Import package sql/connector/builtin to register this connector with the
// others.
package postgrescdc

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unsafe"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

func init() { connector.Register(Factory{}) }

// Factory is the 'postgres-cdc' connector.
type Factory struct{}

// Identifier implements connector.Factory.
func (Factory) Identifier() string { return "postgres-cdc" }

// cdcOptions are the options handed to postgres.FromOptions.
var cdcOptions = postgres.CDCOptionNames()

// CreateSource implements connector.SourceFactory.
func (Factory) CreateSource(t *connector.Table) (*connector.Source, error) {
	o := connector.NewOptions(t)
	opts := map[string]string{}
	for _, k := range cdcOptions {
		if v, ok := o.Lookup(k); ok {
			opts[k] = v
		}
	}
	o.Required("table-name")
	o.Required("slot.name")
	def := "all"
	if len(t.PrimaryKey) > 0 {
		def = "upsert"
	}
	mode := o.Enum("changelog-mode", def, "all", "upsert")
	if mode == "upsert" && len(t.PrimaryKey) == 0 {
		o.Invalid("changelog-mode", "needs a PRIMARY KEY (...) NOT ENFORCED, the key the changes are normalized by")
	}
	for _, col := range t.Schema {
		if !supported(col.Type) {
			o.Errorf("column '%s': type %s cannot be read from PostgreSQL", col.Name, col.Type)
		}
	}
	if err := o.Err(); err != nil {
		return nil, err
	}
	cfg, err := postgres.FromOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("table '%s' (connector 'postgres-cdc'): %w", t.Name, err)
	}
	d := &decoder{table: t.Name, schema: t.Schema, pk: t.PrimaryKey, upsert: mode == "upsert", plans: map[*string]*relPlan{}}
	s := &source{inner: postgres.CDC(cfg, d.decode), upsert: d.upsert, pk: t.PrimaryKey}
	changelog := types.All
	if d.upsert {
		changelog = types.Upsert
	}
	// One slot is one split, read by one subtask whatever the parallelism.
	return &connector.Source{Source: s, Changelog: changelog, Options: t.Settings.SourceOptions()}, nil
}

// source adapts the CDC source's weir.Change rows to rows carrying their
// kind.
type source struct {
	inner  *postgres.CDCSource[types.Row]
	upsert bool
	pk     []int
}

var _ weir.RestorableSource[types.Row] = (*source)(nil)

// Splits implements weir.Source.
func (s *source) Splits(ctx context.Context) ([]weir.Split, error) { return s.inner.Splits(ctx) }

// Open implements weir.Source.
func (s *source) Open(ctx context.Context, split weir.Split) (weir.SplitReader[types.Row], error) {
	r, err := s.inner.Open(ctx, split)
	if err != nil {
		return nil, err
	}
	return &reader{s: s, in: r}, nil
}

// OpenAt implements weir.RestorableSource.
func (s *source) OpenAt(ctx context.Context, split weir.Split, pos []byte) (weir.SplitReader[types.Row], error) {
	r, err := s.inner.OpenAt(ctx, split, pos)
	if err != nil {
		return nil, err
	}
	return &reader{s: s, in: r}, nil
}

type reader struct {
	s   *source
	in  weir.SplitReader[weir.Change[types.Row]]
	buf []weir.Change[types.Row]
}

// Read implements weir.SplitReader. Every change the inner reader hands
// out is consumed here, so the inner reader's position stays the
// checkpoint's.
func (r *reader) Read(ctx context.Context, dst []types.Row) (int, error) {
	if cap(r.buf) < len(dst) {
		r.buf = make([]weir.Change[types.Row], len(dst))
	}
	buf := r.buf[:len(dst)]
	n, err := r.in.Read(ctx, buf)
	k := 0
	for i := 0; i < n; i++ {
		c := &buf[i]
		row := c.Value
		switch c.Kind {
		case weir.Insert:
			row.Kind = types.Insert
		case weir.UpdateAfter:
			row.Kind = types.UpdateAfter
		case weir.Delete:
			row.Kind = types.Delete
		case weir.UpdateBefore:
			row.Kind = types.UpdateBefore
			if r.s.upsert {
				// An upsert stream has no -U: the after-image that follows
				// upserts the key. When the key changed (or the pair is
				// split across two reads) the old key is deleted instead.
				if i+1 < n && buf[i+1].Kind == weir.UpdateAfter && sameKey(row.Values, buf[i+1].Value.Values, r.s.pk) {
					continue
				}
				row.Kind = types.Delete
			}
		}
		dst[k] = row
		k++
	}
	clear(buf[:n])
	return k, err
}

func sameKey(a, b []types.Value, pk []int) bool {
	for _, i := range pk {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}

// Position implements weir.CheckpointedReader.
func (r *reader) Position() ([]byte, error) {
	return r.in.(weir.CheckpointedReader[weir.Change[types.Row]]).Position()
}

// NotifyCheckpointComplete implements weir.CheckpointListener: the slot is
// acknowledged up to the completed checkpoint.
func (r *reader) NotifyCheckpointComplete(ctx context.Context, id int64, pos []byte) error {
	if l, ok := r.in.(weir.CheckpointListener); ok {
		return l.NotifyCheckpointComplete(ctx, id, pos)
	}
	return nil
}

// Close implements weir.SplitReader.
func (r *reader) Close() error { return r.in.Close() }

// decoder turns a CDC record into a row of the declared schema.
type decoder struct {
	table  string
	schema types.Schema
	pk     []int
	upsert bool

	mu    sync.Mutex
	plans map[*string]*relPlan // by the relation's column slice
}

// relPlan is how the records of one relation (as last described by
// PostgreSQL) are decoded.
type relPlan struct {
	idx   []int     // per declared column, its index in the record
	parse []parseFn // per declared column
	full  bool      // REPLICA IDENTITY FULL: every column is in the identity
	pkID  bool      // every declared key column is in the identity
}

func (d *decoder) plan(r *postgres.Record) (*relPlan, error) {
	cols := r.Columns()
	var id *string
	if len(cols) > 0 {
		id = unsafe.SliceData(cols)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.plans[id]; ok {
		return p, nil
	}
	p := &relPlan{full: true, pkID: true}
	for j := range cols {
		if !r.Key(j) {
			p.full = false
		}
	}
	for _, f := range d.schema {
		j := r.Index(f.Name)
		if j < 0 {
			for k, c := range cols {
				if strings.EqualFold(c, f.Name) {
					j = k
					break
				}
			}
		}
		if j < 0 {
			return nil, fmt.Errorf("table '%s': column '%s' does not exist in PostgreSQL table %s (its columns: %s)",
				d.table, f.Name, r.QualifiedTable(), strings.Join(cols, ", "))
		}
		parse, err := converter(f.Type, r.TypeOID(j))
		if err != nil {
			return nil, fmt.Errorf("table '%s': column '%s' is %s, but %s.%s is %s in PostgreSQL, which cannot be read as %s",
				d.table, f.Name, f.Type, r.QualifiedTable(), cols[j], typeName(r.TypeOID(j)), f.Type)
		}
		p.idx, p.parse = append(p.idx, j), append(p.parse, parse)
	}
	for _, k := range d.pk {
		if !r.Key(p.idx[k]) {
			p.pkID = false
		}
	}
	d.plans[id] = p
	return p, nil
}

func (d *decoder) decode(r *postgres.Record) (types.Row, error) {
	if r.Truncate {
		return types.Row{}, postgres.ErrSkip
	}
	p, err := d.plan(r)
	if err != nil {
		return types.Row{}, err
	}
	if !r.Snapshot {
		switch {
		case !d.upsert && !p.full:
			return types.Row{}, fmt.Errorf("table '%s': PostgreSQL table %s does not have REPLICA IDENTITY FULL, so its updates and deletes come without the old row, which 'changelog-mode' = 'all' needs: run ALTER TABLE %s REPLICA IDENTITY FULL, or declare the PRIMARY KEY (which makes the changelog mode 'upsert')",
				d.table, r.QualifiedTable(), r.QualifiedTable())
		case d.upsert && r.KeyOnly && !p.pkID:
			return types.Row{}, fmt.Errorf("table '%s': the declared PRIMARY KEY is not the replica identity of PostgreSQL table %s (a delete carries only the identity's columns): declare its primary key, or set REPLICA IDENTITY FULL",
				d.table, r.QualifiedTable())
		}
	}
	vals := make([]types.Value, len(d.schema))
	for i, j := range p.idx {
		switch {
		case r.Null(j):
			if d.schema[i].Type.NotNull && !r.KeyOnly {
				return types.Row{}, fmt.Errorf("table '%s': column '%s' is declared NOT NULL, but %s.%s is NULL", d.table, d.schema[i].Name, r.QualifiedTable(), r.Columns()[j])
			}
			vals[i] = types.NullValue
		case r.Unchanged(j):
			return types.Row{}, fmt.Errorf("table '%s': column '%s': an update left its large (TOASTed) value unchanged and PostgreSQL did not send it: run ALTER TABLE %s REPLICA IDENTITY FULL",
				d.table, d.schema[i].Name, r.QualifiedTable())
		default:
			v, err := p.parse[i](r.Text(j))
			if err != nil {
				return types.Row{}, fmt.Errorf("table '%s': column '%s' (%s.%s): %w", d.table, d.schema[i].Name, r.QualifiedTable(), r.Columns()[j], err)
			}
			vals[i] = v
		}
	}
	return types.Row{Values: vals}, nil
}
