package avro

import (
	"errors"
	"fmt"

	"github.com/hamba/avro/v2"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

// DebeziumFactory is the 'debezium-avro-confluent' format: Debezium's
// change events (before, after, op, source, ts_ms, ...) in Avro through the
// schema registry, as Debezium's AvroConverter writes them. Reading gives
// a changelog as 'debezium-json' does; writing writes Flink's envelope.
type DebeziumFactory struct{}

// Identifier implements format.Factory.
func (DebeziumFactory) Identifier() string { return "debezium-avro-confluent" }

// envelope returns the row type of the envelope of rows of schema, as
// Flink's DebeziumAvroSerializationSchema declares it: before and after
// the nullable row, op a nullable string.
func envelope(schema types.Schema) types.Schema {
	row := types.RowOf(schema...)
	return types.Schema{
		{Name: "before", Type: row},
		{Name: "after", Type: row},
		{Name: "op", Type: types.StringType},
	}
}

// DebeziumSchema is the Avro schema Flink writes Debezium events of rows of
// schema with: a nullable record of before, after and op.
func DebeziumSchema(schema types.Schema, m Mapping) (avro.Schema, error) {
	return deriveType(types.RowOf(envelope(schema)...), RecordName, m)
}

// Decoder implements format.Factory.
func (DebeziumFactory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	c, err := readConfluent(o)
	if err != nil {
		return nil, types.All, err
	}
	reader, err := debeziumSchema(schema, c.opt)
	if err != nil {
		return nil, types.All, err
	}
	reg, err := NewRegistry(c.ro)
	if err != nil {
		return nil, types.All, err
	}
	env := envelope(schema)
	ids := newIDDecoders(reg, func(w avro.Schema) (*RowDecoder, error) { return NewRowDecoder(w, reader, env) })
	return &DebeziumDecoder{ids: ids, ignore: c.opt.IgnoreParseErrors}, types.All, nil
}

func debeziumSchema(schema types.Schema, opt Options) (avro.Schema, error) {
	if opt.Schema != "" {
		s, err := Parse(opt.Schema)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		return s, nil
	}
	return DebeziumSchema(schema, opt.Mapping)
}

// Encoder implements format.Factory.
func (DebeziumFactory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	c, err := readConfluent(o)
	if err != nil {
		return nil, types.All, err
	}
	if c.subject == "" {
		return nil, types.All, fmt.Errorf("'%s' is required to write (there is no one Kafka topic to name the subject after)", o.Key("subject"))
	}
	s, err := debeziumSchema(schema, c.opt)
	if err != nil {
		return nil, types.All, err
	}
	row, err := NewRowEncoder(s, envelope(schema))
	if err != nil {
		return nil, types.All, err
	}
	reg, err := NewRegistry(c.ro)
	if err != nil {
		return nil, types.All, err
	}
	return &DebeziumEncoder{row: row, id: newSchemaID(reg, c.subject, s, c.ro.AutoRegister)}, types.All, nil
}

// DebeziumError is an event the decoder rejected, with the field at fault.
type DebeziumError struct {
	Field string // "op", "before", "after"
	Err   error
}

func (e *DebeziumError) Error() string {
	return "debezium-avro-confluent: field '" + e.Field + "': " + e.Err.Error()
}

func (e *DebeziumError) Unwrap() error { return e.Err }

// DebeziumDecoder reads Debezium events into changelog rows: op "c" and
// "r" are +I of after; "u" is -U of before and +U of after; "d" is -D of
// before. An empty record (a tombstone) gives no rows.
type DebeziumDecoder struct {
	ids    *idDecoders
	ignore bool
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *DebeziumDecoder) SkipsParseErrors() bool { return d.ignore }

// Decode implements format.Decoder.
func (d *DebeziumDecoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	out, err := d.decode(data, dst)
	if err != nil && d.ignore && dataError(err) {
		return dst, &format.SkipError{Err: err}
	}
	return out, err
}

func (d *DebeziumDecoder) decode(data []byte, dst []types.Row) ([]types.Row, error) {
	if len(data) == 0 {
		return dst, nil
	}
	rd, body, err := d.ids.decoder(data)
	if err != nil {
		return dst, err
	}
	ev := newValues(3)
	ok, err := rd.DecodeValues(body, ev)
	if err != nil {
		return dst, shiftOffset(err)
	}
	if !ok {
		return dst, nil // a null event
	}
	before, after := ev[0].List(), ev[1].List()
	if ev[2].Null {
		return dst, &DebeziumError{Field: "op", Err: errors.New("missing")}
	}
	switch op := ev[2].S; op {
	case "c", "r":
		if after == nil {
			return dst, &DebeziumError{Field: "after", Err: fmt.Errorf("null in an event with op '%s'", op)}
		}
		return append(dst, types.Row{Kind: types.Insert, Values: after}), nil
	case "u":
		if before == nil {
			return dst, &DebeziumError{Field: "before", Err: errors.New("null in an update: the before-image is needed (a PostgreSQL table needs REPLICA IDENTITY FULL)")}
		}
		if after == nil {
			return dst, &DebeziumError{Field: "after", Err: errors.New("null in an event with op 'u'")}
		}
		return append(dst, types.Row{Kind: types.UpdateBefore, Values: before}, types.Row{Kind: types.UpdateAfter, Values: after}), nil
	case "d":
		if before == nil {
			return dst, &DebeziumError{Field: "before", Err: errors.New("null in a delete (the source table logs no before-image)")}
		}
		return append(dst, types.Row{Kind: types.Delete, Values: before}), nil
	default:
		return dst, &DebeziumError{Field: "op", Err: fmt.Errorf("unsupported op '%s' (not a row change)", op)}
	}
}

// DebeziumEncoder writes rows as Debezium events, as Flink's does: +I and +U
// as {before: null, after: ROW, op: "c"}, -U and -D as {before: ROW,
// after: null, op: "d"}.
type DebeziumEncoder struct {
	row *RowEncoder
	id  *schemaID
}

// Encode implements format.Encoder.
func (e *DebeziumEncoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	id, err := e.id.get()
	if err != nil {
		return dst, false, err
	}
	var ev [3]types.Value
	switch row.Kind {
	case types.Insert, types.UpdateAfter:
		ev = [3]types.Value{types.NullValue, {X: row.Values}, {S: "c"}}
	case types.UpdateBefore, types.Delete:
		ev = [3]types.Value{{X: row.Values}, types.NullValue, {S: "d"}}
	default:
		return dst, false, fmt.Errorf("debezium-avro-confluent: row kind %v", row.Kind)
	}
	out, err := e.row.AppendValues(AppendHeader(dst, id), ev[:])
	if err != nil {
		return dst, false, err
	}
	return out, false, nil
}
