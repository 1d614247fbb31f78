package csv_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/csv"
	"github.com/weirstream/weir/sql/types"
)

func f(name string, t types.Type) types.Field { return types.Field{Name: name, Type: t} }

var schema = types.Schema{
	f("id", types.IntType), f("name", types.StringType), f("price", types.DecimalType(8, 2)),
	f("ts", types.Timestamp3), f("ok", types.BooleanType), f("d", types.DoubleType),
}

func codec(t *testing.T, opts map[string]string) (format.Decoder, format.Encoder) {
	t.Helper()
	m := map[string]string{"connector": "filesystem", "format": "csv"}
	for k, v := range opts {
		m[k] = v
	}
	o := connector.NewOptions(&connector.Table{Name: "t", Options: m})
	d, _ := format.NewDecoder(o, "format", schema)
	e, _ := format.NewEncoder(o, "format", schema)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	return d, e
}

func TestRoundTrip(t *testing.T) {
	for _, delim := range []string{",", ";", `\t`} {
		d, e := codec(t, map[string]string{"csv.field-delimiter": delim})
		rows := []types.Row{
			{Values: []types.Value{{I: 1}, {S: `a,b;"c"` + "\n\td"}, {I: -5}, {I: 1586937901123_000}, {I: 1}, types.FloatValue(0.5)}},
			{Values: []types.Value{{I: -2}, {S: ""}, types.NullValue, types.NullValue, {I: 0}, types.FloatValue(1e300)}},
			{Values: []types.Value{types.NullValue, types.NullValue, {I: 12345}, {I: 0}, types.NullValue, types.NullValue}},
		}
		for _, r := range rows {
			line, _, err := e.Encode(nil, &r)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Decode(line, nil)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			if len(got) != 1 || !got[0].Equal(r) {
				t.Fatalf("delimiter %s: %q read back as %+v, want %+v", delim, line, got, r)
			}
		}
	}
	_, e := codec(t, nil)
	line, _, _ := e.Encode(nil, &types.Row{Values: []types.Value{{I: 1}, {S: "x y"}, {I: 1050}, {I: 1586937901000_000}, {I: 1}, types.FloatValue(2)}})
	if string(line) != "1,x y,10.50,2020-04-15 08:05:01,true,2.0" {
		t.Fatalf("encoded %q", line)
	}
}

func TestMalformed(t *testing.T) {
	d, _ := codec(t, nil)
	for _, c := range []struct{ in, want string }{
		{"x,a,1,2020-01-01 00:00:00,true,1", "column 'id' (field 1, at byte 0): 'x' is not a INT"},
		{"1,a,1,2020-01-01 00:00:00,maybe,1", "column 'ok' (field 5, at byte 26): 'maybe' is not a BOOLEAN"},
		{"1,a,1", "3 fields for 6 columns (column 'ts' is missing)"},
		{"1,a,1,2020-01-01 00:00:00,true,1,7", "more than 6 fields"},
		{`1,"a,1,2020-01-01 00:00:00,true,1`, "a quoted field starting at byte 2 does not end"},
		{`1,"a"b,1,2020-01-01 00:00:00,true,1`, "unexpected 'b' after a quoted field at byte 5"},
		{"1,a,1234567.1,,,", "does not fit in DECIMAL(8, 2)"},
	} {
		_, err := d.Decode([]byte(c.in), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%q) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	d, _ = codec(t, map[string]string{"csv.ignore-parse-errors": "true", "csv.allow-comments": "true"})
	rows, err := d.Decode([]byte("x,a,1,bad,true,1"), nil)
	if err != nil || len(rows) != 1 || !rows[0].Values[0].Null || !rows[0].Values[3].Null || rows[0].Values[1].S != "a" {
		t.Fatalf("ignore-parse-errors, bad fields: %+v %v", rows, err)
	}
	rows, err = d.Decode([]byte("1,a"), nil)
	var skip *format.SkipError
	if !errors.As(err, &skip) || len(rows) != 0 {
		t.Fatalf("ignore-parse-errors, short record: %+v %v", rows, err)
	}
	if rows, err = d.Decode([]byte("# a comment"), nil); err != nil || len(rows) != 0 {
		t.Fatalf("comment: %+v %v", rows, err)
	}
}

func TestNullLiteralAndOptions(t *testing.T) {
	d, e := codec(t, map[string]string{"csv.null-literal": "N/A", "csv.quote-character": "'"})
	r := types.Row{Values: []types.Value{types.NullValue, {S: "N/A"}, {I: 1}, {I: 0}, types.NullValue, types.FloatValue(1)}}
	line, _, _ := e.Encode(nil, &r)
	if string(line) != "N/A,'N/A',0.01,1970-01-01 00:00:00,N/A,1.0" {
		t.Fatalf("encoded %q", line)
	}
	got, err := d.Decode(line, nil)
	if err != nil || !got[0].Equal(r) {
		t.Fatalf("%+v %v", got, err)
	}
	o := connector.NewOptions(&connector.Table{Name: "t", Options: map[string]string{"connector": "x", "format": "csv", "csv.field-delimiter": "ab"}})
	format.NewDecoder(o, "format", schema)
	if err := o.Err(); err == nil || !strings.Contains(err.Error(), "'csv.field-delimiter' must be a single character") {
		t.Fatalf("delimiter: %v", err)
	}
	if _, err := csv.NewDecoder(types.Schema{f("a", types.ArrayOf(types.IntType))}, csv.Options{}); err == nil ||
		!strings.Contains(err.Error(), "column 'a': the csv format does not support type ARRAY<INT>") {
		t.Fatalf("array: %v", err)
	}
}
