package raw_test

import (
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/format"
	_ "github.com/weirstream/weir/sql/format/raw"
	"github.com/weirstream/weir/sql/types"
)

func TestRaw(t *testing.T) {
	o := connector.NewOptions(&connector.Table{Name: "t", Options: map[string]string{"connector": "x", "format": "raw"}})
	s := types.Schema{{Name: "line", Type: types.StringType}}
	d, _ := format.NewDecoder(o, "format", s)
	e, _ := format.NewEncoder(o, "format", s)
	if err := o.Err(); err != nil {
		t.Fatal(err)
	}
	in := []byte("anything, even {not json\"")
	rows, err := d.Decode(in, nil)
	if err != nil || len(rows) != 1 || rows[0].Values[0].S != string(in) {
		t.Fatal(rows, err)
	}
	out, _, err := e.Encode(nil, &rows[0])
	if err != nil || string(out) != string(in) {
		t.Fatal(string(out), err)
	}
	o = connector.NewOptions(&connector.Table{Name: "t", Options: map[string]string{"connector": "x", "format": "raw"}})
	format.NewDecoder(o, "format", types.Schema{{Name: "a", Type: types.StringType}, {Name: "b", Type: types.IntType}})
	if err := o.Err(); err == nil || !strings.Contains(err.Error(), "single physical column, the table has 2") {
		t.Fatal(err)
	}
}
