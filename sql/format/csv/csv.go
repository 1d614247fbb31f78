// Package csv is the SQL layer's 'csv' format, as Flink's: one record per
// line (a quoted field may hold line breaks), fields in column order,
// separated by 'csv.field-delimiter' (default ','), quoted with
// 'csv.quote-character' (default '"', a quote inside doubled) unless
// 'csv.disable-quote-character' is set.
//
// Values are in their text form (see format.TextDecoder): numbers as
// written, timestamps 'yyyy-MM-dd HH:mm:ss[.SSS]' (or epoch milliseconds
// when reading), BYTES base64. An empty unquoted field is NULL (an empty
// string is written ""), and so is a field equal to 'csv.null-literal'
// when that is set. Writing quotes the fields that need it and writes NULL
// as an empty field (or the null literal), so what is written reads back
// the same.
// ARRAY, MAP and ROW columns are not supported.
//
// A record with fewer or more fields than columns, or a field that does
// not parse, is an error naming the column; with 'csv.ignore-parse-errors'
// a field that does not parse is NULL, and a record with the wrong number
// of fields is skipped (and counted). 'csv.allow-comments' skips records
// starting with '#'.
package csv

import (
	"errors"
	"fmt"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() { format.Register(Factory{}) }

// Factory is the 'csv' format.
type Factory struct{}

// Identifier implements format.Factory.
func (Factory) Identifier() string { return "csv" }

// Options of the format.
type Options struct {
	Delimiter         byte
	Quote             byte // 0: quoting disabled
	IgnoreParseErrors bool
	AllowComments     bool
	NullLiteral       string
	HasNullLiteral    bool
}

func readOptions(o *format.Scoped) (Options, error) {
	opt := Options{Delimiter: ',', Quote: '"'}
	if d := o.O.String(o.Key("field-delimiter"), ","); len(d) == 1 {
		opt.Delimiter = d[0]
	} else if d == `\t` {
		opt.Delimiter = '\t'
	} else {
		return opt, fmt.Errorf("option '%s' must be a single character, not '%s'", o.Key("field-delimiter"), d)
	}
	if q := o.O.String(o.Key("quote-character"), `"`); len(q) == 1 {
		opt.Quote = q[0]
	} else {
		return opt, fmt.Errorf("option '%s' must be a single character, not '%s'", o.Key("quote-character"), q)
	}
	if o.O.Bool(o.Key("disable-quote-character"), false) {
		if o.O.Has(o.Key("quote-character")) {
			return opt, fmt.Errorf("format option '%s' and '%s' must not be set at the same time", o.Key("quote-character"), o.Key("disable-quote-character"))
		}
		opt.Quote = 0
	}
	if opt.Quote != 0 && opt.Quote == opt.Delimiter {
		return opt, errors.New("the quote character and the field delimiter must differ")
	}
	opt.IgnoreParseErrors = o.O.Bool(o.Key("ignore-parse-errors"), false)
	opt.AllowComments = o.O.Bool(o.Key("allow-comments"), false)
	opt.NullLiteral, opt.HasNullLiteral = o.O.Lookup(o.Key("null-literal"))
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

type column struct {
	name     string
	isString bool
	dec      func([]byte, *types.Value) error
	enc      func([]byte, *types.Value) []byte
}

func compile(schema types.Schema, opt Options) ([]column, error) {
	if opt.Delimiter == 0 {
		opt.Delimiter = ','
	}
	cols := make([]column, len(schema))
	for i, f := range schema {
		dec, err := format.TextDecoder(f.Type)
		if err != nil {
			return nil, fmt.Errorf("column '%s': the csv format does not support type %s", f.Name, f.Type)
		}
		enc, _ := format.TextEncoder(f.Type, ' ')
		cols[i] = column{name: f.Name, isString: f.Type.IsString(), dec: dec, enc: enc}
	}
	return cols, nil
}

// Decoder decodes CSV records. It is safe for concurrent use.
type Decoder struct {
	cols []column
	opt  Options
}

// NewDecoder compiles a decoder of rows of schema.
func NewDecoder(schema types.Schema, opt Options) (*Decoder, error) {
	cols, err := compile(schema, opt)
	if err != nil {
		return nil, err
	}
	if opt.Delimiter == 0 {
		opt.Delimiter = ','
	}
	return &Decoder{cols: cols, opt: opt}, nil
}

// SkipsParseErrors implements format.ParseErrorSkipper.
func (d *Decoder) SkipsParseErrors() bool { return d.opt.IgnoreParseErrors }

// Decode implements format.Decoder: one +I row per record. A trailing
// line break is ignored; an empty record gives no row.
func (d *Decoder) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	for n := len(data); n > 0 && (data[n-1] == '\n' || data[n-1] == '\r'); n = len(data) {
		data = data[:n-1]
	}
	if len(data) == 0 || (d.opt.AllowComments && data[0] == '#') {
		return dst, nil
	}
	vals := make([]types.Value, len(d.cols))
	i, col := 0, 0
	for {
		if col == len(d.cols) {
			return d.fail(dst, fmt.Errorf("csv: more than %d fields (at byte %d)", len(d.cols), i))
		}
		field, quoted, next, err := d.field(data, i)
		if err != nil {
			return d.fail(dst, err)
		}
		c := &d.cols[col]
		switch {
		case d.opt.HasNullLiteral && !quoted && string(field) == d.opt.NullLiteral:
			vals[col] = types.NullValue
		case len(field) == 0 && !quoted:
			vals[col] = types.NullValue
		default:
			if err := c.dec(field, &vals[col]); err != nil {
				if !d.opt.IgnoreParseErrors {
					return dst, fmt.Errorf("csv: column '%s' (field %d, at byte %d): %v", c.name, col+1, i, err)
				}
				vals[col] = types.NullValue
			}
		}
		col++
		if next >= len(data) {
			break
		}
		i = next + 1 // past the delimiter
		if i == len(data) {
			// A trailing delimiter: one more, empty field.
			if col == len(d.cols) {
				return d.fail(dst, fmt.Errorf("csv: more than %d fields (at byte %d)", len(d.cols), i))
			}
			vals[col] = types.NullValue
			col++
			break
		}
	}
	if col < len(d.cols) {
		return d.fail(dst, fmt.Errorf("csv: %d fields for %d columns (column '%s' is missing)", col, len(d.cols), d.cols[col].name))
	}
	return append(dst, types.Row{Kind: types.Insert, Values: vals}), nil
}

func (d *Decoder) fail(dst []types.Row, err error) ([]types.Row, error) {
	if d.opt.IgnoreParseErrors {
		return dst, &format.SkipError{Err: err}
	}
	return dst, err
}

// field returns the field starting at byte i, whether it was quoted, and
// the index of the delimiter that ends it (len(data) at the end).
func (d *Decoder) field(data []byte, i int) ([]byte, bool, int, error) {
	q := d.opt.Quote
	if q == 0 || i >= len(data) || data[i] != q {
		j := i
		for j < len(data) && data[j] != d.opt.Delimiter {
			if q != 0 && data[j] == q {
				return nil, false, 0, fmt.Errorf("csv: a quote inside an unquoted field at byte %d", j)
			}
			j++
		}
		return data[i:j], false, j, nil
	}
	// Quoted: find the closing quote; "" is a quote.
	start := i + 1
	var out []byte // only when the field holds doubled quotes
	j := start
	for {
		if j >= len(data) {
			return nil, false, 0, fmt.Errorf("csv: a quoted field starting at byte %d does not end", i)
		}
		if data[j] != q {
			j++
			continue
		}
		if j+1 < len(data) && data[j+1] == q {
			out = append(out, data[start:j+1]...)
			j += 2
			start = j
			continue
		}
		break
	}
	field := data[start:j]
	if out != nil {
		field = append(out, field...)
	}
	j++ // the closing quote
	if j < len(data) && data[j] != d.opt.Delimiter {
		return nil, false, 0, fmt.Errorf("csv: unexpected %q after a quoted field at byte %d", data[j], j)
	}
	return field, true, j, nil
}

// Encoder encodes rows as CSV records (without the line break). It is
// safe for concurrent use.
type Encoder struct {
	cols []column
	opt  Options
}

// NewEncoder compiles an encoder of rows of schema.
func NewEncoder(schema types.Schema, opt Options) (*Encoder, error) {
	cols, err := compile(schema, opt)
	if err != nil {
		return nil, err
	}
	if opt.Delimiter == 0 {
		opt.Delimiter = ','
	}
	return &Encoder{cols: cols, opt: opt}, nil
}

// Encode implements format.Encoder.
func (e *Encoder) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	if len(row.Values) != len(e.cols) {
		return dst, false, fmt.Errorf("csv: a row of %d values for %d columns", len(row.Values), len(e.cols))
	}
	for i := range e.cols {
		if i > 0 {
			dst = append(dst, e.opt.Delimiter)
		}
		v := &row.Values[i]
		if v.Null {
			if e.opt.HasNullLiteral {
				dst = append(dst, e.opt.NullLiteral...)
			}
			continue
		}
		start := len(dst)
		dst = e.cols[i].enc(dst, v)
		if e.opt.Quote != 0 && e.needsQuotes(dst[start:], e.cols[i].isString) {
			dst = e.quote(dst, start)
		}
	}
	return dst, false, nil
}

func (e *Encoder) needsQuotes(f []byte, isString bool) bool {
	if len(f) == 0 {
		// An empty string is written "" so it reads back as a string,
		// not as NULL.
		return isString
	}
	for _, c := range f {
		if c == e.opt.Delimiter || c == e.opt.Quote || c == '\n' || c == '\r' {
			return true
		}
	}
	return e.opt.HasNullLiteral && string(f) == e.opt.NullLiteral
}

// quote rewrites dst[start:] quoted, doubling quotes.
func (e *Encoder) quote(dst []byte, start int) []byte {
	field := append([]byte(nil), dst[start:]...)
	dst = append(dst[:start], e.opt.Quote)
	for _, c := range field {
		if c == e.opt.Quote {
			dst = append(dst, c)
		}
		dst = append(dst, c)
	}
	return append(dst, e.opt.Quote)
}
