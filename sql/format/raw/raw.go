// Package raw is the SQL layer's 'raw' format, as Flink's: the table has a
// single physical column of type STRING (or CHAR/VARCHAR) or BYTES, whose
// value is the record's bytes as they are. A NULL value writes an empty
// record (a Kafka record with a null value). Options: 'raw.charset' (only
// 'UTF-8'), 'raw.endianness' (accepted; it matters only for the numeric
// column types Flink also allows, which weir does not).
package raw

import (
	"fmt"
	"strings"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

func init() { format.Register(Factory{}) }

// Factory is the 'raw' format.
type Factory struct{}

// Identifier implements format.Factory.
func (Factory) Identifier() string { return "raw" }

func check(schema types.Schema, o *format.Scoped) error {
	if cs := o.O.String(o.Key("charset"), "UTF-8"); !strings.EqualFold(cs, "UTF-8") && !strings.EqualFold(cs, "UTF8") {
		return fmt.Errorf("option '%s' = '%s': only UTF-8 is supported", o.Key("charset"), cs)
	}
	o.O.Enum(o.Key("endianness"), "big-endian", "big-endian", "little-endian")
	if len(schema) != 1 {
		return fmt.Errorf("the raw format supports a single physical column, the table has %d", len(schema))
	}
	switch schema[0].Type.Kind {
	case types.Char, types.Varchar, types.Binary, types.Varbinary:
		return nil
	}
	return fmt.Errorf("the raw format supports a STRING or BYTES column, not %s (column '%s')", schema[0].Type, schema[0].Name)
}

// Decoder implements format.Factory.
func (Factory) Decoder(schema types.Schema, o *format.Scoped) (format.Decoder, types.ChangelogMode, error) {
	if err := check(schema, o); err != nil {
		return nil, types.InsertOnly, err
	}
	return Codec{}, types.InsertOnly, nil
}

// Encoder implements format.Factory.
func (Factory) Encoder(schema types.Schema, o *format.Scoped) (format.Encoder, types.ChangelogMode, error) {
	if err := check(schema, o); err != nil {
		return nil, types.InsertOnly, err
	}
	return Codec{}, types.InsertOnly, nil
}

// Codec decodes and encodes the single column.
type Codec struct{}

// Decode implements format.Decoder: one row holding the record.
func (Codec) Decode(data []byte, dst []types.Row) ([]types.Row, error) {
	return append(dst, types.Row{Kind: types.Insert, Values: []types.Value{{S: string(data)}}}), nil
}

// Encode implements format.Encoder.
func (Codec) Encode(dst []byte, row *types.Row) ([]byte, bool, error) {
	if len(row.Values) != 1 {
		return dst, false, fmt.Errorf("raw: a row of %d values", len(row.Values))
	}
	return append(dst, row.Values[0].S...), false, nil
}
