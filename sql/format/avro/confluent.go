package avro

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// ConfluentFactory is the 'avro-confluent' format: Confluent's wire format,
// a zero magic byte, the writer schema's registry id (4 bytes, big
// endian), then the Avro body.
type ConfluentFactory struct{}

// Identifier implements format.Factory.
func (ConfluentFactory) Identifier() string { return "avro-confluent" }

// HeaderLen is the length of the Confluent wire format's header.
const HeaderLen = 5

// WireError is a record that is not in Confluent's wire format, or whose
// schema id cannot be resolved.
type WireError struct {
	SchemaID int // -1 when the header is unreadable
	Err      error
}

func (e *WireError) Error() string {
	if e.SchemaID < 0 {
		return "avro-confluent: " + e.Err.Error()
	}
	return fmt.Sprintf("avro-confluent: schema id %d: %v", e.SchemaID, e.Err)
}

func (e *WireError) Unwrap() error { return e.Err }

// ErrMagic is the cause of a WireError for a record whose first byte is not
// the wire format's zero.
var ErrMagic = errors.New("not the Confluent wire format")

// SplitHeader returns the schema id and the body of a record in
// Confluent's wire format.
func SplitHeader(data []byte) (id int, body []byte, err error) {
	if len(data) < HeaderLen {
		return -1, nil, &WireError{SchemaID: -1, Err: fmt.Errorf("a record of %d bytes is shorter than the %d-byte header", len(data), HeaderLen)}
	}
	if data[0] != 0 {
		return -1, nil, &WireError{SchemaID: -1, Err: fmt.Errorf("%w: magic byte 0x%02x at byte 0, want 0x00", ErrMagic, data[0])}
	}
	return int(binary.BigEndian.Uint32(data[1:5])), data[HeaderLen:], nil
}

// AppendHeader appends the wire format's header for schema id.
func AppendHeader(b []byte, id int) []byte {
	return binary.BigEndian.AppendUint32(append(b, 0), uint32(id))
}

type confluentConfig struct {
	opt     Options
	ro      RegistryOptions
	subject string
}

func readConfluent(o *format.Scoped) (confluentConfig, error) {
	c := confluentConfig{opt: readCommon(o)}
	ro, err := readRegistryOptions(o)
	if err != nil {
		return c, err
	}
	c.ro = ro
	c.opt.Schema = ro.Schema
	c.subject = ro.Subject
	if c.subject == "" {
		c.subject = defaultSubject(o)
	}
	return c, nil
}

// Decoder implements format.Factory.
func (ConfluentFactory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	c, err := readConfluent(o)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	reader, err := tableSchema(schema, c.opt)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	reg, err := NewRegistry(c.ro)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	d := newIDDecoders(reg, func(w avro.Schema) (*RowDecoder, error) { return NewRowDecoder(w, reader, schema) })
	return &ConfluentDecoder{ids: d, n: len(schema), ignore: c.opt.IgnoreParseErrors}, types.InsertOnly, nil
}

// Encoder implements format.Factory.
func (ConfluentFactory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	c, err := readConfluent(o)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	if c.subject == "" {
		return nil, types.InsertOnly, fmt.Errorf("'%s' is required to write (there is no one Kafka topic to name the subject after)", o.Key("subject"))
	}
	s, err := tableSchema(schema, c.opt)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	row, err := NewRowEncoder(s, schema)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	reg, err := NewRegistry(c.ro)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	return &ConfluentEncoder{row: row, id: newSchemaID(reg, c.subject, s, c.ro.AutoRegister)}, types.InsertOnly, nil
}

// idDecoders compiles and keeps one RowDecoder per writer schema id.
type idDecoders struct {
	reg     *Registry
	compile func(writer avro.Schema) (*RowDecoder, error)
	decs    sync.Map // int -> *RowDecoder
}

func newIDDecoders(reg *Registry, compile func(avro.Schema) (*RowDecoder, error)) *idDecoders {
	return &idDecoders{reg: reg, compile: compile}
}

// decoder returns the decoder of a record's writer schema and its body;
// errors are *WireError.
func (d *idDecoders) decoder(data []byte) (*RowDecoder, []byte, error) {
	id, body, err := SplitHeader(data)
	if err != nil {
		return nil, nil, err
	}
	if rd, ok := d.decs.Load(id); ok {
		return rd.(*RowDecoder), body, nil
	}
	w, err := d.reg.SchemaByID(context.Background(), id)
	if err != nil {
		return nil, nil, &WireError{SchemaID: id, Err: err}
	}
	rd, err := d.compile(w)
	if err != nil {
		return nil, nil, &WireError{SchemaID: id, Err: fmt.Errorf("the writer's schema does not resolve against the table's: %w", err)}
	}
	actual, _ := d.decs.LoadOrStore(id, rd)
	return actual.(*RowDecoder), body, nil
}

// dataError reports whether err is about the record (skippable with
// ignore-parse-errors) rather than the registry being unreachable.
func dataError(err error) bool {
	return !errors.Is(err, errRegistry)
}

// errRegistry marks a registry call that failed for another reason than
// an unknown id (the registry down, a refused credential).
var errRegistry = errors.New("registry unavailable")

// ConfluentDecoder is the 'avro-confluent' format's decoder.
type ConfluentDecoder struct {
	ids    *idDecoders
	n      int
	ignore bool
}

// Decode implements format.Decoder: an empty record (a tombstone) gives
// no row.
func (d *ConfluentDecoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	if len(data) == 0 {
		return dst, nil
	}
	rd, body, err := d.ids.decoder(data)
	if err == nil {
		vals := newValues(d.n)
		var ok bool
		if ok, err = rd.DecodeValues(body, vals); err == nil {
			if !ok {
				return dst, nil
			}
			return append(dst, types.Row{Kind: types.Insert, Values: vals}), nil
		}
		err = shiftOffset(err)
	}
	if d.ignore && dataError(err) {
		return dst, &format.SkipError{Err: err}
	}
	return dst, err
}

// shiftOffset makes a body's DecodeError's offset one in the record.
func shiftOffset(err error) error {
	var de *DecodeError
	if errors.As(err, &de) {
		de.Offset += HeaderLen
	}
	return err
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *ConfluentDecoder) SkipsParseErrors() bool { return d.ignore }

// schemaID registers an encoder's schema on first use and keeps its id.
type schemaID struct {
	reg     *Registry
	subject string
	schema  avro.Schema
	auto    bool

	id atomic.Int64 // the id + 1; 0 until registered
	mu sync.Mutex   // serializes registering (held during the registry call: an encoder has nothing else to do until it knows the id)
}

func newSchemaID(reg *Registry, subject string, s avro.Schema, auto bool) *schemaID {
	return &schemaID{reg: reg, subject: subject, schema: s, auto: auto}
}

func (s *schemaID) get() (int, error) {
	if id := s.id.Load(); id > 0 {
		return int(id - 1), nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if id := s.id.Load(); id > 0 {
		return int(id - 1), nil
	}
	id, err := s.reg.Register(context.Background(), s.subject, s.schema, s.auto)
	if err != nil {
		return 0, fmt.Errorf("avro-confluent: %w", err)
	}
	s.id.Store(int64(id) + 1)
	return id, nil
}

// ConfluentEncoder is the 'avro-confluent' format's encoder.
type ConfluentEncoder struct {
	row *RowEncoder
	id  *schemaID
}

// Encode implements format.Encoder.
func (e *ConfluentEncoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	id, err := e.id.get()
	if err != nil {
		return dst, false, err
	}
	out, err := e.row.AppendValues(AppendHeader(dst, id), row.Values)
	if err != nil {
		return dst, false, err
	}
	return out, false, nil
}
