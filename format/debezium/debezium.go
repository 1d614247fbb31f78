package debezium

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/weirstream/weir"
)

// Operations of Debezium's "op" field that carry a row change.
const (
	OpCreate = "c"
	OpUpdate = "u"
	OpDelete = "d"
	OpRead   = "r" // a row read by the initial snapshot
)

// Event is one Debezium change event. Before and After are nil where the
// event has null (no row before a create, none after a delete, and no
// before-image of an update unless the source table logs full rows).
// Source is kept as it came, for the consumer to read what it needs
// (database, table, LSN or binlog position). TsMs is when the connector
// processed the change, 0 when absent. A tombstone decodes to the zero
// Event.
type Event[T any] struct {
	Before *T
	After  *T
	Op     string
	Source json.RawMessage
	TsMs   int64
}

// Tombstone reports whether e is the empty event of a tombstone (a null or
// empty message), which changes nothing.
func (e Event[T]) Tombstone() bool { return e.Op == "" }

// Error is an event Decode rejected, with the field at fault.
type Error struct {
	Field string // "op", "before", "after", or "" for the document
	Err   error
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "debezium: " + e.Err.Error()
	}
	return "debezium: field " + strconv.Quote(e.Field) + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrUnsupportedOp is the cause of an Error for an event whose op is not
// a row change (t truncate, m message), which a keyed changelog cannot
// express.
var ErrUnsupportedOp = errors.New("unsupported op")

// envelope is the wire shape: the event's fields, and those of the
// {"schema", "payload"} wrapping.
type envelope struct {
	Before  json.RawMessage `json:"before"`
	After   json.RawMessage `json:"after"`
	Op      string          `json:"op"`
	Source  json.RawMessage `json:"source"`
	TsMs    *int64          `json:"ts_ms"`
	Schema  json.RawMessage `json:"schema"`
	Payload json.RawMessage `json:"payload"`
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// Decode reads one event, bare or wrapped in {"schema", "payload"}. Empty
// data or JSON null is a tombstone. Errors are *Error; the caller adds
// where the record was (connector/file names file and line,
// connector/kafka topic, partition and offset, when Decode is their
// decode function or Event their record type).
func Decode[T any](data []byte) (Event[T], error) {
	var e Event[T]
	err := e.UnmarshalJSON(data)
	return e, err
}

// UnmarshalJSON implements json.Unmarshaler, so that an Event is the
// record type of a JSON source (connector/file's JSONLines).
func (e *Event[T]) UnmarshalJSON(data []byte) error {
	*e = Event[T]{}
	if isNull(data) {
		return nil
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return &Error{Err: err}
	}
	if env.Op == "" && !isNull(env.Payload) {
		if len(env.Before)+len(env.After)+len(env.Source) > 0 || env.TsMs != nil {
			return &Error{Field: "payload", Err: errors.New("both an event and a payload")}
		}
		payload := env.Payload
		env = envelope{}
		if err := json.Unmarshal(payload, &env); err != nil {
			return &Error{Field: "payload", Err: err}
		}
	} else if env.Op == "" && env.Payload != nil {
		return nil // {"schema": ..., "payload": null}: a tombstone with schemas enabled
	}
	switch env.Op {
	case OpCreate, OpRead, OpUpdate, OpDelete:
	case "":
		return &Error{Field: "op", Err: errors.New("missing")}
	default:
		return &Error{Field: "op", Err: fmt.Errorf("%w %q", ErrUnsupportedOp, env.Op)}
	}
	var err error
	if e.Before, err = row[T](env.Before, "before"); err != nil {
		return err
	}
	if e.After, err = row[T](env.After, "after"); err != nil {
		return err
	}
	switch {
	case env.Op != OpDelete && e.After == nil:
		return &Error{Field: "after", Err: fmt.Errorf("null in an event with op %q", env.Op)}
	case env.Op == OpDelete && e.Before == nil:
		return &Error{Field: "before", Err: errors.New("null in a delete (the source table logs no before-image)")}
	}
	e.Op, e.Source = env.Op, env.Source
	if env.TsMs != nil {
		e.TsMs = *env.TsMs
	}
	return nil
}

func row[T any](raw json.RawMessage, field string) (*T, error) {
	if isNull(raw) {
		return nil, nil
	}
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, &Error{Field: field, Err: err}
	}
	return v, nil
}

// Changes appends the event's changes to dst: an Insert of After for c
// and r; an UpdateBefore of Before (when present) and an UpdateAfter of
// After for u; a Delete of Before for d; nothing for a tombstone. An
// update without a before-image yields an UpdateAfter alone, an upsert:
// feed such streams through weir.NormalizeChanges to get retractions.
func (e Event[T]) Changes(dst []weir.Change[T]) []weir.Change[T] {
	switch e.Op {
	case OpCreate, OpRead:
		dst = append(dst, weir.Change[T]{Kind: weir.Insert, Value: *e.After})
	case OpUpdate:
		if e.Before != nil {
			dst = append(dst, weir.Change[T]{Kind: weir.UpdateBefore, Value: *e.Before})
		}
		dst = append(dst, weir.Change[T]{Kind: weir.UpdateAfter, Value: *e.After})
	case OpDelete:
		dst = append(dst, weir.Change[T]{Kind: weir.Delete, Value: *e.Before})
	}
	return dst
}

// Changes turns a stream of events into the changelog they describe
// (Event.Changes of each, in order).
func Changes[T any](s *weir.Stream[Event[T]], opts ...weir.OperatorOption) *weir.Stream[weir.Change[T]] {
	return weir.FlatMap(s, func(e Event[T], emit func(weir.Change[T])) {
		var buf [2]weir.Change[T]
		for _, c := range e.Changes(buf[:0]) {
			emit(c)
		}
	}, append([]weir.OperatorOption{weir.Name("debezium.Changes")}, opts...)...)
}

// Encoder writes changes as Debezium events, one JSON object each. It
// holds an UpdateBefore until the next change: an UpdateAfter then makes
// one u event with both images, anything else first makes the held row a
// d event (a retraction without its update is a delete to a table). Use
// one Encoder per sink writer (it is not safe for concurrent use), and
// call Flush at the end and before a commit.
type Encoder[T any] struct {
	// Source is written as the events' "source" (omitted when nil).
	Source json.RawMessage

	held    T
	holding bool
}

// Append appends the events for c, processed at tsMs, to dst, each
// followed by a newline: none when c is an UpdateBefore (held), one
// otherwise, two when a held UpdateBefore is followed by something other
// than its UpdateAfter.
func (e *Encoder[T]) Append(dst []byte, c weir.Change[T], tsMs int64) ([]byte, error) {
	var err error
	if c.Kind == weir.UpdateAfter && e.holding {
		e.holding = false
		return e.event(dst, OpUpdate, &e.held, &c.Value, tsMs)
	}
	if dst, err = e.Flush(dst, tsMs); err != nil {
		return dst, err
	}
	switch c.Kind {
	case weir.Insert:
		return e.event(dst, OpCreate, nil, &c.Value, tsMs)
	case weir.UpdateAfter:
		return e.event(dst, OpUpdate, nil, &c.Value, tsMs)
	case weir.UpdateBefore:
		e.held, e.holding = c.Value, true
		return dst, nil
	case weir.Delete:
		return e.event(dst, OpDelete, &c.Value, nil, tsMs)
	}
	return dst, fmt.Errorf("debezium: change kind %v", c.Kind)
}

// Flush appends a held UpdateBefore, as a d event.
func (e *Encoder[T]) Flush(dst []byte, tsMs int64) ([]byte, error) {
	if !e.holding {
		return dst, nil
	}
	e.holding = false
	var zero T
	held := e.held
	e.held = zero
	return e.event(dst, OpDelete, &held, nil, tsMs)
}

func (e *Encoder[T]) event(dst []byte, op string, before, after *T, tsMs int64) ([]byte, error) {
	dst = append(dst, `{"before":`...)
	var err error
	if dst, err = appendRow(dst, before); err != nil {
		return dst, err
	}
	dst = append(dst, `,"after":`...)
	if dst, err = appendRow(dst, after); err != nil {
		return dst, err
	}
	dst = append(dst, `,"op":"`...)
	dst = append(dst, op...)
	dst = append(dst, '"')
	if e.Source != nil {
		dst = append(dst, `,"source":`...)
		dst = append(dst, e.Source...)
	}
	dst = append(dst, `,"ts_ms":`...)
	dst = strconv.AppendInt(dst, tsMs, 10)
	return append(dst, "}\n"...), nil
}

func appendRow[T any](dst []byte, v *T) ([]byte, error) {
	if v == nil {
		return append(dst, "null"...), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, fmt.Errorf("debezium: encoding a row: %w", err)
	}
	return append(dst, b...), nil
}
