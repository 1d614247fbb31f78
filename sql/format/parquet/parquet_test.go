package parquet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/types"
)

// allTypes is a table of every type weir maps to Parquet.
var allTypes = types.Schema{
	{Name: "b", Type: types.Type{Kind: types.Boolean}},
	{Name: "ti", Type: types.Type{Kind: types.TinyInt}},
	{Name: "si", Type: types.Type{Kind: types.SmallInt}},
	{Name: "i", Type: types.Type{Kind: types.Int, NotNull: true}},
	{Name: "bi", Type: types.BigIntType},
	{Name: "f", Type: types.Type{Kind: types.Float}},
	{Name: "d", Type: types.Type{Kind: types.Double}},
	{Name: "d9", Type: types.DecimalType(9, 2)},
	{Name: "d18", Type: types.DecimalType(18, 4)},
	{Name: "d38", Type: types.DecimalType(38, 10)},
	{Name: "s", Type: types.StringType},
	{Name: "bin", Type: types.Type{Kind: types.Varbinary, Length: types.MaxLength}},
	{Name: "dt", Type: types.Type{Kind: types.Date}},
	{Name: "tm", Type: types.Type{Kind: types.Time}},
	{Name: "ts", Type: types.Type{Kind: types.Timestamp, Precision: 6}},
	{Name: "ltz", Type: types.Type{Kind: types.TimestampLTZ, Precision: 6}},
	{Name: "arr", Type: types.ArrayOf(types.BigIntType)},
	{Name: "m", Type: types.MapOf(types.StringType, types.Type{Kind: types.Int})},
	{Name: "r", Type: types.RowOf(types.Field{Name: "x", Type: types.Type{Kind: types.Int}}, types.Field{Name: "tags", Type: types.ArrayOf(types.StringType)})},
}

func bigDec(s string) types.Value {
	u, _ := new(big.Int).SetString(s, 10)
	return types.BigDecimalValue(u)
}

// allRows returns rows covering values, NULLs, empty and nested lists.
func allRows() []types.Row {
	iv := types.IntValue
	sv := types.StringValue
	l := func(vs ...types.Value) types.Value { return types.ListValue(vs) }
	null := types.NullValue
	return []types.Row{
		{Values: []types.Value{types.BoolValue(true), iv(-8), iv(300), iv(1), iv(1 << 40), types.FloatValue(1.5), types.FloatValue(-2.25),
			iv(12345), iv(-123456789012), bigDec("-12345678901234567890123456789"), sv("héllo"), sv("\x00\xff"),
			iv(20000), iv(3723_004_000), iv(1_700_000_000_123_456), iv(-1_000_001),
			l(iv(1), iv(2), null), l(sv("a"), iv(1), sv("b"), null), l(iv(7), l(sv("x"), null, sv("")))}},
		{Values: []types.Value{null, null, null, iv(2), null, null, null, null, null, null, null, null, null, null, null, null, null, null, null}},
		{Values: []types.Value{types.BoolValue(false), iv(0), iv(0), iv(3), iv(-1), types.FloatValue(0), types.FloatValue(0),
			iv(-1), iv(1), iv(5), sv(""), sv(""), iv(-1), iv(0), iv(0), iv(0),
			l(), l(), l(null, l(sv("p"), sv("q")))}},
	}
}

func writeFile(t *testing.T, path string, schema types.Schema, rows []types.Row, opts *Options) {
	t.Helper()
	cols := make([]int, len(schema))
	for i := range cols {
		cols[i] = i
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, schema, cols, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readAll(t *testing.T, r *FileReader) []types.Row {
	t.Helper()
	var out []types.Row
	dst := make([]types.Row, 2)
	for {
		n, err := r.Read(context.Background(), dst)
		out = append(out, dst[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func targets(n int) []Target {
	ts := make([]Target, n)
	for i := range ts {
		ts[i] = Target{Col: i, Field: -1}
	}
	return ts
}

func TestRoundTrip(t *testing.T) {
	for _, opts := range []*Options{DefaultOptions(), {Compression: "SNAPPY", BlockSize: 1, PageSize: 64, Int64Timestamp: false, UTC: true}, {Compression: "ZSTD", BlockSize: 1 << 20, PageSize: 1 << 20, Int64Timestamp: true, TimeUnit: "nanos"}} {
		opts.setCodec()
		path := filepath.Join(t.TempDir(), "x.parquet")
		rows := allRows()
		writeFile(t, path, allTypes, rows, opts)
		r, err := OpenFile(path, nil, allTypes, targets(len(allTypes)), opts)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, r)
		r.Close()
		if len(got) != len(rows) {
			t.Fatalf("%s: %d rows, want %d", opts.Compression, len(got), len(rows))
		}
		for i := range rows {
			for j, c := range allTypes {
				if !got[i].Values[j].Equal(rows[i].Values[j]) {
					t.Errorf("%s: row %d column %s: %+v, want %+v", opts.Compression, i, c.Name, got[i].Values[j], rows[i].Values[j])
				}
			}
		}
	}
}

// Only the targets' columns are read; a ROW's field alone, a partition
// value, a position restored.
func TestTargetsAndSeek(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	rows := allRows()
	writeFile(t, path, allTypes, rows, nil)
	schema := append(allTypes[:len(allTypes):len(allTypes)], types.Field{Name: "day", Type: types.Type{Kind: types.Date}})
	r, err := OpenFile(path, map[string]string{"day": "2026-12-01"}, schema, []Target{{Col: 4, Field: -1}, {Col: 18, Field: 1}, {Col: -1}, {Col: 19, Field: -1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.cursors) != 2 {
		t.Fatalf("%d columns decoded, want 2 (bi, r.tags)", len(r.cursors))
	}
	if err := r.SeekToRow(1); err != nil {
		t.Fatal(err)
	}
	got := readAll(t, r)
	if len(got) != 2 || !got[0].Values[0].Null || !got[0].Values[1].Null || got[1].Values[0].I != -1 ||
		got[1].Values[3].I != 20788 || len(got[1].Values[1].List()) != 2 {
		t.Fatalf("rows %+v", got)
	}
}

func TestBadFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.parquet")
	writeFile(t, path, allTypes, allRows(), nil)
	data, _ := os.ReadFile(path)
	trunc := filepath.Join(dir, "trunc.parquet")
	os.WriteFile(trunc, data[:len(data)-20], 0o644)
	text := filepath.Join(dir, "text.parquet")
	os.WriteFile(text, []byte("id,name\n1,x\n"), 0o644)
	for _, p := range []string{trunc, text} {
		_, err := OpenFile(p, nil, allTypes, targets(len(allTypes)), nil)
		var re *ReadError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want a ReadError naming the file", p, err)
		}
	}
	// A page cut in the middle: the row group and the column are named.
	bad := append([]byte(nil), data...)
	for i := 4; i < len(bad)/3; i++ {
		bad[i] ^= 0x5a
	}
	corrupt := filepath.Join(dir, "corrupt.parquet")
	os.WriteFile(corrupt, bad, 0o644)
	if r, err := OpenFile(corrupt, nil, allTypes, targets(len(allTypes)), nil); err == nil {
		_, err = r.Read(context.Background(), make([]types.Row, 10))
		if err == nil || !strings.Contains(err.Error(), "row group 0, column '") {
			t.Errorf("corrupt pages: %v, want an error naming the row group and column", err)
		}
		r.Close()
	}
	// Schema mismatches name the column.
	for _, c := range []struct {
		schema types.Schema
		want   string
	}{
		{types.Schema{{Name: "nope", Type: types.BigIntType}}, "column 'nope': missing from the file"},
		{types.Schema{{Name: "s", Type: types.BigIntType}}, "column 's': the file's BYTE_ARRAY"},
		{types.Schema{{Name: "r", Type: types.RowOf(types.Field{Name: "y", Type: types.BigIntType})}}, "column 'r.y': missing from the file"},
		{types.Schema{{Name: "arr", Type: types.StringType}}, "column 'arr': the file has a group"},
	} {
		_, err := OpenFile(path, nil, c.schema, targets(1), nil)
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%v: %v, want %q", c.schema, err, c.want)
		}
	}
}

// A position restored in any row group, nested columns included, reads
// the rest of the file exactly.
func TestSeekAcrossRowGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	var rows []types.Row
	for range 400 {
		rows = append(rows, allRows()...)
	}
	for i := range rows {
		vs := slices.Clone(rows[i].Values)
		vs[3] = types.IntValue(int64(i)) // i: NOT NULL, the row number
		rows[i].Values = vs
	}
	opts := DefaultOptions()
	opts.BlockSize = 2000 // several row groups
	writeFile(t, path, allTypes, rows, opts)
	r, err := OpenFile(path, nil, allTypes, targets(len(allTypes)), nil)
	if err != nil {
		t.Fatal(err)
	}
	groups := len(r.file.RowGroups())
	r.Close()
	if groups < 3 {
		t.Fatalf("%d row groups, want several", groups)
	}
	for _, at := range []int64{0, 1, 17, 255, 256, 257, 700, 1024, int64(len(rows) - 1), int64(len(rows))} {
		r, err := OpenFile(path, nil, allTypes, targets(len(allTypes)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.SeekToRow(at); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, r)
		if r.Pos() != int64(len(rows)) {
			t.Errorf("at %d: Pos %d at the end, want %d", at, r.Pos(), len(rows))
		}
		r.Close()
		if len(got) != len(rows)-int(at) {
			t.Fatalf("at %d: %d rows, want %d", at, len(got), len(rows)-int(at))
		}
		for k, g := range got {
			if want := rows[int(at)+k]; !types.EqualValues(g.Values, want.Values) {
				t.Fatalf("at %d: row %d is %+v, want %+v", at, int(at)+k, g.Values, want.Values)
			}
		}
	}
}

// A DECIMAL is read into a column of a larger scale (rescaled) and
// refused, naming the column, when it does not fit the column's
// precision.
func TestDecimalRescaleAndOverflow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	src := types.Schema{{Name: "p", Type: types.DecimalType(9, 2)}, {Name: "q", Type: types.DecimalType(30, 2)}}
	writeFile(t, path, src, []types.Row{{Values: []types.Value{types.IntValue(-12345), types.IntValue(99999999)}}}, nil)
	wide := types.Schema{{Name: "p", Type: types.DecimalType(20, 6)}, {Name: "q", Type: types.DecimalType(9, 4)}}
	r, err := OpenFile(path, nil, wide, targets(1), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, r)
	r.Close()
	if len(got) != 1 || got[0].Values[0].I != -123450000 {
		t.Fatalf("rescaled: %+v, want -123.450000", got)
	}
	r, err = OpenFile(path, nil, wide, []Target{{Col: 1, Field: -1}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	_, err = r.Read(context.Background(), make([]types.Row, 1))
	if err == nil || !strings.Contains(err.Error(), "column 'q'") || !strings.Contains(err.Error(), "does not fit DECIMAL(9, 4)") {
		t.Fatalf("overflow: %v", err)
	}
	if _, err := OpenFile(path, nil, types.Schema{{Name: "p", Type: types.DecimalType(9, 1)}}, targets(1), nil); err == nil {
		t.Fatal("a DECIMAL read into a smaller scale was accepted")
	}
}

// A reader restricted to some row groups reads their rows only, and
// positions count from the first of them.
func TestRestrict(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	var rows []types.Row
	for i := range 1000 {
		rows = append(rows, types.Row{Values: []types.Value{types.IntValue(int64(i))}})
	}
	sc := types.Schema{{Name: "id", Type: types.BigIntType}}
	opts := DefaultOptions()
	opts.BlockSize = 1 // a row group per batch of 256 rows
	writeFile(t, path, sc, rows, opts)
	n, err := CountRowGroups(path)
	if err != nil || n != 4 {
		t.Fatalf("%d row groups (%v), want 4", n, err)
	}
	var all []int64
	for g := range n {
		r, err := OpenFile(path, nil, sc, targets(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restrict(g, g+1); err != nil {
			t.Fatal(err)
		}
		skip := int64(g * 10)
		if err := r.SeekToRow(skip); err != nil {
			t.Fatal(err)
		}
		got := readAll(t, r)
		if r.Pos() != r.NumRows() || int64(len(got)) != r.NumRows()-skip {
			t.Fatalf("group %d: %d rows, Pos %d of %d", g, len(got), r.Pos(), r.NumRows())
		}
		r.Close()
		for _, x := range got {
			all = append(all, x.Values[0].I)
		}
		if got[0].Values[0].I != int64(g*256)+skip {
			t.Fatalf("group %d starts at %d", g, got[0].Values[0].I)
		}
	}
	if len(all) != 1000-(0+10+20+30) {
		t.Fatalf("%d rows in all", len(all))
	}
	if _, err := CountRowGroups(filepath.Join(t.TempDir(), "nope")); err == nil {
		t.Fatal("CountRowGroups of a missing file")
	}
}

// 'parquet.enable.dictionary' dictionary-encodes string columns: a
// column of few distinct values gets much smaller, and reads back.
func TestDictionary(t *testing.T) {
	sc := types.Schema{{Name: "s", Type: types.StringType}}
	var rows []types.Row
	for i := range 5000 {
		rows = append(rows, types.Row{Values: []types.Value{types.StringValue(fmt.Sprintf("a rather long repeated value %d", i%3))}})
	}
	size := map[bool]int64{}
	for _, dict := range []bool{false, true} {
		opts := DefaultOptions()
		opts.Dictionary = dict
		path := filepath.Join(t.TempDir(), "x.parquet")
		writeFile(t, path, sc, rows, opts)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		size[dict] = fi.Size()
		r, err := OpenFile(path, nil, sc, targets(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		got := readAll(t, r)
		r.Close()
		if len(got) != len(rows) || got[4999].Values[0].S != rows[4999].Values[0].S {
			t.Fatalf("dictionary %v: %d rows read back", dict, len(got))
		}
	}
	if size[true]*4 > size[false] {
		t.Fatalf("dictionary-encoded %d bytes, plain %d", size[true], size[false])
	}
}
