package debezium_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/format/debezium"
	"github.com/weirstream/weir/sql/format/json"
	"github.com/weirstream/weir/sql/types"
)

var schema = types.Schema{{Name: "id", Type: types.IntType}, {Name: "name", Type: types.StringType}}

func row(k types.RowKind, id int64, name string) types.Row {
	return types.Row{Kind: k, Values: []types.Value{{I: id}, {S: name}}}
}

func TestDecode(t *testing.T) {
	d, err := debezium.NewDecoder(schema, json.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := []string{
		`{"before":null,"after":{"id":1,"name":"a"},"op":"c","source":{"db":"x"},"ts_ms":5}`,
		`{"op":"r","after":{"id":2,"name":"b"}}`,
		`{"before":{"id":1,"name":"a"},"after":{"id":1,"name":"a2"},"op":"u"}`,
		`{"schema":{"type":"struct"},"payload":{"before":{"id":2,"name":"b"},"after":null,"op":"d"}}`,
		``,
		`null`,
		`{"schema":null,"payload":null}`,
	}
	want := []types.Row{
		row(types.Insert, 1, "a"), row(types.Insert, 2, "b"),
		row(types.UpdateBefore, 1, "a"), row(types.UpdateAfter, 1, "a2"), row(types.Delete, 2, "b"),
	}
	var got []types.Row
	for _, s := range in {
		if got, err = d.Decode([]byte(s), got); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Fatalf("row %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestMalformed(t *testing.T) {
	d, _ := debezium.NewDecoder(schema, json.Options{})
	for _, c := range []struct{ in, want string }{
		{`{"after":{"id":1}}`, "field 'op': missing"},
		{`{"op":"t"}`, "unsupported op 't'"},
		{`{"op":"u","after":{"id":1}}`, "field 'before': null in an update"},
		{`{"op":"d","after":null}`, "field 'before': null in a delete"},
		{`{"op":"c","after":{"id":"x"}}`, "field 'after': json: field 'id': 'x' is not a INT"},
		{`{"op":"c","after":{"id":1},}`, "expected a string, found '}' at byte 27"},
		{`{"payload":{"payload":{}}}`, "a payload inside a payload"},
	} {
		_, err := d.Decode([]byte(c.in), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Decode(%s) = %v, want an error containing %q", c.in, err, c.want)
		}
	}
	d, _ = debezium.NewDecoder(schema, json.Options{IgnoreParseErrors: true})
	_, err := d.Decode([]byte(`{"op":"x"}`), nil)
	var skip *format.SkipError
	if !errors.As(err, &skip) {
		t.Fatalf("ignore-parse-errors: %v", err)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	e, err := debezium.NewEncoder(schema, json.Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := debezium.NewDecoder(schema, json.Options{})
	in := []types.Row{row(types.Insert, 1, "a"), row(types.UpdateBefore, 1, "a"), row(types.UpdateAfter, 1, "b"), row(types.Delete, 1, "b")}
	wantJSON := []string{
		`{"before":null,"after":{"id":1,"name":"a"},"op":"c"}`,
		`{"before":{"id":1,"name":"a"},"after":null,"op":"d"}`,
		`{"before":null,"after":{"id":1,"name":"b"},"op":"c"}`,
		`{"before":{"id":1,"name":"b"},"after":null,"op":"d"}`,
	}
	// The table the events describe, applied: empty at the end.
	table := map[int64]string{}
	for i, r := range in {
		out, _, err := e.Encode(nil, &r)
		if err != nil || string(out) != wantJSON[i] {
			t.Fatalf("Encode(%+v) = %s, %v; want %s", r, out, err, wantJSON[i])
		}
		rows, err := d.Decode(out, nil)
		if err != nil || len(rows) != 1 {
			t.Fatal(rows, err)
		}
		if rows[0].Kind.IsRetraction() {
			delete(table, rows[0].Values[0].I)
		} else {
			table[rows[0].Values[0].I] = rows[0].Values[1].S
		}
		if i == 2 && table[1] != "b" {
			t.Fatalf("after the update: %v", table)
		}
	}
	if len(table) != 0 {
		t.Fatalf("table %v, want empty", table)
	}
	e, _ = debezium.NewEncoder(schema, json.Options{}, true)
	r := row(types.Insert, 3, "c")
	out, _, _ := e.Encode(nil, &r)
	rows, err := d.Decode(out, nil)
	if err != nil || len(rows) != 1 || !rows[0].Equal(r) || !strings.HasPrefix(string(out), `{"schema":null,"payload":{`) {
		t.Fatalf("schema-include: %s %+v %v", out, rows, err)
	}
}
