package avro_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/hamba/avro/v2/ocf"

	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

var ocfTable = types.Schema{
	{Name: "id", Type: types.Type{Kind: types.BigInt, NotNull: true}},
	{Name: "name", Type: types.StringType},
	{Name: "price", Type: types.DoubleType},
	{Name: "qty", Type: types.IntType},
	{Name: "ts", Type: types.Timestamp3},
	{Name: "tags", Type: types.ArrayOf(types.StringType)},
	{Name: "addr", Type: types.RowOf(types.Field{Name: "city", Type: types.StringType}, types.Field{Name: "zip", Type: types.IntType})},
	{Name: "amount", Type: types.DecimalType(10, 2)},
}

// ocfRow is row i of the tests' files: strings of many lengths (some
// longer than a copy window, some crossing windows), NULLs, lists.
func ocfRow(i int) types.Row {
	name := types.Value{S: fmt.Sprintf("name-%d-%s", i, strings.Repeat("x", i%40))}
	switch {
	case i%11 == 0:
		name = types.NullValue
	case i%97 == 5:
		name = types.Value{S: fmt.Sprintf("long-%d-%s", i, strings.Repeat("y", 3000+i))}
	}
	tags := make([]types.Value, i%4)
	for j := range tags {
		tags[j] = types.Value{S: fmt.Sprintf("t%d.%d", i, j)}
	}
	addr := types.ListValue([]types.Value{{S: fmt.Sprintf("city%d", i)}, {I: int64(i % 1000)}})
	if i%3 == 0 {
		addr = types.NullValue
	}
	return types.Row{Kind: types.Insert, Values: []types.Value{
		{I: int64(i)}, name, types.FloatValue(float64(i) / 4), {I: int64(i%500 - 250)},
		{I: 1_700_000_000_000_000 + int64(i)*1000}, types.ListValue(tags), addr, {I: int64(i*7 - 1000)},
	}}
}

func ocfFile(t testing.TB, cols types.Schema, codec string, interval int, rows []types.Row) []byte {
	t.Helper()
	s, err := avro.FileSchema(cols, avro.FileOptions{Mapping: avro.Mapping{Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := avro.NewRowEncoder(s, cols)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := avro.NewOCFWriter(&buf, enc, codec)
	if err != nil {
		t.Fatal(err)
	}
	if interval > 0 {
		w.SetSyncInterval(interval)
	}
	for _, r := range rows {
		if err := w.Write(r.Values); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func decoders(t testing.TB, cols types.Schema) *avro.FileDecoders {
	t.Helper()
	s, err := avro.FileSchema(cols, avro.FileOptions{Mapping: avro.Mapping{Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	return avro.NewFileDecoders(cols, s)
}

// readAll reads a reader's rows, a few at a time.
func readAll(t *testing.T, r *avro.OCFReader) []types.Row {
	t.Helper()
	var out []types.Row
	dst := make([]types.Row, 7)
	for {
		n, err := r.Read(dst)
		out = append(out, dst[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func ocfRows(n int) []types.Row {
	rows := make([]types.Row, n)
	for i := range rows {
		rows[i] = ocfRow(i)
	}
	return rows
}

func sameRows(t *testing.T, got, want []types.Row) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Equal(want[i]) {
			t.Fatalf("row %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// Every codec writes files of several blocks that weir reads back equal
// (the rows of earlier blocks intact after their buffers were reused)
// and that hamba's object-container decoder, an implementation of its
// own, reads too.
func TestOCFRoundTrip(t *testing.T) {
	rows := ocfRows(6000)
	for _, codec := range []string{avro.CodecNull, avro.CodecDeflate, avro.CodecSnappy, avro.CodecZstandard} {
		t.Run(codec, func(t *testing.T) {
			data := ocfFile(t, ocfTable, codec, 0, rows)
			r, err := decoders(t, ocfTable).Open(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if h := r.Header(); h.Codec != codec || !strings.Contains(h.SchemaJSON, `"org.apache.flink.avro.generated.record"`) {
				t.Fatalf("header: codec %q, schema %s", h.Codec, h.SchemaJSON)
			}
			// count the blocks by the positions at their starts
			blocks := map[int64]bool{}
			var got []types.Row
			dst := make([]types.Row, 1)
			for {
				b, _ := r.Position()
				blocks[b] = true
				n, err := r.Read(dst)
				got = append(got, dst[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			sameRows(t, got, rows)
			if len(blocks) < 4 {
				t.Fatalf("%d blocks, want several (64 KB each)", len(blocks))
			}

			dec, err := ocf.NewDecoder(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if c := string(dec.Metadata()["avro.codec"]); c != codec {
				t.Fatalf("hamba reads codec %q", c)
			}
			i := 0
			for dec.HasNext() {
				var m map[string]any
				if err := dec.Decode(&m); err != nil {
					t.Fatalf("hamba, record %d: %v", i, err)
				}
				if m["id"] != int64(i) {
					t.Fatalf("hamba, record %d: id %v", i, m["id"])
				}
				if want := rows[i].Values[1]; !want.Null && m["name"] != want.S {
					t.Fatalf("hamba, record %d: name %v", i, m["name"])
				}
				i++
			}
			if err := dec.Error(); err != nil || i != len(rows) {
				t.Fatalf("hamba read %d records: %v", i, err)
			}
		})
	}
}

// hamba's object-container encoder writes files (snappy, zstandard,
// deflate) that weir reads.
func TestOCFReadsHambasFiles(t *testing.T) {
	schema := `{"type":"record","name":"ev","fields":[{"name":"id","type":"long"},{"name":"name","type":"string"},{"name":"tags","type":{"type":"array","items":"string"}},{"name":"score","type":"float"}]}`
	cols := types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}, {Name: "tags", Type: types.ArrayOf(types.StringType)}, {Name: "score", Type: types.DoubleType}}
	for _, codec := range []ocf.CodecName{ocf.Null, ocf.Deflate, ocf.Snappy, ocf.ZStandard} {
		var buf bytes.Buffer
		enc, err := ocf.NewEncoder(schema, &buf, ocf.WithCodec(codec), ocf.WithBlockLength(100))
		if err != nil {
			t.Fatal(err)
		}
		var want []types.Row
		for i := range 1000 {
			tags := []string{}
			for j := range i % 3 {
				tags = append(tags, fmt.Sprint(j))
			}
			if err := enc.Encode(map[string]any{"id": int64(i), "name": fmt.Sprint("n", i), "tags": tags, "score": float32(i) / 2}); err != nil {
				t.Fatal(err)
			}
			vs := make([]types.Value, len(tags))
			for j, s := range tags {
				vs[j] = types.Value{S: s}
			}
			want = append(want, types.Row{Kind: types.Insert, Values: []types.Value{{I: int64(i)}, {S: fmt.Sprint("n", i)}, types.ListValue(vs), types.FloatValue(float64(i) / 2)}})
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := decoders(t, cols).Open(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%s: %v", codec, err)
		}
		sameRows(t, readAll(t, r), want)
	}
}

// A reader restored at any position of a file of several blocks (a
// block's start or within it) reads the rows after it.
func TestOCFRestore(t *testing.T) {
	rows := ocfRows(700)
	for _, codec := range []string{avro.CodecNull, avro.CodecSnappy} {
		data := ocfFile(t, ocfTable, codec, 2000, rows)
		decs := decoders(t, ocfTable)
		r, err := decs.Open(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		type pos struct{ block, taken int64 }
		var at []pos
		dst := make([]types.Row, 1)
		for {
			b, k := r.Position()
			at = append(at, pos{b, k})
			n, err := r.Read(dst)
			if err == io.EOF {
				break
			}
			if err != nil || n != 1 {
				t.Fatal(n, err)
			}
		}
		within := 0
		for i, p := range at {
			if p.taken > 0 {
				within++
			}
			r, err := decs.Open(bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Restore(bytes.NewReader(data[p.block:]), p.block, p.taken); err != nil {
				t.Fatalf("%s: position %d (%+v): %v", codec, i, p, err)
			}
			sameRows(t, readAll(t, r), rows[i:])
		}
		if within < len(rows)/2 || within == len(rows) {
			t.Fatalf("%d of %d positions within a block", within, len(at))
		}
		// a position past the block's records: the file was changed
		r, _ = decs.Open(bytes.NewReader(data))
		p := at[len(at)/2]
		if err := r.Restore(bytes.NewReader(data[p.block:]), p.block, 100000); err == nil || !strings.Contains(err.Error(), "the file was changed") {
			t.Fatalf("restore past the block: %v", err)
		}
	}
}

// Files written with an evolved schema read into the table: a field the
// table lacks (added, with a default) is skipped, a column the file lacks
// (its field removed) takes the reader schema's default; files of two
// schemas read through one FileDecoders.
func TestOCFEvolvedSchema(t *testing.T) {
	table := types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}, {Name: "price", Type: types.DoubleType}}
	evolved := `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
		{"name":"id","type":["null","long"],"default":null},
		{"name":"name","type":["null","string"],"default":null},
		{"name":"added","type":"int","default":0}]}`
	ws, err := avro.Parse(evolved)
	if err != nil {
		t.Fatal(err)
	}
	wcols := types.Schema{table[0], table[1], {Name: "added", Type: types.Type{Kind: types.Int, NotNull: true}}}
	enc, err := avro.NewRowEncoder(ws, wcols)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := avro.NewOCFWriter(&buf, enc, avro.CodecDeflate)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := w.Write([]types.Value{{I: int64(i)}, {S: fmt.Sprint("n", i)}, {I: 42}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	old := ocfFile(t, table, avro.CodecNull, 0, []types.Row{{Kind: types.Insert, Values: []types.Value{{I: 9}, {S: "old"}, types.FloatValue(1.5)}}})

	// the derived reader schema: price defaults to NULL
	decs := decoders(t, table)
	for _, c := range []struct {
		file []byte
		want []types.Row
	}{
		{buf.Bytes(), []types.Row{
			{Kind: types.Insert, Values: []types.Value{{I: 0}, {S: "n0"}, types.NullValue}},
			{Kind: types.Insert, Values: []types.Value{{I: 1}, {S: "n1"}, types.NullValue}},
			{Kind: types.Insert, Values: []types.Value{{I: 2}, {S: "n2"}, types.NullValue}},
		}},
		{old, []types.Row{{Kind: types.Insert, Values: []types.Value{{I: 9}, {S: "old"}, types.FloatValue(1.5)}}}},
	} {
		r, err := decs.Open(bytes.NewReader(c.file))
		if err != nil {
			t.Fatal(err)
		}
		sameRows(t, readAll(t, r), c.want)
	}
	// a reader schema given ('avro.schema') with a default for price
	rs, err := avro.FileSchema(table, avro.FileOptions{Schema: `{"type":"record","name":"record","namespace":"org.apache.flink.avro.generated","fields":[
		{"name":"id","type":["null","long"],"default":null},{"name":"name","type":["null","string"],"default":null},{"name":"price","type":"double","default":9.5}]}`})
	if err != nil {
		t.Fatal(err)
	}
	r, err := avro.NewFileDecoders(table, rs).Open(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, r); len(got) != 3 || got[2].Values[2].Float() != 9.5 {
		t.Fatalf("with the reader's default: %v", got)
	}
	// a NOT NULL column the file lacks, without a default, is an error of
	// the file's schema
	strict := types.Schema{table[0], {Name: "must", Type: types.Type{Kind: types.Int, NotNull: true}}}
	_, err = decoders(t, strict).Open(bytes.NewReader(buf.Bytes()))
	var oe *avro.OCFError
	if !errors.As(err, &oe) || oe.Offset != -1 || !strings.Contains(err.Error(), "column 'must'") {
		t.Fatalf("a NOT NULL column missing: %v", err)
	}
}

// Bad files fail with what is wrong and the block's offset.
func TestOCFBadFiles(t *testing.T) {
	rows := ocfRows(300)
	decs := decoders(t, ocfTable)
	read := func(data []byte) error {
		r, err := decs.Open(bytes.NewReader(data))
		if err != nil {
			return err
		}
		dst := make([]types.Row, 64)
		for {
			if _, err := r.Read(dst); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	if err := read([]byte("id,name\n1,x\n")); err == nil || !strings.Contains(err.Error(), "not an Avro object-container file") {
		t.Fatalf("not OCF: %v", err)
	}
	for _, codec := range []string{avro.CodecNull, avro.CodecDeflate, avro.CodecSnappy, avro.CodecZstandard} {
		data := ocfFile(t, ocfTable, codec, 4000, rows)
		r, err := decs.Open(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		first := r.Header().Size
		// the second block's offset
		dst := make([]types.Row, 1)
		second := first
		for second == first {
			if _, err := r.Read(dst); err != nil {
				t.Fatal(err)
			}
			if b, k := r.Position(); k == 0 {
				second = b
			}
		}
		var oe *avro.OCFError
		if codec != avro.CodecNull {
			// a byte of the second block's compressed data changed
			bad := bytes.Clone(data)
			bad[second+40] ^= 0x5a
			err = read(bad)
			if !errors.As(err, &oe) || oe.Offset != second || !strings.Contains(err.Error(), fmt.Sprintf("block at byte %d", second)) {
				t.Fatalf("%s: a corrupt block: %v, want an OCFError at byte %d", codec, err, second)
			}
		}
		// the second block's count changed (a one-byte varint): a record
		// more than its data holds, or one less
		for _, d := range []byte{2, 0xfe} {
			bad := bytes.Clone(data)
			if bad[second] >= 0x80 || bad[second]+d >= 0x80 {
				t.Fatalf("count byte %x", bad[second])
			}
			bad[second] += d
			err = read(bad)
			if !errors.As(err, &oe) || oe.Offset != second || !strings.Contains(err.Error(), fmt.Sprintf("block at byte %d, record", second)) {
				t.Fatalf("%s: a block's count %+d: %v, want an OCFError at byte %d", codec, int8(d), err, second)
			}
		}
		// the file cut short in the second block
		if err := read(data[:second+30]); !errors.As(err, &oe) || oe.Offset != second || !strings.Contains(err.Error(), "truncated") {
			t.Fatalf("%s: a truncated file: %v", codec, err)
		}
		// another sync marker after the second block
		bad := bytes.Clone(data)
		sync := data[first-16 : first]
		i := bytes.Index(bad[second:], sync)
		bad[int(second)+i] ^= 1
		if err := read(bad); !errors.As(err, &oe) || oe.Offset != second || !strings.Contains(err.Error(), "sync marker") {
			t.Fatalf("%s: a wrong sync marker: %v", codec, err)
		}
	}
	// a codec weir does not read
	xz := bytes.Replace(ocfFile(t, ocfTable, avro.CodecNull, 0, rows), []byte("\x14avro.codec\x08null"), []byte("\x14avro.codec\x04xz"), 1)
	if err := read(xz); err == nil || !strings.Contains(err.Error(), "codec 'xz' is not supported") {
		t.Fatalf("xz: %v", err)
	}
	if _, err := avro.NewOCFWriter(io.Discard, nil, avro.CodecXZ); err == nil {
		t.Fatal("the writer took codec xz")
	}
}

// The header is Avro's: magic, metadata with the schema and codec, and
// the sync marker that ends every block.
func TestOCFHeader(t *testing.T) {
	data := ocfFile(t, ocfTable, avro.CodecSnappy, 0, ocfRows(10))
	if !bytes.HasPrefix(data, []byte("Obj\x01")) {
		t.Fatalf("magic % x", data[:4])
	}
	dec, err := ocf.NewDecoder(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	s, err := avro.FileSchema(ocfTable, avro.FileOptions{Mapping: avro.Mapping{Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got := dec.Schema(); got.Fingerprint() != s.Fingerprint() {
		t.Fatalf("schema %s, want %s", got, s)
	}
	if string(dec.Metadata()["avro.schema"]) != avro.SchemaJSON(s) {
		t.Fatalf("avro.schema %s", dec.Metadata()["avro.schema"])
	}
	r, err := decoders(t, ocfTable).Open(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	h := r.Header()
	if !bytes.HasSuffix(data, h.Sync[:]) || bytes.Equal(h.Sync[:], make([]byte, 16)) {
		t.Fatalf("sync marker % x", h.Sync)
	}
	// two files have different markers
	r2, _ := decoders(t, ocfTable).Open(bytes.NewReader(ocfFile(t, ocfTable, avro.CodecSnappy, 0, nil)))
	if r2.Header().Sync == h.Sync {
		t.Fatal("two files with one sync marker")
	}
}

// DecodePrefix decodes datums one after another from a buffer that holds
// several, each from where the last ended; the strings survive the
// buffer's reuse.
func TestDecodePrefix(t *testing.T) {
	s, err := avro.FileSchema(ocfTable, avro.FileOptions{Mapping: avro.Mapping{Legacy: true}})
	if err != nil {
		t.Fatal(err)
	}
	enc, err := avro.NewRowEncoder(s, ocfTable)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := avro.NewRowDecoder(s, s, ocfTable)
	if err != nil {
		t.Fatal(err)
	}
	rows := ocfRows(300)
	var buf []byte
	var ends []int
	for _, r := range rows {
		if buf, err = enc.AppendValues(buf, r.Values); err != nil {
			t.Fatal(err)
		}
		ends = append(ends, len(buf))
	}
	var got []types.Row
	for i, at := 0, 0; at < len(buf); i++ {
		vals := make([]types.Value, len(ocfTable))
		ok, n, err := dec.DecodePrefix(buf[at:], vals)
		if err != nil || !ok {
			t.Fatalf("datum %d: %v, %v", i, ok, err)
		}
		if at += n; at != ends[i] {
			t.Fatalf("datum %d ends at %d, want %d", i, at, ends[i])
		}
		got = append(got, types.Row{Kind: types.Insert, Values: vals})
	}
	// a datum cut short
	if _, _, err := dec.DecodePrefix(buf[:ends[0]-1], make([]types.Value, len(ocfTable))); err == nil {
		t.Fatal("a truncated datum decoded")
	}
	clear(buf)
	sameRows(t, got, rows)
}
