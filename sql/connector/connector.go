// Package connector is the contract between the SQL planner and the table
// connectors: what a CREATE TABLE ... WITH ('connector' = '...') turns into
// when a query reads or writes the table.
//
// # The contract
//
// The planner describes a table with a Table: its name, its physical
// columns (computed columns and the WATERMARK are the planner's business),
// its primary key, the WITH options as written, and the job's Settings. It
// finds the factory by the 'connector' option (Lookup, or CreateSource /
// CreateSink directly) and gets back:
//
//   - for a read, a Source: a weir.Source[types.Row], whether it is
//     bounded, the changelog mode of its rows (InsertOnly for most,
//     Upsert for upsert-kafka, All for debezium-json), and options the
//     planner passes on to weir.FromSource (the bad-record policy);
//   - for a write, a Sink: a weir.Sink[types.Row] (a weir.CommittingSink
//     when the connector writes exactly once), the changelog mode it
//     accepts, and whether it is exactly-once. The planner refuses a plan
//     whose result updates into a sink that accepts InsertOnly (json and
//     csv formats), naming the operator that updates.
//
// Rows carry their kind (types.Row.Kind); a source of mode InsertOnly sets
// types.Insert on every row. Values follow the layout documented in
// package types, by position in Table.Schema.
//
// Factories register themselves with Register, from an init function, as
// database/sql drivers do. The built-in connectors (filesystem, print,
// blackhole, datagen, nexmark, weir-log, kafka, upsert-kafka, jdbc,
// postgres-cdc) live in sub-packages; importing
// github.com/weirstream/weir/sql/connector/builtin for its side effects
// registers them all.
//
// # Options
//
// Option keys are Flink's, case-sensitive, as written in the WITH clause.
// A factory reads them through an Options, which records every key it asks
// for: after reading, Options.Err reports, naming the table and the
// connector, the required options that are missing, the values that do not
// parse, and the options the factory did not ask for — "unsupported
// options found for 'kafka'", with the list of supported ones — so a typo
// never passes silently. Formats ('format' = 'json', ...) read their
// options from the same Options under their prefix ('json.*', or
// 'value.json.*' for upsert-kafka's value format): see package sql/format.
//
// Factories do no I/O when creating a source or sink beyond cheap checks
// of their options: files, topics and connections are opened when the job
// runs (weir.Source.Splits, weir.Sink.OpenWriter), so planning and EXPLAIN
// never touch the outside world.
package connector

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// Table describes a table to a connector factory.
type Table struct {
	// Name is the table's name as the user wrote it (for messages).
	Name string
	// Schema holds the physical columns, in order: the rows a source
	// produces and a sink receives have one value per column.
	Schema types.Schema
	// PrimaryKey holds the indexes in Schema of the PRIMARY KEY's columns
	// (declared NOT ENFORCED, as Flink requires), or nil.
	PrimaryKey []int
	// PartitionKeys holds the indexes in Schema of the table's PARTITIONED
	// BY columns, in order, or nil. Only a connector that partitions what
	// it writes takes a sink of them (PartitioningFactory).
	PartitionKeys []int
	// Options are the WITH options, keys as written.
	Options map[string]string
	// Settings are the job's settings that connectors need.
	Settings Settings
	// Metadata are the table's metadata columns the connector reads
	// (for a source) or writes (for a sink), as Flink's
	// SupportsReadingMetadata / SupportsWritingMetadata: a source appends
	// one value per entry, in order, after the Schema's values of each
	// row; a sink's rows carry them there. Only a factory that implements
	// MetadataFactory is given any, and only keys it lists, with the
	// types it lists (the planner casts to the column's declared type).
	Metadata []MetadataColumn
}

// MetadataColumn is a metadata key of a connector and its type: the value
// a source reads besides the record's fields (Kafka's 'offset',
// 'timestamp', 'headers'), or one a sink writes besides them.
type MetadataColumn struct {
	Key  string
	Type types.Type
}

// MetadataFactory is implemented by a connector whose tables may declare
// metadata columns (`c TYPE METADATA [FROM 'key'] [VIRTUAL]`).
type MetadataFactory interface {
	Factory
	// ReadableMetadata lists the keys a source reads, with their types.
	ReadableMetadata() []MetadataColumn
	// WritableMetadata lists the keys a sink writes, with their types;
	// a table with a persisted (not VIRTUAL) metadata column of another
	// key cannot be written to.
	WritableMetadata() []MetadataColumn
}

// PartitioningFactory is implemented by a connector whose sinks write the
// rows of a PARTITIONED BY table by partition (Flink's
// SupportsPartitioning: the filesystem connector's directories).
type PartitioningFactory interface {
	Factory
	SupportsPartitioning()
}

// CheckPartitioning refuses a sink of a PARTITIONED BY table whose
// connector does not partition, as Flink does.
func CheckPartitioning(t *Table) error {
	if len(t.PartitionKeys) == 0 {
		return nil
	}
	f, err := Lookup(t)
	if err != nil {
		return err
	}
	if _, ok := f.(PartitioningFactory); !ok {
		return fmt.Errorf("table '%s' is a partitioned table (PARTITIONED BY), but connector '%s' does not write partitions", t.Name, f.Identifier())
	}
	return nil
}

// MetadataKeyError is ResolveMetadata's error for a key the connector
// does not have: Index is the column's in the keys given.
type MetadataKeyError struct {
	Index int
	Err   error
}

func (e *MetadataKeyError) Error() string { return e.Err.Error() }

// ResolveMetadata checks the metadata keys of a table's metadata columns
// (cols names the columns, for messages) against what its connector reads
// (write false) or writes (write true), and returns them with their types;
// an unknown key is a *MetadataKeyError.
func ResolveMetadata(t *Table, keys, cols []string, write bool) ([]MetadataColumn, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	f, err := Lookup(t)
	if err != nil {
		return nil, err
	}
	mf, _ := f.(MetadataFactory)
	var known []MetadataColumn
	if mf != nil {
		known = mf.ReadableMetadata()
		if write {
			known = mf.WritableMetadata()
		}
	}
	what := "reading"
	if write {
		what = "writing"
	}
	out := make([]MetadataColumn, len(keys))
	for i, k := range keys {
		found := false
		for _, m := range known {
			if m.Key == k {
				out[i], found = m, true
				break
			}
		}
		if found {
			continue
		}
		if len(known) == 0 {
			return nil, &MetadataKeyError{i, fmt.Errorf("table '%s': invalid metadata key '%s' in column '%s': connector '%s' has no metadata keys for %s", t.Name, k, cols[i], f.Identifier(), what)}
		}
		names := make([]string, len(known))
		for j, m := range known {
			names[j] = m.Key
		}
		hint := ""
		if write {
			hint = " (declare a column that is only read VIRTUAL)"
		}
		return nil, &MetadataKeyError{i, fmt.Errorf("table '%s': invalid metadata key '%s' in column '%s': connector '%s' supports the following metadata keys for %s: %s%s",
			t.Name, k, cols[i], f.Identifier(), what, strings.Join(names, ", "), hint)}
	}
	return out, nil
}

// Settings are the settings of the job a table is read or written by.
type Settings struct {
	// Parallelism is the job's default parallelism (0: 1).
	Parallelism int
	// CheckpointDir is where the job checkpoints ("" when it does not);
	// Checkpointing says whether it checkpoints at all. Sinks that write
	// exactly once commit at checkpoints, or once at the end of a bounded
	// job without checkpointing.
	CheckpointDir string
	Checkpointing bool
	// BadRecords is the job's policy for records a source cannot decode
	// (nil: fail, weir's default). Sources pass it on through
	// Source.Options; a format's own 'json.ignore-parse-errors' skips
	// (and counts) bad records whatever the policy.
	BadRecords *weir.BadRecordPolicy
	// LogDir is the embedded log's data directory, used by 'weir-log'
	// tables that do not name one with their 'path' option.
	LogDir string
	// Stdout is where 'print' tables print (nil: os.Stdout).
	Stdout io.Writer
}

// Source is what a source factory makes of a table.
type Source struct {
	// Source reads the table's rows.
	Source weir.Source[types.Row]
	// Bounded says whether the source ends (a file, a datagen table with
	// 'number-of-rows', a Kafka topic with 'scan.bounded.mode').
	Bounded bool
	// Changelog is the mode of the rows the source produces.
	Changelog types.ChangelogMode
	// Options are to be given to weir.FromSource with the planner's own
	// (the bad-record policy, a parallelism limit).
	Options []weir.SourceOption
	// Project, when set, makes a source that reads only the given columns
	// and nested fields (Flink's SupportsProjectionPushDown with nested
	// fields): row value i is paths[i]. The planner calls it with what a
	// plan reads, so that a connector of wide nested rows (nexmark) fills a
	// few flat values instead of every ROW. Source stays the full read.
	// fill, when not nil, is called on each row's values once the paths
	// are set, before the row leaves Read: the planner computes the values
	// of Col -1 paths (computed columns) there. The rows of a projected
	// source may share values that its reader's next Read overwrites: the
	// planner reads them only in a Calc chained to the source (same task,
	// before the next Read), which copies what it keeps.
	Project func(paths []Path, fill func(row []types.Value)) (weir.Source[types.Row], error)
	// Prune, when set, returns src (Source, or what Project made) made to
	// skip parts of the input that no reader of the scan keeps (Flink's
	// SupportsFilterPushDown, as a hint: the planner still applies every
	// filter after the scan, so a source may skip less, never more).
	// readers holds one conjunction of Predicates per reader of the scan
	// (each a Calc of the query over it): a row that satisfies none of
	// them is read by no one. The planner calls it only with projection
	// push-down, and only when every reader filters by at least one
	// Predicate.
	Prune func(src weir.Source[types.Row], readers [][]Predicate) weir.Source[types.Row]
}

// Predicate is a conjunct of a query's filter over a table: the filter is
// TRUE only for rows whose column Col (of the table's schema) compares
// with Value as Op says ("=", "<", "<=", ">", ">="); a NULL in the column
// makes it not TRUE. Compare orders a value of the column's type against
// Value (<0, 0, >0), as the query compares them.
type Predicate struct {
	Col     int
	Op      string
	Value   types.Value
	Compare func(col, value types.Value) int
}

// Admits reports whether a column whose values (not NULL) lie in
// [lo, hi] may hold a value for which the predicate is TRUE.
func (p Predicate) Admits(lo, hi types.Value) bool {
	switch p.Op {
	case "=":
		return p.Compare(lo, p.Value) <= 0 && p.Compare(hi, p.Value) >= 0
	case "<":
		return p.Compare(lo, p.Value) < 0
	case "<=":
		return p.Compare(lo, p.Value) <= 0
	case ">":
		return p.Compare(hi, p.Value) > 0
	case ">=":
		return p.Compare(hi, p.Value) >= 0
	}
	return true
}

// Path names what a projected source puts in one value of its rows: column
// Col of the table's schema, or, when Field >= 0, field Field of that
// column's ROW (NULL when the ROW is NULL). Col -1 is a value the source
// leaves to fill.
type Path struct {
	Col, Field int
}

// Sink is what a sink factory makes of a table.
type Sink struct {
	// Sink writes the rows; a weir.CommittingSink when ExactlyOnce.
	Sink weir.Sink[types.Row]
	// Accepts is the widest changelog mode the sink takes: InsertOnly
	// (json and csv formats), Upsert (a primary key: +I/+U upsert, -D
	// deletes, -U ignored) or All (debezium-json, print, blackhole).
	Accepts types.ChangelogMode
	// ExactlyOnce says whether each row is written once even across
	// failures and restores (with checkpointing).
	ExactlyOnce bool
	// Options are to be given to weir.To with the planner's own.
	Options []weir.OperatorOption
	// Lends says that the sink's writers are done with the rows, and
	// their values, when Write returns (they encode or drop them), and
	// that Options set no parallelism (so the sink is chained to its
	// input): the planner may then reuse the rows' memory for the next
	// rows instead of allocating each.
	Lends bool
	// DropsUpdateBefore says that the sink does nothing with -U rows
	// (Flink's blackhole asks for none; an upsert sink, Accepts Upsert,
	// ignores them too): the plan need not make them, as Flink's planner
	// makes no UPDATE_BEFORE for such a sink.
	DropsUpdateBefore bool
}

// Factory is a connector, known by its identifier: the value of the
// 'connector' option. A factory implements SourceFactory, SinkFactory or
// both.
type Factory interface {
	Identifier() string
}

// SourceFactory makes sources of tables.
type SourceFactory interface {
	Factory
	// CreateSource validates t's options (see Options) and returns the
	// source. It does no I/O beyond cheap checks.
	CreateSource(t *Table) (*Source, error)
}

// SinkFactory makes sinks of tables.
type SinkFactory interface {
	Factory
	// CreateSink validates t's options and returns the sink. It does no
	// I/O beyond cheap checks.
	CreateSink(t *Table) (*Sink, error)
}

var (
	mu        sync.RWMutex
	factories = map[string]Factory{}
	reserved  = map[string]string{} // identifier -> why it cannot be used yet
)

// Register makes a factory known by its identifier. It panics if the
// identifier is taken (as database/sql.Register does): that is a
// programming error. It replaces a reservation (Reserve).
func Register(f Factory) {
	mu.Lock()
	defer mu.Unlock()
	id := f.Identifier()
	if _, dup := factories[id]; dup {
		panic(fmt.Sprintf("connector: Register called twice for %q", id))
	}
	delete(reserved, id)
	factories[id] = f
}

// Reserve makes a connector that is not built yet known by name, so that
// a table using it gets why rather than "could not find a connector".
// Register with the same identifier replaces the reservation.
func Reserve(id, why string) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := factories[id]; !ok {
		reserved[id] = why
	}
}

// Identifiers returns the registered connectors' identifiers, sorted.
func Identifiers() []string {
	mu.RLock()
	defer mu.RUnlock()
	ids := make([]string, 0, len(factories))
	for id := range factories {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Lookup returns the factory of the table's 'connector' option.
func Lookup(t *Table) (Factory, error) {
	id, ok := t.Options["connector"]
	if !ok {
		return nil, fmt.Errorf("table '%s': the WITH options do not contain the option 'connector' that names the connector (available: %s)",
			t.Name, strings.Join(Identifiers(), ", "))
	}
	mu.RLock()
	f := factories[id]
	why, isReserved := reserved[id]
	mu.RUnlock()
	if f == nil && isReserved {
		return nil, fmt.Errorf("table '%s': connector '%s' is not available yet: %s", t.Name, id, why)
	}
	if f == nil {
		return nil, fmt.Errorf("table '%s': could not find a connector for 'connector' = '%s' (available: %s)",
			t.Name, id, strings.Join(Identifiers(), ", "))
	}
	return f, nil
}

// CreateSource looks up the table's connector and creates a source.
func CreateSource(t *Table) (*Source, error) {
	f, err := Lookup(t)
	if err != nil {
		return nil, err
	}
	sf, ok := f.(SourceFactory)
	if !ok {
		return nil, fmt.Errorf("table '%s': connector '%s' can only be written to (it is a sink only)", t.Name, f.Identifier())
	}
	return sf.CreateSource(t)
}

// CreateSink looks up the table's connector and creates a sink.
func CreateSink(t *Table) (*Sink, error) {
	f, err := Lookup(t)
	if err != nil {
		return nil, err
	}
	sf, ok := f.(SinkFactory)
	if !ok {
		return nil, fmt.Errorf("table '%s': connector '%s' can only be read from (it is a source only)", t.Name, f.Identifier())
	}
	return sf.CreateSink(t)
}

// ParallelismOrOne returns the settings' parallelism, at least 1.
func (s Settings) ParallelismOrOne() int {
	if s.Parallelism < 1 {
		return 1
	}
	return s.Parallelism
}

// SourceOptions returns the weir options a source of these settings needs
// (the bad-record policy).
func (s Settings) SourceOptions() []weir.SourceOption {
	if s.BadRecords == nil {
		return nil
	}
	return []weir.SourceOption{weir.OnBadRecord(*s.BadRecords)}
}
