package postgres

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// LSN is a position in PostgreSQL's write-ahead log.
type LSN uint64

func (l LSN) String() string { return fmt.Sprintf("%X/%X", uint32(l>>32), uint32(l)) }

// ErrSkip, returned by a CDC decoder, drops the record (a table or an
// operation the job does not want, such as truncates).
var ErrSkip = errors.New("postgres: skip this record")

// relation is a captured table as pgoutput (or the snapshot query)
// describes it.
type relation struct {
	schema, name string
	qualified    string // schema.name
	cols         []string
	oids         []uint32
	key          []bool // part of the replica identity
}

// value states of a column in a Record.
const (
	colText      = 't'
	colNull      = 'n'
	colUnchanged = 'u' // an unchanged TOASTed value pgoutput does not send
)

// Record is one row image of a captured table, handed to a CDC decoder.
// It is valid only during the decoder's call (its bytes are the
// connection's buffers, reused for the next message): copy what you keep.
// Values are in PostgreSQL's text format.
type Record struct {
	rel   *relation
	vals  [][]byte
	state []byte
	tmap  *pgtype.Map

	// LSN is the commit LSN of the record's transaction (0 for rows of the
	// initial snapshot): the records of one transaction share it and go
	// out together, in the transaction's order.
	LSN LSN
	// CommitTime is the transaction's commit time (the snapshot's start
	// for snapshot rows).
	CommitTime time.Time
	// Xid is the transaction id (0 for snapshot rows).
	Xid uint32
	// Snapshot is set for rows of the initial snapshot.
	Snapshot bool
	// KeyOnly is set for the before-image of an update or delete on a
	// table whose REPLICA IDENTITY is not FULL: only the key columns hold
	// values, the others are NULL.
	KeyOnly bool
	// Truncate is set for a TRUNCATE of the table: the record has no
	// values (NumColumns is 0) and comes as a Delete; the consumer clears
	// what it holds of the table (or skips it with ErrSkip).
	Truncate bool
}

// Schema and Table name the record's table.
func (r *Record) Schema() string { return r.rel.schema }

// Table is the record's table, unqualified.
func (r *Record) Table() string { return r.rel.name }

// QualifiedTable is "schema.table".
func (r *Record) QualifiedTable() string { return r.rel.qualified }

// Columns are the table's column names (shared: do not modify).
func (r *Record) Columns() []string { return r.rel.cols }

// NumColumns is the number of values.
func (r *Record) NumColumns() int { return len(r.vals) }

// Index is the position of column name, or -1.
func (r *Record) Index(name string) int {
	for i, c := range r.rel.cols {
		if c == name {
			return i
		}
	}
	return -1
}

// Key reports whether column i is part of the table's replica identity
// (its primary key, unless REPLICA IDENTITY names another index or FULL).
func (r *Record) Key(i int) bool { return r.rel.key[i] }

// TypeOID is the PostgreSQL type OID of column i (as pg_attribute.atttypid:
// 23 for integer, 1700 for numeric, a domain's or an enum's own OID...),
// for decoders that map the columns onto types of their own.
func (r *Record) TypeOID(i int) uint32 { return r.rel.oids[i] }

// Null reports whether column i is NULL.
func (r *Record) Null(i int) bool { return r.state[i] == colNull }

// Unchanged reports whether column i is a TOASTed value that the update
// did not change and pgoutput therefore did not send (REPLICA IDENTITY
// FULL sends it).
func (r *Record) Unchanged(i int) bool { return r.state[i] == colUnchanged }

// Text is column i in PostgreSQL's text format (nil for NULL or an
// unchanged TOASTed value); valid only during the decoder's call.
func (r *Record) Text(i int) []byte {
	if r.state[i] != colText {
		return nil
	}
	return r.vals[i]
}

// String is column i's text as a string ("" for NULL).
func (r *Record) String(i int) string { return string(r.Text(i)) }

// Value decodes column i into its Go value with pgx's type map (int64 for
// bigint, string for text, time.Time for timestamps, pgtype.Numeric for
// numeric...): nil for NULL, Unchanged{} for an unchanged TOASTed value,
// the text as a string for types pgx does not know.
func (r *Record) Value(i int) (any, error) {
	switch r.state[i] {
	case colNull:
		return nil, nil
	case colUnchanged:
		return Unchanged{}, nil
	}
	oid := r.rel.oids[i]
	if t, ok := r.tmap.TypeForOID(oid); ok {
		v, err := t.Codec.DecodeValue(r.tmap, oid, pgtype.TextFormatCode, r.vals[i])
		if err != nil {
			return nil, fmt.Errorf("postgres-cdc: %s column %s: %w", r.rel.qualified, r.rel.cols[i], err)
		}
		return v, nil
	}
	return string(r.vals[i]), nil
}

// Scan decodes column i into dst (a pointer, as pgx's Scan takes).
func (r *Record) Scan(i int, dst any) error {
	var src []byte
	if r.state[i] == colText {
		src = r.vals[i]
	} else if r.state[i] == colUnchanged {
		return fmt.Errorf("postgres-cdc: %s column %s: unchanged TOASTed value not sent (REPLICA IDENTITY FULL sends it)", r.rel.qualified, r.rel.cols[i])
	}
	if err := r.tmap.Scan(r.rel.oids[i], pgtype.TextFormatCode, src, dst); err != nil {
		return fmt.Errorf("postgres-cdc: %s column %s: %w", r.rel.qualified, r.rel.cols[i], err)
	}
	return nil
}

// Unchanged is Value's result for an unchanged TOASTed column.
type Unchanged struct{}

// Row is the ready-made record of CDCRows: a captured row as column names
// and Go values (as Record.Value decodes them). It allocates per record;
// a decoder into your own type (CDC) does not need to.
type Row struct {
	// Table is "schema.table".
	Table string
	// Columns are the column names (shared by the rows of a table: do not
	// modify) and Values their values.
	Columns []string
	Values  []any
	// LSN, CommitTime, KeyOnly and Truncate are the Record's.
	LSN        LSN
	CommitTime time.Time
	KeyOnly    bool
	Truncate   bool
}

// Get returns the value of column name (nil when it is NULL or absent).
func (r Row) Get(name string) any {
	for i, c := range r.Columns {
		if c == name {
			return r.Values[i]
		}
	}
	return nil
}

// DecodeRow is the decoder of CDCRows.
func DecodeRow(r *Record) (Row, error) {
	row := Row{Table: r.rel.qualified, Columns: r.rel.cols, LSN: r.LSN, CommitTime: r.CommitTime, KeyOnly: r.KeyOnly, Truncate: r.Truncate}
	if r.Truncate {
		return row, nil
	}
	row.Values = make([]any, len(r.vals))
	for i := range r.vals {
		v, err := r.Value(i)
		if err != nil {
			return row, err
		}
		row.Values[i] = v
	}
	return row, nil
}
