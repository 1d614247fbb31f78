// Package debezium is the SQL layer's 'debezium-json' format, as Flink's:
// each record is a Debezium change event, {"before": ..., "after": ...,
// "op": ...} (bare, or wrapped in {"schema": ..., "payload": ...} as
// Debezium writes with schemas enabled), whose row images are JSON objects
// read and written as the 'json' format does.
//
// Reading gives a changelog (mode All): op "c" (create) and "r" (snapshot
// read) are +I of "after"; "u" is -U of "before" then +U of "after" (an
// update needs its before-image: a PostgreSQL table with REPLICA IDENTITY
// FULL); "d" is -D of "before". An empty record or JSON null (a tombstone)
// gives no rows. The semantics are those of package format/debezium (the
// DataStream API's decoder of the same events), on a compiled row decoder.
//
// Writing accepts any changelog and, as Flink's debezium-json, writes each
// row as an event of its own: +I and +U as {"before":null,"after":ROW,
// "op":"c"}, -U and -D as {"before":ROW,"after":null,"op":"d"}. Read back,
// an update written so is a delete and an insert: the same table.
//
// Options ('debezium-json.' prefix): ignore-parse-errors,
// schema-include (accepted; both shapes are always read),
// timestamp-format.standard, map-null-key.mode, map-null-key.literal,
// encode.decimal-as-plain-number.
package debezium

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/json"
	"github.com/weirstream/weir/sql/types"
)

func init() { format.Register(Factory{}) }

// Factory is the 'debezium-json' format.
type Factory struct{}

// Identifier implements format.Factory.
func (Factory) Identifier() string { return "debezium-json" }

func readOptions(o *format.Scoped) (json.Options, bool) {
	opt := json.Options{
		IgnoreParseErrors: o.O.Bool(o.Key("ignore-parse-errors"), false),
		ISOTimestamps:     o.O.Enum(o.Key("timestamp-format.standard"), "SQL", "SQL", "ISO-8601") == "ISO-8601",
		MapNullKey:        o.O.Enum(o.Key("map-null-key.mode"), "FAIL", "FAIL", "DROP", "LITERAL"),
		MapNullKeyLiteral: o.O.String(o.Key("map-null-key.literal"), "null"),
	}
	o.O.Bool(o.Key("encode.decimal-as-plain-number"), false)
	schemaInclude := o.O.Bool(o.Key("schema-include"), false)
	return opt, schemaInclude
}

// Decoder implements format.Factory.
func (Factory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	opt, _ := readOptions(o)
	d, err := NewDecoder(schema, opt)
	return d, types.All, err
}

// Encoder implements format.Factory.
func (Factory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	opt, include := readOptions(o)
	e, err := NewEncoder(schema, opt, include)
	return e, types.All, err
}

// Decoder reads Debezium events into changelog rows. It is safe for
// concurrent use.
type Decoder struct {
	row    *json.Decoder
	n      int
	ignore bool
}

// NewDecoder compiles a decoder of events whose row images have schema.
func NewDecoder(schema types.Schema, opt json.Options) (*Decoder, error) {
	ignore := opt.IgnoreParseErrors
	opt.IgnoreParseErrors = false
	opt.FailOnMissingField = false
	d, err := json.NewDecoder(schema, opt)
	if err != nil {
		return nil, err
	}
	return &Decoder{row: d, n: len(schema), ignore: ignore}, nil
}

// Error is an event the decoder rejected, with the field at fault.
type Error struct {
	Field string // "op", "before", "after", "payload", or "" for the document
	Err   error
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "debezium-json: " + e.Err.Error()
	}
	return "debezium-json: field '" + e.Field + "': " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

type event struct {
	before, after []types.Value
	op            []byte
	opSet         bool
	payload       bool
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *Decoder) SkipsParseErrors() bool { return d.ignore }

// Decode implements format.Decoder.
func (d *Decoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	out, err := d.decode(data, dst)
	if err != nil && d.ignore {
		return dst, &format.SkipError{Err: err}
	}
	return out, err
}

func (d *Decoder) decode(data []byte, dst []types.Row) ([]types.Row, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 || string(t) == "null" {
		return dst, nil // a tombstone
	}
	p := json.NewParser(t)
	var ev event
	if err := d.object(p, &ev, true); err != nil {
		return dst, err
	}
	p.WS()
	if p.Offset() < len(t) {
		return dst, &Error{Err: p.Errorf("unexpected data after the event")}
	}
	if !ev.opSet {
		if ev.payload {
			return dst, nil // {"schema": ..., "payload": null}: a tombstone with schemas
		}
		return dst, &Error{Field: "op", Err: errors.New("missing")}
	}
	switch string(ev.op) {
	case "c", "r":
		if ev.after == nil {
			return dst, &Error{Field: "after", Err: fmt.Errorf("null in an event with op '%s'", ev.op)}
		}
		return append(dst, types.Row{Kind: types.Insert, Values: ev.after}), nil
	case "u":
		if ev.before == nil {
			return dst, &Error{Field: "before", Err: errors.New("null in an update: the before-image is needed (a PostgreSQL table needs REPLICA IDENTITY FULL)")}
		}
		if ev.after == nil {
			return dst, &Error{Field: "after", Err: errors.New("null in an event with op 'u'")}
		}
		return append(dst, types.Row{Kind: types.UpdateBefore, Values: ev.before}, types.Row{Kind: types.UpdateAfter, Values: ev.after}), nil
	case "d":
		if ev.before == nil {
			return dst, &Error{Field: "before", Err: errors.New("null in a delete (the source table logs no before-image)")}
		}
		return append(dst, types.Row{Kind: types.Delete, Values: ev.before}), nil
	}
	return dst, &Error{Field: "op", Err: fmt.Errorf("unsupported op '%s' (not a row change)", ev.op)}
}

// object reads an event object (or, top, the wrapper that may hold one).
func (d *Decoder) object(p *json.Parser, ev *event, top bool) error {
	if err := p.Expect('{'); err != nil {
		return &Error{Err: err}
	}
	p.WS()
	if p.Peek() == '}' {
		return p.Expect('}')
	}
	for {
		k, err := p.Key()
		if err != nil {
			return &Error{Err: err}
		}
		switch string(k) {
		case "before", "after":
			field := string(k)
			if p.Null() {
				break
			}
			vals := make([]types.Value, d.n)
			if err := d.row.DecodeValues(p, vals); err != nil {
				return &Error{Field: field, Err: err}
			}
			if field == "before" {
				ev.before = vals
			} else {
				ev.after = vals
			}
		case "op":
			if p.Null() {
				break
			}
			op, err := p.String()
			if err != nil {
				return &Error{Field: "op", Err: err}
			}
			ev.op = append(ev.op[:0], op...)
			ev.opSet = true
		case "payload":
			if !top {
				return &Error{Field: "payload", Err: errors.New("a payload inside a payload")}
			}
			ev.payload = true
			if p.Null() {
				break
			}
			if err := d.object(p, ev, false); err != nil {
				var de *Error
				if errors.As(err, &de) && de.Field == "" {
					de.Field = "payload"
				}
				return err
			}
		default:
			// schema, source, ts_ms, transaction: not part of the row.
			if err := p.Skip(); err != nil {
				return &Error{Field: string(k), Err: err}
			}
		}
		p.WS()
		if p.Peek() == ',' {
			if err := p.Expect(','); err != nil {
				return &Error{Err: err}
			}
			continue
		}
		if err := p.Expect('}'); err != nil {
			return &Error{Err: err}
		}
		return nil
	}
}

// Encoder writes rows as Debezium events. It is safe for concurrent use.
type Encoder struct {
	row     *json.Encoder
	include bool
}

// NewEncoder compiles an encoder of rows of schema; schemaInclude wraps
// each event in {"schema": null, "payload": ...}.
func NewEncoder(schema types.Schema, opt json.Options, schemaInclude bool) (*Encoder, error) {
	opt.IgnoreNullFields = false
	e, err := json.NewEncoder(schema, opt)
	if err != nil {
		return nil, err
	}
	return &Encoder{row: e, include: schemaInclude}, nil
}

// Encode implements format.Encoder.
func (e *Encoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	if e.include {
		dst = append(dst, `{"schema":null,"payload":`...)
	}
	var err error
	switch row.Kind {
	case types.Insert, types.UpdateAfter:
		dst = append(dst, `{"before":null,"after":`...)
		if dst, err = e.row.AppendValues(dst, row.Values); err != nil {
			return dst, false, err
		}
		dst = append(dst, `,"op":"c"}`...)
	case types.UpdateBefore, types.Delete:
		dst = append(dst, `{"before":`...)
		if dst, err = e.row.AppendValues(dst, row.Values); err != nil {
			return dst, false, err
		}
		dst = append(dst, `,"after":null,"op":"d"}`...)
	default:
		return dst, false, fmt.Errorf("debezium-json: row kind %v", row.Kind)
	}
	if e.include {
		dst = append(dst, '}')
	}
	return dst, false, nil
}
