package avro

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() {
	format.Register(Factory{})
	format.Register(ConfluentFactory{})
	format.Register(DebeziumFactory{})
}

// Factory is the 'avro' format: a record's bytes are one Avro datum in
// the binary encoding, of the table's derived schema (or 'avro.schema').
type Factory struct{}

// Identifier implements format.Factory.
func (Factory) Identifier() string { return "avro" }

// Options are the settings the three formats share.
type Options struct {
	// Mapping is how timestamps derive ('timestamp_mapping.legacy').
	Mapping Mapping
	// Schema is an Avro schema's JSON text given instead of the derived
	// one ('avro.schema', 'avro-confluent.schema').
	Schema string
	// IgnoreParseErrors skips a record that does not decode (a weir
	// extension: Flink's Avro formats fail the job).
	IgnoreParseErrors bool
}

func readCommon(o *format.Scoped) Options {
	opt := Options{
		Mapping:           Mapping{Legacy: o.O.Bool(o.Key("timestamp_mapping.legacy"), true)},
		IgnoreParseErrors: o.O.Bool(o.Key("ignore-parse-errors"), false),
	}
	return opt
}

func readAvroOptions(o *format.Scoped) (Options, error) {
	opt := readCommon(o)
	opt.Schema = o.O.String(o.Key("schema"), "")
	// The object-container codec: only for files (the filesystem
	// connector reads them itself, ReadFileOptions); accepted so Flink's
	// DDL runs.
	o.O.Enum(o.Key("codec"), "snappy", "null", "deflate", "snappy", "bzip2", "xz", "zstandard")
	if enc := o.O.Enum(o.Key("encoding"), "binary", "binary", "json"); enc == "json" {
		return opt, errors.New("'avro.encoding' = 'json' is not supported (only 'binary')")
	}
	return opt, nil
}

// tableSchema returns the Avro schema of the table's rows: opt.Schema
// parsed, or the one derived from the columns.
func tableSchema(schema types.Schema, opt Options) (avro.Schema, error) {
	if opt.Schema != "" {
		s, err := Parse(opt.Schema)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		return s, nil
	}
	return DeriveSchema(schema, opt.Mapping)
}

// Decoder implements format.Factory.
func (Factory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	opt, err := readAvroOptions(o)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	s, err := tableSchema(schema, opt)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	rd, err := NewRowDecoder(s, s, schema)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	return &Decoder{row: rd, ignore: opt.IgnoreParseErrors}, types.InsertOnly, nil
}

// Encoder implements format.Factory.
func (Factory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	opt, err := readAvroOptions(o)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	s, err := tableSchema(schema, opt)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	e, err := NewRowEncoder(s, schema)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	return &Encoder{row: e}, types.InsertOnly, nil
}

// RowDecoder decodes Avro bodies of one writer schema into the values of
// a row type, resolving the writer's schema against the reader's (the
// table's). It is compiled once and safe for concurrent use.
type RowDecoder struct {
	rec *recordDec
	n   int
	// nullable: the writer's top-level schema is ["null", record] (or the
	// like); a null datum gives no row.
	nullIdx, recIdx int64
	union           bool
}

// NewRowDecoder compiles the decoding of datums written with schema
// writer into rows of cols; reader is the reader's Avro schema for field
// defaults and aliases (the table's derived schema, or one given), and
// may be nil.
func NewRowDecoder(writer, reader avro.Schema, cols types.Schema) (*RowDecoder, error) {
	d := &RowDecoder{n: len(cols), nullIdx: -1}
	w := deref(writer)
	if u, ok := w.(*avro.UnionSchema); ok {
		d.union = true
		for i, t := range u.Types() {
			switch deref(t).(type) {
			case *avro.NullSchema:
				d.nullIdx = int64(i)
			case *avro.RecordSchema:
				if d.rec == nil {
					d.recIdx = int64(i)
					w = deref(t)
				}
			}
		}
	}
	rec, ok := w.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the writer's schema is %s, not a record", typeName(writer))
	}
	rd, err := compileRecord(rec, reader, cols)
	if err != nil {
		return nil, err
	}
	d.rec = rd
	return d, nil
}

var readers = sync.Pool{New: func() any { return new(reader) }}

// slabRows is how many rows' values one allocation holds: decoders carve
// rows out of a pooled slab rather than allocate each (a row kept in state
// keeps its slab alive, so a slab stays small).
const slabRows = 16

type slab struct{ vals []types.Value }

var slabs = sync.Pool{New: func() any { return new(slab) }}

// newValues returns n zero values, carved from a pooled slab.
func newValues(n int) []types.Value {
	if n == 0 {
		return nil
	}
	s := slabs.Get().(*slab)
	if len(s.vals) < n {
		s.vals = make([]types.Value, n*slabRows)
	}
	v := s.vals[:n:n]
	s.vals = s.vals[n:]
	slabs.Put(s)
	return v
}

// DecodeValues decodes one body into vals (len = the columns); ok is false
// for a null datum of a nullable top-level schema.
func (d *RowDecoder) DecodeValues(body []byte, vals []types.Value) (ok bool, err error) {
	r := readers.Get().(*reader)
	r.b, r.i, r.str, r.window = body, 0, "", false
	defer func() {
		r.b, r.str = nil, ""
		readers.Put(r)
	}()
	ok, err = d.decode(r, vals)
	if err != nil {
		return false, err
	}
	if r.i < len(r.b) {
		return false, r.errorf("%d bytes after the record", len(r.b)-r.i)
	}
	return ok, nil
}

// DecodePrefix decodes the datum at the start of b into vals (len = the
// columns) and returns the bytes it took: b may hold more (the records
// of an object-container file's block, one after another). ok is false
// for a null datum of a nullable top-level schema. Strings are copied
// out of b (b may be reused once it returns).
func (d *RowDecoder) DecodePrefix(b []byte, vals []types.Value) (ok bool, n int, err error) {
	r := readers.Get().(*reader)
	r.b, r.i, r.str, r.window = b, 0, "", true
	defer func() {
		r.b, r.str, r.window = nil, "", false
		readers.Put(r)
	}()
	ok, err = d.decode(r, vals)
	return ok, r.i, err
}

// decode decodes one datum at r into vals, leaving r after it.
func (d *RowDecoder) decode(r *reader, vals []types.Value) (ok bool, err error) {
	if d.union {
		start := r.i
		i, err := r.long()
		if err != nil {
			return false, err
		}
		switch i {
		case d.recIdx:
		case d.nullIdx:
			return false, nil
		default:
			r.i = start
			return false, r.errorf("top-level union index %d is not the record", i)
		}
	}
	if err := d.rec.decodeInto(r, vals); err != nil {
		return false, err
	}
	return true, nil
}

// Decoder is the 'avro' format's decoder.
type Decoder struct {
	row    *RowDecoder
	ignore bool
}

// Decode implements format.Decoder: an empty record (a Kafka tombstone)
// gives no row, any other one +I row.
func (d *Decoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	if len(data) == 0 {
		return dst, nil
	}
	vals := newValues(d.row.n)
	ok, err := d.row.DecodeValues(data, vals)
	if err != nil {
		if d.ignore {
			return dst, &format.SkipError{Err: err}
		}
		return dst, err
	}
	if !ok {
		return dst, nil
	}
	return append(dst, types.Row{Kind: types.Insert, Values: vals}), nil
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *Decoder) SkipsParseErrors() bool { return d.ignore }

// RowEncoder encodes rows' values as Avro bodies of one writer schema. It
// is compiled once and safe for concurrent use.
type RowEncoder struct {
	rec    *recordEnc
	schema avro.Schema
	// tag is the union index written first when the schema is a union
	// holding the record (Flink's debezium schema is nullable).
	tag []byte
}

// NewRowEncoder compiles the encoding of rows of cols as datums of the
// Avro schema s (a record, or a union holding one).
func NewRowEncoder(s avro.Schema, cols types.Schema) (*RowEncoder, error) {
	e := &RowEncoder{schema: s}
	w := deref(s)
	if u, ok := w.(*avro.UnionSchema); ok {
		for i, t := range u.Types() {
			if r, ok := deref(t).(*avro.RecordSchema); ok {
				e.tag = appendLong(nil, int64(i))
				w = r
				break
			}
		}
	}
	rec, ok := w.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("the Avro schema is %s, not a record", typeName(s))
	}
	re, err := compileRecordEnc(rec, cols)
	if err != nil {
		return nil, err
	}
	e.rec = re
	return e, nil
}

// Schema returns the Avro schema the encoder writes.
func (e *RowEncoder) Schema() avro.Schema { return e.schema }

// AppendValues appends the body of one row's values.
func (e *RowEncoder) AppendValues(b []byte, vals []types.Value) ([]byte, error) {
	b = append(b, e.tag...)
	return e.rec.appendValues(b, vals)
}

// Encoder is the 'avro' format's encoder.
type Encoder struct{ row *RowEncoder }

// Encode implements format.Encoder.
func (e *Encoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	out, err := e.row.AppendValues(dst, row.Values)
	if err != nil {
		return dst, false, err
	}
	return out, false, nil
}
