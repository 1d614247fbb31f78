package json_test

import (
	stdjson "encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/json"
	"github.com/weirstream/weir/sql/types"
)

func f(name string, t types.Type) types.Field { return types.Field{Name: name, Type: t} }

var schema = types.Schema{
	f("id", types.BigIntType),
	f("name", types.StringType),
	f("price", types.DecimalType(10, 2)),
	f("big", types.DecimalType(30, 4)),
	f("ts", types.Timestamp3),
	f("ok", types.BooleanType),
	f("d", types.DoubleType),
	f("day", types.DateType),
	f("tags", types.ArrayOf(types.StringType)),
	f("attrs", types.MapOf(types.StringType, types.IntType)),
	f("bid", types.RowOf(f("auction", types.BigIntType), f("at", types.Timestamp3))),
}

func mustDecoder(t *testing.T, s types.Schema, opt json.Options) *json.Decoder {
	t.Helper()
	d, err := json.NewDecoder(s, opt)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func decodeOne(t *testing.T, d format.Decoder, line string) types.Row {
	t.Helper()
	rows, err := d.Decode([]byte(line), nil)
	if err != nil {
		t.Fatalf("Decode(%s): %v", line, err)
	}
	if len(rows) != 1 {
		t.Fatalf("Decode(%s): %d rows", line, len(rows))
	}
	return rows[0]
}

func TestDecodeTypes(t *testing.T) {
	d := mustDecoder(t, schema, json.Options{})
	r := decodeOne(t, d, `{"id": 7, "name": "a\"b\u00e9", "price": 12.345, "big": "-123456789012345678901234.5",
		"ts": "2020-04-15 08:05:01.5", "ok": true, "d": 1.5e3, "day": "2020-02-29",
		"tags": ["x", null, "y"], "attrs": {"k": 1, "z": null}, "unknown": {"a": [1, 2]},
		"bid": {"at": 1586937901500, "auction": "42"}}`)
	v := r.Values
	if r.Kind != types.Insert || v[0].I != 7 || v[1].S != "a\"bé" || v[2].I != 1235 {
		t.Fatalf("row %+v", r)
	}
	want, _ := new(big.Int).SetString("-1234567890123456789012345000", 10)
	if v[3].BigInt().Cmp(want) != 0 {
		t.Fatalf("big = %v, want %v", v[3].BigInt(), want)
	}
	// 2020-04-15 08:05:01.5 UTC = 1586937901500 ms.
	if v[4].I != 1586937901500_000 || v[10].List()[1].I != 1586937901500_000 || v[10].List()[0].I != 42 {
		t.Fatalf("timestamps: %d %+v", v[4].I, v[10])
	}
	if !v[5].Bool() || v[6].Float() != 1500 || v[7].I != 18321 {
		t.Fatalf("ok/d/day: %+v %+v %+v", v[5], v[6], v[7])
	}
	tags := v[8].List()
	if len(tags) != 3 || tags[0].S != "x" || !tags[1].Null || tags[2].S != "y" {
		t.Fatalf("tags %+v", tags)
	}
	attrs := v[9].List()
	if len(attrs) != 4 || attrs[0].S != "k" || attrs[1].I != 1 || !attrs[3].Null {
		t.Fatalf("attrs %+v", attrs)
	}
	// Missing keys are NULL.
	r = decodeOne(t, d, `{"id": 1}`)
	for i, x := range r.Values[1:] {
		if !x.Null {
			t.Fatalf("column %d = %+v, want NULL", i+1, x)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	d := mustDecoder(t, schema, json.Options{})
	e, err := json.NewEncoder(schema, json.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := `{"id":7,"name":"tab\there \"q\"","price":-0.05,"big":"1.0000","ts":"2020-04-15 08:05:00","ok":false,"d":0.25,"day":"1969-12-31","tags":["x",null],"attrs":{"k":1},"bid":{"auction":42,"at":"1970-01-01 00:00:00.001"}}`
	r := decodeOne(t, d, in)
	out, skip, err := e.Encode(nil, &r)
	if err != nil || skip {
		t.Fatal(err, skip)
	}
	want := `{"id":7,"name":"tab\there \"q\"","price":-0.05,"big":1.0000,"ts":"2020-04-15 08:05:00","ok":false,"d":0.25,"day":"1969-12-31","tags":["x",null],"attrs":{"k":1},"bid":{"auction":42,"at":"1970-01-01 00:00:00.001"}}`
	if string(out) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", out, want)
	}
	r2 := decodeOne(t, d, string(out))
	if !r.Equal(r2) {
		t.Fatalf("round trip: %+v != %+v", r, r2)
	}
}

func TestMalformed(t *testing.T) {
	d := mustDecoder(t, schema, json.Options{})
	for _, c := range []struct{ in, want string }{
		{`{"id": 7,}`, "expected a string, found '}' at byte 9"},
		{`{"id": x}`, "field 'id': json: expected a number, found 'x' at byte 7"},
		{`{"id": 99999999999999999999}`, "field 'id': '99999999999999999999' is not a BIGINT"},
		{`{"price": 123456789.1}`, "field 'price': '123456789.1': 123456789.1 does not fit in DECIMAL(10, 2)"},
		{`{"ts": "2020-13-01 00:00:00"}`, "field 'ts': '2020-13-01 00:00:00' is not a timestamp"},
		{`{"bid": {"auction": true}}`, "field 'bid.auction': json: expected a number, found 't'"},
		{`{"tags": ["a", 1, "b"}`, "expected ']', found '}' at byte 21"},
		{`{"id": 1} x`, "unexpected 'x' after the object at byte 10"},
		{`[1]`, "expected '{', found '['"},
		{`{"name": "abc`, "unterminated string"},
	} {
		_, err := d.Decode([]byte(c.in), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
}

func TestOptions(t *testing.T) {
	s := types.Schema{f("a", types.IntType), f("b", types.StringType)}
	newOpts := func(m map[string]string) *connector.Options {
		m["connector"] = "filesystem"
		return connector.NewOptions(&connector.Table{Name: "t", Options: m})
	}
	// fail-on-missing-field
	o := newOpts(map[string]string{"format": "json", "json.fail-on-missing-field": "true"})
	dec, _ := format.NewDecoder(o, "format", s)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := dec.Decode([]byte(`{"a": 1}`), nil); err == nil || !strings.Contains(err.Error(), "field 'b': missing") {
		t.Fatalf("missing field: %v", err)
	}
	// ignore-parse-errors: a SkipError, no row
	o = newOpts(map[string]string{"format": "json", "json.ignore-parse-errors": "true"})
	dec, _ = format.NewDecoder(o, "format", s)
	rows, err := dec.Decode([]byte(`{"a": "x"}`), nil)
	var skip *format.SkipError
	if !errors.As(err, &skip) || len(rows) != 0 {
		t.Fatalf("ignore-parse-errors: %v, %d rows", err, len(rows))
	}
	// both: an error, as Flink
	o = newOpts(map[string]string{"format": "json", "json.ignore-parse-errors": "true", "json.fail-on-missing-field": "true"})
	format.NewDecoder(o, "format", s)
	if err := o.Err(); err == nil || !strings.Contains(err.Error(), "shouldn't both be true") {
		t.Fatalf("both options: %v", err)
	}
	// unknown format option
	o = newOpts(map[string]string{"format": "json", "json.fail-on-missng-field": "true"})
	format.NewDecoder(o, "format", s)
	err = o.Err()
	if err == nil || !strings.Contains(err.Error(), "unsupported options found for 'filesystem': 'json.fail-on-missng-field'") ||
		!strings.Contains(err.Error(), "json.fail-on-missing-field") || !strings.Contains(err.Error(), "table 't'") {
		t.Fatalf("typo: %v", err)
	}
	// ISO-8601 and ignore-null-fields when writing
	ts := types.Schema{f("ts", types.Timestamp3), f("n", types.IntType)}
	o = newOpts(map[string]string{"format": "json", "json.timestamp-format.standard": "ISO-8601", "json.encode.ignore-null-fields": "true"})
	enc, _ := format.NewEncoder(o, "format", ts)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	out, _, err := enc.Encode(nil, &types.Row{Values: []types.Value{{I: 1_500}, types.NullValue}})
	if err != nil || string(out) != `{"ts":"1970-01-01T00:00:00.001"}` {
		t.Fatalf("ISO: %s %v", out, err)
	}
}

// A string that is not valid UTF-8 (read raw from a CSV file, say) is
// written with U+FFFD for each invalid byte, as Flink's JSON format writes
// it, never raw: strict parsers refuse that. 'json.encode.invalid-utf8' =
// 'FAIL' makes it an error instead (issue 35).
func TestInvalidUTF8(t *testing.T) {
	s := types.Schema{f("name", types.StringType), f("attrs", types.MapOf(types.StringType, types.IntType))}
	row := types.Row{Values: []types.Value{types.StringValue("a\xffb\xc3"), {X: []types.Value{types.StringValue("k\xfe"), types.IntValue(1)}}}}
	enc := func(m map[string]string) (format.Encoder, error) {
		m["connector"], m["format"] = "filesystem", "json"
		o := connector.NewOptions(&connector.Table{Name: "t", Options: m})
		e, _ := format.NewEncoder(o, "format", s)
		return e, o.Err()
	}
	e, err := enc(map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := e.Encode(nil, &row)
	if want := "{\"name\":\"a\uFFFDb\uFFFD\",\"attrs\":{\"k\uFFFD\":1}}"; err != nil || string(out) != want {
		t.Fatalf("default: %q %v, want %q", out, err, want)
	}
	if !stdjson.Valid(out) {
		t.Fatalf("%q is not valid JSON", out)
	}
	e, err = enc(map[string]string{"json.encode.invalid-utf8": "FAIL"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "not valid UTF-8 (byte 1)") {
		t.Fatalf("FAIL: %v", err)
	}
	row.Values[0] = types.StringValue("ok")
	if _, _, err := e.Encode(nil, &row); err == nil || !strings.Contains(err.Error(), "not valid UTF-8 (byte 1)") {
		t.Fatalf("FAIL on a map key: %v", err)
	}
	if _, err := enc(map[string]string{"json.encode.invalid-utf8": "DROP"}); err == nil {
		t.Fatal("'DROP' accepted")
	}
}

func TestLooseKeys(t *testing.T) {
	s := types.Schema{f("dateTime", types.Timestamp3), f("bid", types.RowOf(f("emailAddress", types.StringType)))}
	line := `{"date_time": 1000, "bid": {"email_address": "a@b"}}`
	exact := mustDecoder(t, s, json.Options{})
	if r := decodeOne(t, exact, line); !r.Values[0].Null || !r.Values[1].List()[0].Null {
		t.Fatalf("exact matching: %+v", r)
	}
	o := connector.NewOptions(&connector.Table{Name: "t", Options: map[string]string{"connector": "x", "format": "json", "json.key-matching": "loose"}})
	loose, _ := format.NewDecoder(o, "format", s)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	if r := decodeOne(t, loose, line); r.Values[0].I != 1_000_000 || r.Values[1].List()[0].S != "a@b" {
		t.Fatalf("loose matching: %+v", r)
	}
}

func BenchmarkDecode(b *testing.B) {
	d, _ := json.NewDecoder(schema, json.Options{})
	line := []byte(`{"id":7,"name":"abc","price":12.34,"big":"1.0000","ts":"2020-04-15 08:05:00.123","ok":false,"d":0.25,"day":"1969-12-31","tags":["x","y"],"attrs":{"k":1},"bid":{"auction":42,"at":1586937901500}}`)
	b.SetBytes(int64(len(line)))
	rows := make([]types.Row, 0, 1)
	for i := 0; i < b.N; i++ {
		var err error
		if rows, err = d.Decode(line, rows[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	d, _ := json.NewDecoder(schema, json.Options{})
	e, _ := json.NewEncoder(schema, json.Options{})
	line := []byte(`{"id":7,"name":"abc","price":12.34,"big":"1.0000","ts":"2020-04-15 08:05:00.123","ok":false,"d":0.25,"day":"1969-12-31","tags":["x","y"],"attrs":{"k":1},"bid":{"auction":42,"at":1586937901500}}`)
	rows, _ := d.Decode(line, nil)
	var buf []byte
	for i := 0; i < b.N; i++ {
		buf, _, _ = e.Encode(buf[:0], &rows[0])
	}
	b.SetBytes(int64(len(buf)))
}
