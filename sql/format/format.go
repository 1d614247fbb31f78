// Package format holds the SQL layer's record formats: how a table's rows
// are read from and written to the bytes of a file line, a Kafka record's
// key or value, or a log record ('format' = 'json', 'csv',
// 'debezium-json', 'raw').
//
// A Factory compiles a Decoder or an Encoder once, from the table's schema
// and its format options, into closures over the row layout: decoding and
// encoding a record then does no reflection and no lookups by name.
// Formats read their options ('json.ignore-parse-errors', ...) from the
// table's connector.Options under a prefix: the format's identifier and a
// dot ("json."), preceded by "key." or "value." for upsert-kafka's key and
// value formats.
//
// The built-in formats live in sub-packages (sql/format/json, csv,
// debezium, raw) and register themselves; sql/connector/builtin imports
// them all.
package format

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// Decoder turns one record's bytes into rows.
type Decoder interface {
	// Decode appends the rows of one record to dst and returns dst. Most
	// formats append one row; debezium-json appends two for an update
	// (-U, +U) and none for a tombstone. data is only valid during the
	// call: rows must not keep it. A record that does not decode returns
	// an error saying what and where in the record; the caller adds where
	// the record is (file and line, topic, partition and offset).
	Decode(data []byte, dst []types.Row) ([]types.Row, error)
}

// Encoder turns rows into records.
type Encoder interface {
	// Encode appends the encoding of row to dst and returns it. A row the
	// format writes nothing for (a -U row into an upsert format) returns
	// dst unchanged and skip = true.
	Encode(dst []byte, row *types.Row) (out []byte, skip bool, err error)
}

// Factory is a format, known by its identifier: the value of the
// 'format' option.
type Factory interface {
	Identifier() string
	// Decoder compiles a decoder of rows of schema; o is scoped (reads
	// "json.x" when asked for "x"). It returns the changelog mode of
	// the rows it produces.
	Decoder(schema types.Schema, o *Scoped) (Decoder, types.ChangelogMode, error)
	// Encoder compiles an encoder of rows of schema and returns the
	// changelog mode it accepts.
	Encoder(schema types.Schema, o *Scoped) (Encoder, types.ChangelogMode, error)
}

// Scoped reads a table's options under a prefix.
type Scoped struct {
	O      *connector.Options
	Prefix string // "json.", "value.json."
}

// Key returns the full key of a format option.
func (s *Scoped) Key(k string) string { return s.Prefix + k }

var (
	mu      sync.RWMutex
	formats = map[string]Factory{}
)

// Register makes a format known by its identifier; it panics if the
// identifier is taken.
func Register(f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := formats[f.Identifier()]; dup {
		panic(fmt.Sprintf("format: Register called twice for %q", f.Identifier()))
	}
	formats[f.Identifier()] = f
}

// Identifiers returns the registered formats' identifiers, sorted.
func Identifiers() []string {
	mu.RLock()
	defer mu.RUnlock()
	ids := make([]string, 0, len(formats))
	for id := range formats {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// lookup returns the format named by the option key ("format",
// "value.format"), recording an error in o if it is missing or unknown.
func lookup(o *connector.Options, key string) Factory {
	id := o.Required(key)
	if id == "" {
		return nil
	}
	mu.RLock()
	f := formats[id]
	mu.RUnlock()
	if f == nil {
		o.Invalid(key, "no such format (available: %s)", strings.Join(Identifiers(), ", "))
	}
	return f
}

// NewDecoder compiles the decoder of the format named by the option key
// ("format", or "key.format"/"value.format"); its own options are read
// under the prefix that key implies. Errors are recorded in o (see
// connector.Options.Err), and a nil Decoder returned.
func NewDecoder(o *connector.Options, key string, schema types.Schema) (Decoder, types.ChangelogMode) {
	f := lookup(o, key)
	if f == nil {
		return nil, types.InsertOnly
	}
	d, mode, err := f.Decoder(schema, &Scoped{O: o, Prefix: scope(key, f)})
	if err != nil {
		o.Errorf("format '%s': %v", f.Identifier(), err)
		return nil, mode
	}
	return d, mode
}

// NewEncoder compiles the encoder of the format named by the option key.
func NewEncoder(o *connector.Options, key string, schema types.Schema) (Encoder, types.ChangelogMode) {
	f := lookup(o, key)
	if f == nil {
		return nil, types.InsertOnly
	}
	e, mode, err := f.Encoder(schema, &Scoped{O: o, Prefix: scope(key, f)})
	if err != nil {
		o.Errorf("format '%s': %v", f.Identifier(), err)
		return nil, mode
	}
	return e, mode
}

// scope returns the prefix of a format's options: "json." for the option
// "format", "value.json." for "value.format".
func scope(key string, f Factory) string {
	return strings.TrimSuffix(key, "format") + f.Identifier() + "."
}

// SkipError is returned by a Decoder for a malformed record that the
// format's options say to skip ('json.ignore-parse-errors',
// 'csv.ignore-parse-errors'): sources count it as a skipped bad record
// (weir_bad_records_skipped_total) and go on, rather than apply the
// job's bad-record policy.
type SkipError struct{ Err error }

func (e *SkipError) Error() string { return e.Err.Error() + " (skipped: ignore-parse-errors)" }
func (e *SkipError) Unwrap() error { return e.Err }

// ParseErrorSkipper is implemented by a Decoder whose options can skip the
// records that do not parse ('json.ignore-parse-errors'): a source asks it
// about a record it cannot even hand to the decoder (one longer than the
// source's limit), to skip it as the decoder would have.
type ParseErrorSkipper interface {
	// SkipsParseErrors reports whether records that do not parse are
	// skipped (and counted) rather than errors.
	SkipsParseErrors() bool
}
