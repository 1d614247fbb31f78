package protobuf

import (
	"context"
	"strings"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() { format.Register(Factory{}) }

// Factory is the 'protobuf' format.
type Factory struct{}

// Identifier implements format.Factory.
func (Factory) Identifier() string { return "protobuf" }

// Options of a decoder and an encoder.
type Options struct {
	// IgnoreParseErrors: a record that does not decode is skipped (the
	// decoder returns a *format.SkipError).
	IgnoreParseErrors bool
	// ReadDefaultValues: a field with presence that a record lacks reads
	// as its default rather than NULL.
	ReadDefaultValues bool
	// WriteNullStringLiteral is written for a NULL string element of an
	// array or a map ("" by default).
	WriteNullStringLiteral string
}

// table is what a table's options name: the message and the options.
type table struct {
	file      string
	protoPath []string
	message   string
	opt       Options
}

func readOptions(o *format.Scoped) table {
	return readTableOptions(o, true)
}

// readTableOptions reads the options; the file and the message are
// required only if required is set (protobuf-confluent reads without them).
func readTableOptions(o *format.Scoped, required bool) table {
	str := o.O.Required
	if !required {
		str = func(k string) string { return o.O.String(k, "") }
	}
	t := table{
		file:    str(o.Key("proto-file")),
		message: str(o.Key("message-class-name")),
		opt: Options{
			IgnoreParseErrors:      o.O.Bool(o.Key("ignore-parse-errors"), false),
			ReadDefaultValues:      o.O.Bool(o.Key("read-default-values"), false),
			WriteNullStringLiteral: o.O.String(o.Key("write-null-string-literal"), ""),
		},
	}
	for _, d := range strings.Split(o.O.String(o.Key("proto-path"), "."), ";") {
		if d = strings.TrimSpace(d); d != "" {
			t.protoPath = append(t.protoPath, d)
		}
	}
	return t
}

func (t table) compile() (*Schema, error) {
	if t.file == "" || t.message == "" {
		return nil, nil // the missing option is reported by the options
	}
	return Compile(context.Background(), t.file, t.protoPath)
}

// Decoder implements format.Factory.
func (Factory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	t := readOptions(o)
	s, err := t.compile()
	if s == nil {
		return nil, types.InsertOnly, err
	}
	md, err := s.Message(t.message)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	d, err := NewDecoder(schema, md, t.opt)
	return d, types.InsertOnly, err
}

// Encoder implements format.Factory.
func (Factory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	t := readOptions(o)
	s, err := t.compile()
	if s == nil {
		return nil, types.InsertOnly, err
	}
	md, err := s.Message(t.message)
	if err != nil {
		return nil, types.InsertOnly, err
	}
	e, err := NewEncoder(schema, md, t.opt)
	return e, types.InsertOnly, err
}
