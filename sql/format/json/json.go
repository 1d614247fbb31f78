// Package json is the SQL layer's 'json' format, as Flink's: a row is a
// JSON object whose keys are the column names; nested ROWs are objects,
// ARRAYs arrays and MAPs objects (keys in their text form).
//
// Reading: numbers may also be given as strings ("42"); DECIMAL is read
// exactly from a number or a string (rounded half-up to the scale, an
// error if it has too many digits); TIMESTAMP(p) and TIMESTAMP_LTZ(p) from
// 'yyyy-MM-dd HH:mm:ss[.SSS]' strings (ISO-8601's 'T' is accepted too) or
// from integers of epoch milliseconds (UTC); DATE from 'yyyy-MM-dd', TIME
// from 'HH:mm:ss[.SSS]'; BYTES from base64; a STRING column takes a non-
// string JSON value as its JSON text. Unknown keys are ignored; a missing
// key is NULL, or an error with 'json.fail-on-missing-field'. An empty
// record (a Kafka tombstone) gives no row.
//
// With 'json.key-matching' = 'loose' (a weir extension) a key that no
// column has exactly matches the column whose name is the same ignoring
// case and underscores, so Flink's Nexmark ddl (dateTime, emailAddress)
// reads weir's Nexmark JSON lines (date_time, email_address).
//
// Writing: columns in schema order; timestamps in the SQL form
// ('yyyy-MM-dd HH:mm:ss.SSS', trailing zeros of the fraction removed, as
// Flink) or ISO-8601 with 'json.timestamp-format.standard' = 'ISO-8601';
// DECIMAL as a plain number; NULL as null (or left out with
// 'json.encode.ignore-null-fields').
//
// The decoder and encoder are compiled once from the schema into closures;
// a record is parsed in one pass over its bytes, without reflection, maps
// or encoding/json.
package json

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/weirstream/weir/internal/jsonstr"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() { format.Register(Factory{}) }

// Factory is the 'json' format.
type Factory struct{}

// Identifier implements format.Factory.
func (Factory) Identifier() string { return "json" }

// Options of a decoder (see Compile).
type Options struct {
	// FailOnMissingField: a key of the schema missing from a record is an
	// error rather than NULL.
	FailOnMissingField bool
	// IgnoreParseErrors: a record that does not parse is skipped (the
	// decoder returns a *format.SkipError).
	IgnoreParseErrors bool
	// ISOTimestamps writes timestamps with a 'T' (ISO-8601).
	ISOTimestamps bool
	// IgnoreNullFields leaves NULL columns out when writing.
	IgnoreNullFields bool
	// MapNullKey says what to do with a NULL map key when writing: "FAIL",
	// "DROP" the entry, or "LITERAL" (write MapNullKeyLiteral).
	MapNullKey        string
	MapNullKeyLiteral string
	// LooseKeys matches a key to a column ignoring case and underscores
	// when no column has its exact name ('json.key-matching' = 'loose', a
	// weir extension): a ddl's dateTime reads a file's date_time.
	LooseKeys bool
	// FailOnInvalidUTF8 makes writing a string that is not valid UTF-8 an
	// error ('json.encode.invalid-utf8' = 'FAIL', a weir extension); by
	// default ('REPLACE') each invalid byte is written as U+FFFD, as
	// Flink's JSON format does.
	FailOnInvalidUTF8 bool
}

func readOptions(o *format.Scoped) (Options, error) {
	opt := Options{
		FailOnMissingField: o.O.Bool(o.Key("fail-on-missing-field"), false),
		IgnoreParseErrors:  o.O.Bool(o.Key("ignore-parse-errors"), false),
		ISOTimestamps:      o.O.Enum(o.Key("timestamp-format.standard"), "SQL", "SQL", "ISO-8601") == "ISO-8601",
		IgnoreNullFields:   o.O.Bool(o.Key("encode.ignore-null-fields"), false),
		MapNullKey:         o.O.Enum(o.Key("map-null-key.mode"), "FAIL", "FAIL", "DROP", "LITERAL"),
		MapNullKeyLiteral:  o.O.String(o.Key("map-null-key.literal"), "null"),
		LooseKeys:          o.O.Enum(o.Key("key-matching"), "exact", "exact", "loose") == "loose",
		FailOnInvalidUTF8:  o.O.Enum(o.Key("encode.invalid-utf8"), "REPLACE", "REPLACE", "FAIL") == "FAIL",
	}
	// Written as plain numbers always; accepted for Flink compatibility.
	o.O.Bool(o.Key("encode.decimal-as-plain-number"), false)
	if opt.FailOnMissingField && opt.IgnoreParseErrors {
		return opt, errors.New("fail-on-missing-field and ignore-parse-errors shouldn't both be true")
	}
	return opt, nil
}

// Decoder implements format.Factory.
func (Factory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	opt, err := readOptions(o)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	d, err := NewDecoder(schema, opt)
	return d, types.InsertOnly, err
}

// Encoder implements format.Factory.
func (Factory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	opt, err := readOptions(o)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	e, err := NewEncoder(schema, opt)
	return e, types.InsertOnly, err
}

// Decoder decodes JSON objects into rows. It is safe for concurrent use.
type Decoder struct {
	row *rowDec
	opt Options
}

// NewDecoder compiles a decoder of rows of schema.
func NewDecoder(schema types.Schema, opt Options) (*Decoder, error) {
	r, err := compileRow(schema, opt)
	if err != nil {
		return nil, err
	}
	return &Decoder{row: r, opt: opt}, nil
}

// parsers are reused: a parser escapes to the heap (the compiled
// decoders are closures taking it), and its unescape buffer is worth
// keeping.
var parsers = sync.Pool{New: func() any { return new(parser) }}

// Decode implements format.Decoder: it appends one +I row.
func (d *Decoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	p := parsers.Get().(*parser)
	p.b, p.i = data, 0
	defer func() {
		p.b = nil
		parsers.Put(p)
	}()
	p.ws()
	if p.i == len(p.b) {
		return dst, nil
	}
	vals := make([]types.Value, len(d.row.fields))
	err := d.row.decodeInto(p, vals)
	if err == nil {
		p.ws()
		if p.i < len(p.b) {
			err = p.errorf("unexpected %s after the object", p.what())
		}
	}
	if err != nil {
		if d.opt.IgnoreParseErrors {
			return dst, &format.SkipError{Err: err}
		}
		return dst, err
	}
	return append(dst, types.Row{Kind: types.Insert, Values: vals}), nil
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *Decoder) SkipsParseErrors() bool { return d.opt.IgnoreParseErrors }

// DecodeValues decodes one JSON object into vals (len = the schema's
// columns), for formats that wrap rows (debezium-json).
func (d *Decoder) DecodeValues(p *Parser, vals []types.Value) error {
	return d.row.decodeInto((*parser)(p), vals)
}

// Parser is a position in a JSON text, for formats built on this one.
type Parser parser

// NewParser starts parsing b.
func NewParser(b []byte) *Parser { return &Parser{b: b} }

// parser reads a JSON text.
type parser struct {
	b   []byte
	i   int
	tmp []byte // unescaped string
}

// Parser methods for wrapping formats.

// WS skips white space; Peek returns the next byte (0 at the end).
func (p *Parser) WS() { (*parser)(p).ws() }

// Peek returns the next byte, 0 at the end.
func (p *Parser) Peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// Offset returns the byte offset of the parser.
func (p *Parser) Offset() int { return p.i }

// Expect consumes byte c after white space.
func (p *Parser) Expect(c byte) error { return (*parser)(p).expect(c) }

// Key reads an object key and its ':'; the slice is valid until the next
// call.
func (p *Parser) Key() ([]byte, error) {
	q := (*parser)(p)
	k, err := q.str()
	if err != nil {
		return nil, err
	}
	return k, q.expect(':')
}

// Null consumes a null literal if one is next.
func (p *Parser) Null() bool { return (*parser)(p).null() }

// String reads a JSON string (the slice is valid until the next call).
func (p *Parser) String() ([]byte, error) { return (*parser)(p).str() }

// Skip skips one JSON value.
func (p *Parser) Skip() error { return (*parser)(p).skip() }

// Errorf makes an error at the parser's offset.
func (p *Parser) Errorf(f string, args ...any) error { return (*parser)(p).errorf(f, args...) }

func (p *parser) errorf(f string, args ...any) error {
	return &SyntaxError{Offset: p.i, Msg: fmt.Sprintf(f, args...)}
}

// SyntaxError is a malformed JSON text, at a byte offset of the record.
type SyntaxError struct {
	Offset int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("json: %s at byte %d", e.Msg, e.Offset) }

// FieldError is a value of a field that does not fit its type.
type FieldError struct {
	Path string // "bid.price", "tags[2]"
	Err  error
}

func (e *FieldError) Error() string { return fmt.Sprintf("json: field '%s': %v", e.Path, e.Err) }
func (e *FieldError) Unwrap() error { return e.Err }

func inField(name string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		sep := "."
		if len(fe.Path) > 0 && fe.Path[0] == '[' {
			sep = ""
		}
		return &FieldError{Path: name + sep + fe.Path, Err: fe.Err}
	}
	return &FieldError{Path: name, Err: err}
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) what() string {
	if p.i >= len(p.b) {
		return "end of input"
	}
	c := p.b[p.i]
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("byte 0x%02x", c)
	}
	return fmt.Sprintf("'%c'", c)
}

func (p *parser) expect(c byte) error {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return nil
	}
	return p.errorf("expected '%c', found %s", c, p.what())
}

func (p *parser) null() bool {
	p.ws()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// str reads a string; the result aliases the input or p.tmp.
func (p *parser) str() ([]byte, error) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, p.errorf("expected a string, found %s", p.what())
	}
	out, next, err := jsonstr.Read(p.b, p.i+1, p.tmp)
	if err != nil {
		p.i = err.Offset
		return nil, p.errorf("%s", err.Msg)
	}
	if len(out) > 0 && &out[0] != &p.b[p.i+1] {
		p.tmp = out // keep the grown scratch buffer for the next string
	}
	p.i = next
	return out, nil
}

// number reads a number token.
func (p *parser) number() ([]byte, error) {
	p.ws()
	start := p.i
	for p.i < len(p.b) {
		c := p.b[p.i]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.i++
			continue
		}
		break
	}
	if p.i == start {
		return nil, p.errorf("expected a number, found %s", p.what())
	}
	return p.b[start:p.i], nil
}

// skip skips one value.
func (p *parser) skip() error {
	p.ws()
	if p.i >= len(p.b) {
		return p.errorf("expected a value, found end of input")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{' || c == '[':
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		p.i++
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == close {
			p.i++
			return nil
		}
		for {
			if c == '{' {
				if _, err := p.str(); err != nil {
					return err
				}
				if err := p.expect(':'); err != nil {
					return err
				}
			}
			if err := p.skip(); err != nil {
				return err
			}
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			return p.expect(close)
		}
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	default:
		_, err := p.number()
		return err
	}
}

func (p *parser) literal(s string) error {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return nil
	}
	return p.errorf("invalid literal, found %s", p.what())
}

// valueDec decodes a non-null JSON value at the parser into v.
type valueDec func(p *parser, v *types.Value) error

type rowDec struct {
	fields []rowField
	opt    Options
}

type rowField struct {
	name  []byte
	loose []byte // the name lowercased without underscores (LooseKeys)
	dec   valueDec
}

// looseName lowercases s and drops its underscores.
func looseName(dst, s []byte) []byte {
	for _, c := range s {
		switch {
		case c == '_':
		case c >= 'A' && c <= 'Z':
			dst = append(dst, c+'a'-'A')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func compileRow(fields []types.Field, opt Options) (*rowDec, error) {
	r := &rowDec{opt: opt}
	for _, f := range fields {
		d, err := compile(f.Type, opt)
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", f.Name, err)
		}
		r.fields = append(r.fields, rowField{name: []byte(f.Name), loose: looseName(nil, []byte(f.Name)), dec: d})
	}
	return r, nil
}

// decodeInto reads an object into vals.
func (r *rowDec) decodeInto(p *parser, vals []types.Value) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	var seenSmall uint64
	var seenBig []bool
	if len(r.fields) > 64 {
		seenBig = make([]bool, len(r.fields))
	}
	for i := range vals {
		vals[i] = types.NullValue
	}
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		next := 0 // keys usually come in schema order: try the next field first
		for {
			key, err := p.str()
			if err != nil {
				return err
			}
			idx := -1
			if next < len(r.fields) && bytes.Equal(r.fields[next].name, key) {
				idx = next
			} else {
				for j := range r.fields {
					if bytes.Equal(r.fields[j].name, key) {
						idx = j
						break
					}
				}
				if idx < 0 && r.opt.LooseKeys {
					var buf [64]byte
					lk := looseName(buf[:0], key)
					for j := range r.fields {
						if bytes.Equal(r.fields[j].loose, lk) {
							idx = j
							break
						}
					}
				}
			}
			if idx < 0 {
				// Unknown keys are ignored, as Flink does.
				if err := p.expect(':'); err != nil {
					return err
				}
				if err := p.skip(); err != nil {
					return err
				}
			} else {
				next = idx + 1
				if err := p.expect(':'); err != nil {
					return err
				}
				if seenBig != nil {
					seenBig[idx] = true
				} else {
					seenSmall |= 1 << uint(idx)
				}
				if p.null() {
					vals[idx] = types.NullValue
				} else if err := r.fields[idx].dec(p, &vals[idx]); err != nil {
					return inField(string(r.fields[idx].name), err)
				}
			}
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ',' {
				p.i++
				continue
			}
			if err := p.expect('}'); err != nil {
				return err
			}
			break
		}
	}
	if r.opt.FailOnMissingField {
		for j := range r.fields {
			seen := false
			if seenBig != nil {
				seen = seenBig[j]
			} else {
				seen = seenSmall&(1<<uint(j)) != 0
			}
			if !seen {
				return &FieldError{Path: string(r.fields[j].name), Err: errors.New("missing (json.fail-on-missing-field is true)")}
			}
		}
	}
	return nil
}

func compile(t types.Type, opt Options) (valueDec, error) {
	switch t.Kind {
	case types.Structured:
		r, err := compileRow(t.Fields, opt)
		if err != nil {
			return nil, err
		}
		return func(p *parser, v *types.Value) error {
			vals := make([]types.Value, len(r.fields))
			if err := r.decodeInto(p, vals); err != nil {
				return err
			}
			*v = types.Value{X: vals}
			return nil
		}, nil
	case types.Array, types.Multiset:
		if t.Elem == nil {
			return nil, fmt.Errorf("%s without an element type", t.Kind)
		}
		elem, err := compile(*t.Elem, opt)
		if err != nil {
			return nil, err
		}
		return func(p *parser, v *types.Value) error {
			if err := p.expect('['); err != nil {
				return err
			}
			var out []types.Value
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == ']' {
				p.i++
				*v = types.Value{X: []types.Value{}}
				return nil
			}
			for {
				var e types.Value
				if p.null() {
					e = types.NullValue
				} else if err := elem(p, &e); err != nil {
					return inField("["+strconv.Itoa(len(out))+"]", err)
				}
				out = append(out, e)
				p.ws()
				if p.i < len(p.b) && p.b[p.i] == ',' {
					p.i++
					continue
				}
				if err := p.expect(']'); err != nil {
					return err
				}
				*v = types.Value{X: out}
				return nil
			}
		}, nil
	case types.Map:
		if t.Key == nil || t.Elem == nil {
			return nil, errors.New("MAP without key or value type")
		}
		key, err := format.TextDecoder(*t.Key)
		if err != nil {
			return nil, fmt.Errorf("MAP key: %w", err)
		}
		val, err := compile(*t.Elem, opt)
		if err != nil {
			return nil, err
		}
		return func(p *parser, v *types.Value) error {
			if err := p.expect('{'); err != nil {
				return err
			}
			out := []types.Value{}
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == '}' {
				p.i++
				*v = types.Value{X: out}
				return nil
			}
			for {
				k, err := p.str()
				if err != nil {
					return err
				}
				var kv, vv types.Value
				if err := key(k, &kv); err != nil {
					return inField("[key "+strconv.Quote(string(k))+"]", err)
				}
				if err := p.expect(':'); err != nil {
					return err
				}
				if p.null() {
					vv = types.NullValue
				} else if err := val(p, &vv); err != nil {
					return inField("["+strconv.Quote(kv.S)+"]", err)
				}
				out = append(out, kv, vv)
				p.ws()
				if p.i < len(p.b) && p.b[p.i] == ',' {
					p.i++
					continue
				}
				if err := p.expect('}'); err != nil {
					return err
				}
				*v = types.Value{X: out}
				return nil
			}
		}, nil
	case types.Char, types.Varchar:
		return func(p *parser, v *types.Value) error {
			p.ws()
			if p.i < len(p.b) && p.b[p.i] == '"' {
				s, err := p.str()
				if err != nil {
					return err
				}
				*v = types.Value{S: string(s)}
				return nil
			}
			// A non-string value gives its JSON text, as Flink's
			// jsonNode.toString().
			start := p.i
			if err := p.skip(); err != nil {
				return err
			}
			*v = types.Value{S: string(p.b[start:p.i])}
			return nil
		}, nil
	case types.Boolean:
		text, _ := format.TextDecoder(t)
		return func(p *parser, v *types.Value) error {
			p.ws()
			if p.i < len(p.b) {
				switch p.b[p.i] {
				case 't':
					*v = types.Value{I: 1}
					return p.literal("true")
				case 'f':
					*v = types.Value{}
					return p.literal("false")
				case '"':
					s, err := p.str()
					if err != nil {
						return err
					}
					return text(s, v)
				}
			}
			return p.errorf("expected a BOOLEAN, found %s", p.what())
		}, nil
	case types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Interval:
		text, _ := format.TextDecoder(types.Type{Kind: t.Kind})
		return stringOrNumber(text), nil
	case types.Timestamp, types.TimestampLTZ, types.Float, types.Double, types.Decimal, types.Date, types.Time, types.Binary, types.Varbinary:
		// The text form, from a string or (numbers, epoch milliseconds) a
		// number.
		text, err := format.TextDecoder(t)
		if err != nil {
			return nil, err
		}
		return stringOrNumber(text), nil
	}
	return nil, fmt.Errorf("the json format does not support type %s", t)
}

// stringOrNumber decodes a value from its text form, given as a JSON
// string or as a bare number (integers, decimals, epoch milliseconds).
func stringOrNumber(text func([]byte, *types.Value) error) func(*parser, *types.Value) error {
	return func(p *parser, v *types.Value) error {
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == '"' {
			s, err := p.str()
			if err != nil {
				return err
			}
			return text(s, v)
		}
		n, err := p.number()
		if err != nil {
			return err
		}
		return text(n, v)
	}
}

// Encoder encodes rows as JSON objects. It is safe for concurrent use.
type Encoder struct {
	row rowEnc
}

type rowEnc func(dst []byte, vals []types.Value) ([]byte, error)

type valueEnc func(dst []byte, v *types.Value) ([]byte, error)

// NewEncoder compiles an encoder of rows of schema.
func NewEncoder(schema types.Schema, opt Options) (*Encoder, error) {
	r, err := compileRowEnc(schema, opt)
	if err != nil {
		return nil, err
	}
	return &Encoder{row: r}, nil
}

// Encode implements format.Encoder; it writes the row's values whatever
// its kind (the planner gives an insert-only format +I rows only).
func (e *Encoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	out, err := e.row(dst, row.Values)
	return out, false, err
}

// AppendValues appends the object of one row's values.
func (e *Encoder) AppendValues(dst []byte, vals []types.Value) ([]byte, error) {
	return e.row(dst, vals)
}

func compileRowEnc(fields []types.Field, opt Options) (rowEnc, error) {
	type fieldEnc struct {
		key []byte // `"name":`
		enc valueEnc
	}
	fs := make([]fieldEnc, len(fields))
	for i, f := range fields {
		e, err := compileEnc(f.Type, opt)
		if err != nil {
			return nil, fmt.Errorf("column '%s': %w", f.Name, err)
		}
		k := AppendString(nil, f.Name)
		fs[i] = fieldEnc{key: append(k, ':'), enc: e}
	}
	return func(dst []byte, vals []types.Value) ([]byte, error) {
		if len(vals) != len(fs) {
			return dst, fmt.Errorf("json: a row of %d values for %d columns", len(vals), len(fs))
		}
		dst = append(dst, '{')
		first := true
		for i := range fs {
			if vals[i].Null && opt.IgnoreNullFields {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, fs[i].key...)
			if vals[i].Null {
				dst = append(dst, "null"...)
				continue
			}
			var err error
			if dst, err = fs[i].enc(dst, &vals[i]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}, nil
}

func compileEnc(t types.Type, opt Options) (valueEnc, error) {
	sep := byte(' ')
	if opt.ISOTimestamps {
		sep = 'T'
	}
	switch t.Kind {
	case types.Structured:
		r, err := compileRowEnc(t.Fields, opt)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, v *types.Value) ([]byte, error) {
			vals, _ := v.X.([]types.Value)
			return r(dst, vals)
		}, nil
	case types.Array, types.Multiset:
		if t.Elem == nil {
			return nil, fmt.Errorf("%s without an element type", t.Kind)
		}
		elem, err := compileEnc(*t.Elem, opt)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, v *types.Value) ([]byte, error) {
			vals, _ := v.X.([]types.Value)
			dst = append(dst, '[')
			for i := range vals {
				if i > 0 {
					dst = append(dst, ',')
				}
				if vals[i].Null {
					dst = append(dst, "null"...)
					continue
				}
				var err error
				if dst, err = elem(dst, &vals[i]); err != nil {
					return dst, err
				}
			}
			return append(dst, ']'), nil
		}, nil
	case types.Map:
		if t.Key == nil || t.Elem == nil {
			return nil, errors.New("MAP without key or value type")
		}
		key, err := format.TextEncoder(*t.Key, sep)
		if err != nil {
			return nil, fmt.Errorf("MAP key: %w", err)
		}
		val, err := compileEnc(*t.Elem, opt)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, v *types.Value) ([]byte, error) {
			vals, _ := v.X.([]types.Value)
			dst = append(dst, '{')
			first := true
			var kb []byte
			for i := 0; i+1 < len(vals); i += 2 {
				if vals[i].Null {
					switch opt.MapNullKey {
					case "DROP":
						continue
					case "LITERAL":
						kb = append(kb[:0], opt.MapNullKeyLiteral...)
					default:
						return dst, errors.New("json: a map with a NULL key (set 'json.map-null-key.mode' to 'DROP' or 'LITERAL')")
					}
				} else {
					kb = key(kb[:0], &vals[i])
				}
				if !first {
					dst = append(dst, ',')
				}
				first = false
				var bad int
				if dst, bad = jsonstr.AppendStrict(dst, kb, opt.FailOnInvalidUTF8); bad >= 0 {
					return dst, invalidUTF8(bad)
				}
				dst = append(dst, ':')
				if vals[i+1].Null {
					dst = append(dst, "null"...)
					continue
				}
				var err error
				if dst, err = val(dst, &vals[i+1]); err != nil {
					return dst, err
				}
			}
			return append(dst, '}'), nil
		}, nil
	case types.Char, types.Varchar:
		fail := opt.FailOnInvalidUTF8
		return func(dst []byte, v *types.Value) ([]byte, error) {
			dst, bad := jsonstr.AppendStrict(dst, v.S, fail)
			if bad >= 0 {
				return dst, invalidUTF8(bad)
			}
			return dst, nil
		}, nil
	case types.Boolean, types.TinyInt, types.SmallInt, types.Int, types.BigInt, types.Interval, types.Decimal:
		text, _ := format.TextEncoder(t, sep)
		return func(dst []byte, v *types.Value) ([]byte, error) { return text(dst, v), nil }, nil
	case types.Float, types.Double:
		bits := 64
		if t.Kind == types.Float {
			bits = 32
		}
		return func(dst []byte, v *types.Value) ([]byte, error) {
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) {
				// Not JSON numbers: written as strings, which the decoder reads.
				return append(format.AppendFloat(append(dst, '"'), f, bits), '"'), nil
			}
			return strconv.AppendFloat(dst, f, 'g', -1, bits), nil
		}, nil
	case types.Timestamp, types.TimestampLTZ, types.Date, types.Time, types.Binary, types.Varbinary:
		text, err := format.TextEncoder(t, sep)
		if err != nil {
			return nil, err
		}
		return func(dst []byte, v *types.Value) ([]byte, error) {
			dst = append(dst, '"')
			return append(text(dst, v), '"'), nil
		}, nil
	}
	return nil, fmt.Errorf("the json format does not support type %s", t)
}

// AppendString appends s as a JSON string; bytes that are not valid UTF-8
// become U+FFFD.
func AppendString(dst []byte, s string) []byte {
	return jsonstr.Append(dst, s)
}

// invalidUTF8 is the error of a string that is not valid UTF-8 with
// 'json.encode.invalid-utf8' = 'FAIL'.
func invalidUTF8(at int) error {
	return fmt.Errorf("json: a string that is not valid UTF-8 (byte %d); 'json.encode.invalid-utf8' = 'REPLACE' writes U+FFFD for it, as Flink does", at)
}
