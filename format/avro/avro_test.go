package avro_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/format/avro"
	"github.com/weirstream/weir/internal/testing/schemaregistry"
)

type Order struct {
	ID    int64    `avro:"id"`
	Item  *string  `avro:"item"`
	Qty   int64    `avro:"qty"`
	Tags  []string `avro:"tags"`
	Notes string   `avro:"notes"`
}

const orderV1 = `{"type":"record","name":"Order","namespace":"shop","fields":[
	{"name":"id","type":"long"},
	{"name":"item","type":["null","string"],"default":null},
	{"name":"qty","type":"long"},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"notes","type":"string","default":"none"}]}`

// An evolved producer: notes dropped, qty an int, a field added.
const orderV2 = `{"type":"record","name":"Order","namespace":"shop","fields":[
	{"name":"id","type":"long"},
	{"name":"qty","type":"int"},
	{"name":"coupon","type":"string","default":""},
	{"name":"item","type":["null","string"],"default":null},
	{"name":"tags","type":{"type":"array","items":"string"}}]}`

type orderV2Rec struct {
	ID     int64    `avro:"id"`
	Qty    int32    `avro:"qty"`
	Coupon string   `avro:"coupon"`
	Item   *string  `avro:"item"`
	Tags   []string `avro:"tags"`
}

func str(s string) *string { return &s }

func TestCodecAndResolver(t *testing.T) {
	c, err := avro.NewCodec[Order](orderV1)
	if err != nil {
		t.Fatal(err)
	}
	in := Order{ID: 1, Item: str("apple"), Qty: 3, Tags: []string{"a"}, Notes: "n"}
	b, err := c.Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	// long 1, union branch 1, "apple", long 3, a block of one item (hamba
	// writes the count negated, then the block's size: 2 bytes) "a",
	// end, "n".
	want := []byte{2, 2, 10, 'a', 'p', 'p', 'l', 'e', 6, 1, 4, 2, 'a', 0, 2, 'n'}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded % x, want % x", b, want)
	}
	out, err := c.Decode(b)
	if err != nil || !reflect.DeepEqual(out, in) {
		t.Fatalf("decoded %+v, %v", out, err)
	}

	// Data of the evolved writer read as v1: notes takes its default,
	// qty is promoted, coupon skipped.
	w2, _ := avro.NewCodec[orderV2Rec](orderV2)
	b2, err := w2.Encode(orderV2Rec{ID: 2, Qty: 9, Coupon: "X", Tags: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	r := avro.NewResolver[Order](c.Schema())
	got, err := r.Decode(w2.Schema(), b2)
	if err != nil {
		t.Fatal(err)
	}
	if wantO := (Order{ID: 2, Qty: 9, Tags: []string{}, Notes: "none"}); !reflect.DeepEqual(got, wantO) {
		t.Fatalf("resolved %+v, want %+v", got, wantO)
	}
	// A writer that does not resolve: a string id.
	bad, _ := avro.Parse(`{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"string"}]}`)
	if _, err := c.Decode(b[:len(b)-1]); !errors.Is(err, avro.ErrTruncated) {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := r.Decode(bad, []byte{0}); err == nil || !strings.Contains(err.Error(), "does not resolve") {
		t.Fatalf("unresolvable: %v", err)
	}
}

func TestConfluent(t *testing.T) {
	reg, err := schemaregistry.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	cl, err := avro.NewRegistry(reg.URL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := avro.NewConfluent[Order](cl, orderV1, avro.Subject("orders-value"))
	if err != nil {
		t.Fatal(err)
	}
	in := []Order{{ID: 1, Qty: 2, Tags: []string{}, Notes: "a"}, {ID: 2, Item: str("x"), Qty: 3, Tags: []string{"t"}, Notes: "b"}}
	var recs [][]byte
	for _, o := range in {
		b, err := c.Encode(o)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, b)
	}
	id, _, _ := reg.Latest("orders-value")
	if n := reg.Hits("POST /subjects/{subject}/versions"); n != 1 || id == 0 {
		t.Fatalf("registered %d times (id %d)", n, id)
	}
	if recs[0][0] != 0 || int(binary.BigEndian.Uint32(recs[0][1:5])) != id {
		t.Fatalf("header % x", recs[0][:5])
	}
	// Another producer's evolved schema, registered by it.
	id2 := reg.Register("orders-value", "AVRO", orderV2)
	w2, _ := avro.NewCodec[orderV2Rec](orderV2)
	body, _ := w2.Encode(orderV2Rec{ID: 3, Qty: 4, Coupon: "c", Item: str("fig"), Tags: []string{"z"}})
	recs = append(recs, append(binary.BigEndian.AppendUint32([]byte{0}, uint32(id2)), body...))
	want := append(in, Order{ID: 3, Item: str("fig"), Qty: 4, Tags: []string{"z"}, Notes: "none"})
	for round := 0; round < 2; round++ {
		for i, b := range recs {
			got, err := c.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("record %d: %+v, want %+v", i, got, want[i])
			}
		}
	}
	if n := reg.Hits("GET /schemas/ids/{id}"); n != 2 {
		t.Fatalf("fetched schemas %d times, want 2 (once per id)", n)
	}
	for _, c2 := range []struct {
		in   []byte
		want string
	}{
		{[]byte{1, 0, 0, 0, 1}, "magic byte 0x01"},
		{[]byte{0, 0}, "shorter than the 5-byte header"},
		{[]byte{0, 0, 0, 0, 99, 2}, "schema id 99"},
		{recs[1][:7], "schema id 1: avro: truncated data"},
	} {
		if _, err := c.Decode(c2.in); err == nil || !strings.Contains(err.Error(), c2.want) {
			t.Errorf("% x: %v, want %q", c2.in, err, c2.want)
		}
	}
	noSubject, _ := avro.NewConfluent[Order](cl, orderV1)
	if _, err := noSubject.Encode(in[0]); err == nil || !strings.Contains(err.Error(), "subject") {
		t.Fatalf("no subject: %v", err)
	}
}

type fileRec struct {
	ID    int64     `avro:"id"`
	Name  *string   `avro:"name"`
	Price float64   `avro:"price"`
	Tags  []string  `avro:"tags"`
	TS    time.Time `avro:"ts"`
}

const fileSchema = `{"type":"record","name":"Rec","fields":[
	{"name":"id","type":"long"},
	{"name":"name","type":["null","string"],"default":null},
	{"name":"price","type":"double"},
	{"name":"tags","type":{"type":"array","items":"string"}},
	{"name":"ts","type":{"type":"long","logicalType":"timestamp-millis"}},
	{"name":"extra","type":"int"}]}`

// pyavro returns a python that imports Apache Avro's library, or skips
// (fails with WEIR_REQUIRE_PYAVRO=1).
func pyavro(t *testing.T) string {
	t.Helper()
	cands := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("WEIR_PYAVRO"); p != "" {
		cands = []string{p}
	}
	for _, c := range cands {
		if p, err := exec.LookPath(c); err == nil && exec.Command(p, "-c", "import avro").Run() == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_PYAVRO") == "1" {
		t.Fatal("WEIR_REQUIRE_PYAVRO=1 but no python3 imports avro (bash scripts/avro.sh install)")
	}
	t.Skip("python3-avro is not installed (bash scripts/avro.sh install)")
	return ""
}

// Object container files: python3-avro writes one (deflate blocks) that
// ReadFile reads, and reads the one NewFileWriter writes.
func TestFilesWithPython(t *testing.T) {
	py := pyavro(t)
	dir := t.TempDir()
	schemaPath := filepath.Join(dir, "rec.avsc")
	if err := os.WriteFile(schemaPath, []byte(fileSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	pyFile := filepath.Join(dir, "py.avro")
	if out, err := exec.Command(py, "testdata/ocf.py", "write", schemaPath, pyFile).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	f, err := os.Open(pyFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []fileRec
	if err := avro.ReadFile(f, func(r fileRec) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	want := []fileRec{
		{ID: 1, Name: str("ann"), Price: 1.5, Tags: []string{"a", "b"}, TS: time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC)},
		{ID: 2, Price: -0.25, Tags: []string{}, TS: time.Unix(0, 0).UTC()},
	}
	if len(got) != len(want) {
		t.Fatalf("read %d records, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].ID != want[i].ID || !reflect.DeepEqual(got[i].Name, want[i].Name) || got[i].Price != want[i].Price ||
			!reflect.DeepEqual(got[i].Tags, want[i].Tags) || !got[i].TS.Equal(want[i].TS) {
			t.Fatalf("record %d: %+v, want %+v", i, got[i], want[i])
		}
	}

	// Written here (snappy blocks), read by python.
	type goRec struct {
		fileRec
		Extra int32 `avro:"extra"`
	}
	goFile := filepath.Join(dir, "go.avro")
	out, err := os.Create(goFile)
	if err != nil {
		t.Fatal(err)
	}
	w, err := avro.NewFileWriter[map[string]any](out, fileSchema, avro.Deflate)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range want {
		m := map[string]any{"id": r.ID, "name": nil, "price": r.Price, "tags": r.Tags, "ts": r.TS, "extra": int32(i + 7)}
		if r.Name != nil {
			m["name"] = map[string]any{"string": *r.Name}
		}
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out.Close()
	res, err := exec.Command(py, "testdata/ocf.py", "read", goFile).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	wantLines := []string{
		`{"extra": 7, "id": 1, "name": "ann", "price": 1.5, "tags": ["a", "b"], "ts": "ts:2024-01-02 03:04:05.678000"}`,
		`{"extra": 8, "id": 2, "name": null, "price": -0.25, "tags": [], "ts": "ts:1970-01-01 00:00:00.000000"}`,
	}
	if len(lines) != 3 || strings.Join(lines[1:], "\n") != strings.Join(wantLines, "\n") {
		t.Fatalf("python read:\n%s\nwant\n%s", res, strings.Join(wantLines, "\n"))
	}
}
