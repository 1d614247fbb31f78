package avro_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/format/avro"
	"github.com/weirstream/weir/sql/types"
)

// pyavro returns a python that imports Apache Avro's library (Debian's
// python3-avro; scripts/avro.sh installs it). Without one the test is
// skipped, unless WEIR_REQUIRE_PYAVRO=1 (scripts/test.sh), which fails it.
func pyavro(t *testing.T) string {
	t.Helper()
	cands := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("WEIR_PYAVRO"); p != "" {
		cands = []string{p}
	}
	for _, c := range cands {
		p, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		if exec.Command(p, "-c", "import avro").Run() == nil {
			return p
		}
	}
	if os.Getenv("WEIR_REQUIRE_PYAVRO") == "1" {
		t.Fatal("WEIR_REQUIRE_PYAVRO=1 but no python3 imports avro (bash scripts/avro.sh install)")
	}
	t.Skip("python3-avro is not installed (bash scripts/avro.sh install)")
	return ""
}

func runPy(t *testing.T, py string, stdin []byte, args ...string) []string {
	t.Helper()
	cmd := exec.Command(py, append([]string{filepath.Join("testdata", "pyavro.py")}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyavro.py %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The producer's schema in testdata/pyavro.py's records: against the
// table below it has a field more (note), a float where the table has a
// DOUBLE, an int where it has a BIGINT, and lacks the table's 'added'.
var pyWriterSchema = readSchemaFile("testdata/pywriter.avsc")

// readSchemaFile reads a schema file of the tests (shared with
// sql/connector/filesystem's).
func readSchemaFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(b)
}

var pyTable = types.Schema{
	{Name: "id", Type: types.BigIntType},
	{Name: "name", Type: types.StringType},
	{Name: "price", Type: types.DoubleType},
	{Name: "qty", Type: types.BigIntType},
	{Name: "active", Type: types.BooleanType},
	{Name: "tags", Type: types.ArrayOf(types.StringType)},
	{Name: "attrs", Type: types.MapOf(types.StringType, types.BigIntType)},
	{Name: "addr", Type: types.RowOf(types.Field{Name: "city", Type: types.StringType}, types.Field{Name: "zip", Type: types.StringType})},
	{Name: "ts", Type: types.Timestamp3},
	{Name: "day", Type: types.DateType},
	{Name: "amount", Type: types.DecimalType(10, 2)},
	{Name: "raw", Type: types.BytesType},
	{Name: "added", Type: types.StringType},
}

func micros(t time.Time) types.Value { return types.Value{I: t.UnixMicro()} }
func days(t time.Time) types.Value   { return types.Value{I: t.Unix() / 86400} }

// The rows of testdata/pyavro.py's records in pyTable.
func pyRows() []types.Row {
	return []types.Row{
		{Values: []types.Value{
			{I: 1}, {S: "ann"}, types.FloatValue(1.5), {I: 3}, types.BoolValue(true),
			types.ListValue([]types.Value{{S: "a"}, {S: "b"}}), types.ListValue([]types.Value{{S: "x"}, {I: 1}}),
			types.ListValue([]types.Value{{S: "Oslo"}, types.NullValue}),
			micros(time.Date(2024, 1, 2, 3, 4, 5, 678_000_000, time.UTC)), days(time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)),
			{I: -12345}, {S: "\x00\xff"}, types.NullValue,
		}},
		{Values: []types.Value{
			{I: 2}, types.NullValue, types.FloatValue(-0.25), {I: -7}, types.BoolValue(false),
			types.ListValue([]types.Value{}), types.ListValue([]types.Value{}), types.NullValue,
			micros(time.Date(1969, 12, 31, 23, 59, 59, 999_000_000, time.UTC)), {I: 0},
			{I: 1}, {S: ""}, types.NullValue,
		}},
	}
}

// Apache Avro's Python library writes records (with a schema the table's
// evolved from) that weir reads through the Confluent wire format and the
// registry.
func TestPythonWritesWeirReads(t *testing.T) {
	py := pyavro(t)
	lines := runPy(t, py, nil, "write", writeFile(t, "w.avsc", pyWriterSchema))
	reg := registry(t)
	id := reg.Register("customers-value", "AVRO", pyWriterSchema)
	d := compileDecoder(t, pyTable, map[string]string{"format": "avro-confluent", "avro-confluent.url": reg.URL})
	want := pyRows()
	if len(lines) != len(want) {
		t.Fatalf("python wrote %d records, want %d", len(lines), len(want))
	}
	for i, l := range lines {
		body, err := hex.DecodeString(l)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := d.Decode(withHeader(id, body), nil)
		if err != nil {
			t.Fatalf("record %d (%s): %v", i, l, err)
		}
		if len(rows) != 1 || !rows[0].Equal(want[i]) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, rows, want[i])
		}
	}
}

// What weir writes (the table's derived schema, Flink's mapping) Apache
// Avro's Python library reads, with the writer's schema alone and with a
// reader's schema evolved from it: a field dropped (raw), one added with a
// default (extra), int promoted to long (qty) and float to double (f).
func TestWeirWritesPythonReads(t *testing.T) {
	py := pyavro(t)
	table := append(types.Schema{}, pyTable[:12]...)
	table[3] = types.Field{Name: "qty", Type: types.IntType}
	table = append(table, types.Field{Name: "f", Type: types.Type{Kind: types.Float}})
	_, e := compile(t, table, map[string]string{"format": "avro"})
	var hexes bytes.Buffer
	for _, r := range pyRows() {
		r.Values = append(r.Values[:12:12], types.FloatValue(0.5))
		b, _, err := e.Encode(nil, &r)
		if err != nil {
			t.Fatal(err)
		}
		hexes.WriteString(hex.EncodeToString(b) + "\n")
	}
	ws, err := avro.DeriveSchema(table, avro.Mapping{Legacy: true})
	if err != nil {
		t.Fatal(err)
	}
	writer := writeFile(t, "writer.avsc", avro.SchemaJSON(ws))
	got := runPy(t, py, hexes.Bytes(), "read", writer, writer)
	want := []string{
		`{"active": true, "addr": {"city": "Oslo", "zip": null}, "amount": "dec:-123.45", "attrs": {"x": 1}, "day": "date:2024-02-29", "f": "f:0.5", "id": 1, "name": "ann", "price": "f:1.5", "qty": 3, "raw": "hex:00ff", "tags": ["a", "b"], "ts": "ts:2024-01-02 03:04:05.678000"}`,
		`{"active": false, "addr": null, "amount": "dec:0.01", "attrs": {}, "day": "date:1970-01-01", "f": "f:0.5", "id": 2, "name": null, "price": "f:-0.25", "qty": -7, "raw": "hex:", "tags": [], "ts": "ts:1969-12-31 23:59:59.999000"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("python read:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The evolved reader (same record names, as resolution requires).
	reader := strings.NewReplacer(
		`{"name":"qty","type":["null","int"],"default":null}`, `{"name":"qty","type":["null","long"],"default":null}`,
		`{"name":"f","type":["null","float"],"default":null}`, `{"name":"f","type":["null","double"],"default":null},{"name":"extra","type":"string","default":"dflt"}`,
		`{"name":"raw","type":["null","bytes"],"default":null},`, ``,
	).Replace(avro.SchemaJSON(ws))
	if !strings.Contains(reader, `"long"`) || !strings.Contains(reader, `"extra"`) || strings.Contains(reader, `"raw"`) {
		t.Fatalf("the reader schema did not evolve: %s", reader)
	}
	got = runPy(t, py, hexes.Bytes(), "read", writer, writeFile(t, "reader.avsc", reader))
	want = []string{
		`{"active": true, "addr": {"city": "Oslo", "zip": null}, "amount": "dec:-123.45", "attrs": {"x": 1}, "day": "date:2024-02-29", "extra": "dflt", "f": "f:0.5", "id": 1, "name": "ann", "price": "f:1.5", "qty": 3, "tags": ["a", "b"], "ts": "ts:2024-01-02 03:04:05.678000"}`,
		`{"active": false, "addr": null, "amount": "dec:0.01", "attrs": {}, "day": "date:1970-01-01", "extra": "dflt", "f": "f:0.5", "id": 2, "name": null, "price": "f:-0.25", "qty": -7, "tags": [], "ts": "ts:1969-12-31 23:59:59.999000"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("python read with an evolved reader:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
