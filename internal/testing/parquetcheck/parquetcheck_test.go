package parquetcheck

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/weirstream/weir"
	weirsql "github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// rows is the size of the generated table.
const rows = 3000

// columns are the generated table's columns: weir's type, the DuckDB
// expression that generates the value of row i, and the value weir must
// read. Rows with i % 7 = 3 are NULL in every column but id.
var columns = []struct {
	name, weirType, duck string
	want                 func(i int64) types.Value
}{
	{"id", "BIGINT", "i::BIGINT", iv(func(i int64) int64 { return i })},
	{"b", "BOOLEAN", "i % 2 = 0", func(i int64) types.Value { return types.BoolValue(i%2 == 0) }},
	{"ti", "TINYINT", "(i % 100 - 50)::TINYINT", iv(func(i int64) int64 { return i%100 - 50 })},
	{"si", "SMALLINT", "(i * 3 % 30000)::SMALLINT", iv(func(i int64) int64 { return i * 3 % 30000 })},
	{"i", "INT", "(i * 1000)::INTEGER", iv(func(i int64) int64 { return i * 1000 })},
	{"f", "FLOAT", "(i + 0.25)::FLOAT", func(i int64) types.Value { return types.FloatValue(float64(float32(float64(i) + 0.25))) }},
	{"d", "DOUBLE", "(i * 1.5)::DOUBLE", func(i int64) types.Value { return types.FloatValue(float64(i) * 1.5) }},
	{"d9", "DECIMAL(9, 2)", "CAST(CAST(i * 7 - 500 AS DECIMAL(9, 0)) * 0.01 AS DECIMAL(9, 2))", iv(func(i int64) int64 { return i*7 - 500 })},
	{"d18", "DECIMAL(18, 4)", "CAST(CAST(i * 7 - 500 AS DECIMAL(18, 0)) * 0.0001 AS DECIMAL(18, 4))", iv(func(i int64) int64 { return i*7 - 500 })},
	{"d38", "DECIMAL(38, 10)", "CAST(CAST(i - 1500 AS DECIMAL(38, 0)) * 1000000000000000 + 0.0000012345 AS DECIMAL(38, 10))", func(i int64) types.Value {
		u := new(big.Int).Mul(big.NewInt(i-1500), new(big.Int).Exp(big.NewInt(10), big.NewInt(25), nil))
		u.Add(u, big.NewInt(12345))
		return types.BigDecimalValue(u)
	}},
	{"s", "STRING", "'héllo ☃ ' || i::VARCHAR", func(i int64) types.Value { return types.StringValue(fmt.Sprintf("héllo ☃ %d", i)) }},
	{"bin", "BYTES", "from_hex(printf('%02x00ff', i % 256))", func(i int64) types.Value { return types.StringValue(string([]byte{byte(i % 256), 0, 255})) }},
	{"dt", "DATE", "DATE '2022-01-08' + (i::INTEGER - 1500)", iv(func(i int64) int64 { return 19000 + i - 1500 })},
	{"tm", "TIME(3)", "TIME '00:00:00' + to_microseconds(((i % 24) * 3600 + 61) * 1000000 + (i % 1000) * 1000)", iv(func(i int64) int64 { return ((i%24)*3600+61)*1_000_000 + (i%1000)*1000 })},
	{"ts", "TIMESTAMP(6)", "make_timestamp(1700000000000000 + (i - 1500) * 1000000123)", iv(func(i int64) int64 { return 1_700_000_000_000_000 + (i-1500)*1_000_000_123 })},
	{"ltz", "TIMESTAMP_LTZ(6)", "make_timestamp(1600000000000000 + i * 1001)::TIMESTAMPTZ", iv(func(i int64) int64 { return 1_600_000_000_000_000 + i*1001 })},
	{"arr", "ARRAY<BIGINT>", "CASE WHEN i % 5 = 0 THEN []::BIGINT[] ELSE [i, NULL, -i]::BIGINT[] END", func(i int64) types.Value {
		if i%5 == 0 {
			return types.ListValue([]types.Value{})
		}
		return types.ListValue([]types.Value{types.IntValue(i), types.NullValue, types.IntValue(-i)})
	}},
	{"m", "MAP<STRING, INT>", "MAP {'k': i::INTEGER, 'z': NULL::INTEGER}", func(i int64) types.Value {
		return types.ListValue([]types.Value{types.StringValue("k"), types.IntValue(i), types.StringValue("z"), types.NullValue})
	}},
	{"r", "ROW<x INT, tags ARRAY<STRING>>", "{'x': i::INTEGER, 'tags': ['a', NULL, i::VARCHAR]}", func(i int64) types.Value {
		return types.ListValue([]types.Value{types.IntValue(i), types.ListValue([]types.Value{types.StringValue("a"), types.NullValue, types.StringValue(fmt.Sprint(i))})})
	}},
	{"day", "STRING", "'2026-12-0' || (i % 3 + 1)::VARCHAR", func(i int64) types.Value { return types.StringValue(fmt.Sprintf("2026-12-0%d", i%3+1)) }},
	{"hr", "INT", "(i % 2)::INTEGER", iv(func(i int64) int64 { return i % 2 })},
}

func iv(f func(int64) int64) func(int64) types.Value {
	return func(i int64) types.Value { return types.IntValue(f(i)) }
}

func isNullRow(i int64) bool { return i%7 == 3 }

func duck(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one connection: SET applies to every query
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec("SET TimeZone = 'UTC'"); err != nil {
		t.Fatal(err)
	}
	return db
}

// duckWrite has DuckDB write the generated table to path.
func duckWrite(t *testing.T, db *sql.DB, path string) {
	t.Helper()
	var sel []string
	for _, c := range columns {
		e := c.duck
		if c.name != "id" && c.name != "day" && c.name != "hr" {
			e = "CASE WHEN i % 7 = 3 THEN NULL ELSE " + e + " END"
		}
		sel = append(sel, e+" AS "+c.name)
	}
	q := fmt.Sprintf("COPY (SELECT %s FROM range(%d) t(i)) TO '%s' (FORMAT parquet, ROW_GROUP_SIZE 1000)", strings.Join(sel, ", "), rows, path)
	if _, err := db.Exec(q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// ddl is the CREATE TABLE of the generated table: clauses (PARTITIONED
// BY) go before WITH, extra options after the others.
func ddl(name, path, clauses, extra string) string {
	var cols []string
	for _, c := range columns {
		cols = append(cols, c.name+" "+c.weirType)
	}
	return fmt.Sprintf("CREATE TABLE %s (%s) %s WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet'%s);\n", name, strings.Join(cols, ", "), clauses, path, extra)
}

// DuckDB writes a Parquet file with every type; weir's filesystem source
// reads it with the values the generator gives.
func TestWeirReadsDuckDB(t *testing.T) {
	dir := t.TempDir()
	db := duck(t)
	in := filepath.Join(dir, "in")
	os.MkdirAll(in, 0o755)
	duckWrite(t, db, filepath.Join(in, "duck.parquet"))

	sc := weirSchema(t)
	src, err := connector.CreateSource(&connector.Table{Name: "duck", Schema: sc, Options: map[string]string{"connector": "filesystem", "path": in, "format": "parquet"}})
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("read", weir.Parallelism(1))
	var mu sync.Mutex
	var got []types.Row
	weir.To(weir.FromSource(job, "duck", src.Source, weir.NoWatermarks[types.Row]()), weir.SinkFunc[types.Row](func(_ context.Context, rs []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, rs...)
		return nil
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != rows {
		t.Fatalf("%d rows, want %d", len(got), rows)
	}
	bad := 0
	for _, r := range got {
		i := r.Values[0].I
		for j, c := range columns {
			want := c.want(i)
			if isNullRow(i) && j > 0 && c.name != "day" && c.name != "hr" {
				want = types.NullValue
			}
			if !r.Values[j].Equal(want) {
				if bad++; bad < 10 {
					t.Errorf("row %d, column %s: weir read %+v, DuckDB wrote %+v", i, c.name, r.Values[j], want)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d values differ", bad)
	}
}

// weirSchema is the generated table's schema as weir's planner makes it.
func weirSchema(t *testing.T) types.Schema {
	t.Helper()
	var sc types.Schema
	for _, c := range columns {
		ty, err := parser.ParseType(c.weirType)
		if err != nil {
			t.Fatalf("%s: %v", c.weirType, err)
		}
		sc = append(sc, types.Field{Name: c.name, Type: ty})
	}
	return sc
}

// A SQL job with checkpoints copies DuckDB's file into a partitioned,
// exactly-once Parquet table; DuckDB reads weir's files (Hive
// partitioning) and finds the same rows, every type included; every
// partition has its _SUCCESS and no hidden file is visible to the glob.
func TestDuckDBReadsWeir(t *testing.T) {
	dir := t.TempDir()
	db := duck(t)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.MkdirAll(in, 0o755)
	orig := filepath.Join(in, "duck.parquet")
	duckWrite(t, db, orig)
	script := ddl("src", in, "", "") + ddl("dst", out, "PARTITIONED BY (day, hr)", ", 'sink.partition-commit.policy.kind' = 'success-file', 'parquet.compression' = 'ZSTD'") +
		"INSERT INTO dst SELECT * FROM src;\n"
	start := time.Now()
	if err := weirsql.Run(context.Background(), script, weirsql.Parallelism(2), weirsql.Checkpointing(20*time.Millisecond, filepath.Join(dir, "ckpt"))); err != nil {
		t.Fatal(err)
	}
	t.Logf("weir copied %d rows in %v", rows, time.Since(start))
	for _, d := range []string{"day=2026-12-01/hr=0", "day=2026-12-01/hr=1", "day=2026-12-02/hr=0", "day=2026-12-03/hr=1"} {
		if _, err := os.Stat(filepath.Join(out, d, "_SUCCESS")); err != nil {
			t.Errorf("partition %s: %v", d, err)
		}
	}
	var cols []string
	for _, c := range columns {
		switch c.name {
		case "day":
			cols = append(cols, "day::VARCHAR AS day")
		case "hr":
			cols = append(cols, "hr::INTEGER AS hr")
		default:
			cols = append(cols, c.name)
		}
	}
	sel := strings.Join(cols, ", ")
	weirFiles := fmt.Sprintf("read_parquet('%s/**/*.parquet', hive_partitioning = true, hive_types_autocast = false)", out)
	var n int
	if err := db.QueryRow("SELECT count(*) FROM " + weirFiles).Scan(&n); err != nil || n != rows {
		t.Fatalf("DuckDB counts %d rows in weir's files (%v), want %d", n, err, rows)
	}
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM %s EXCEPT ALL SELECT %s FROM read_parquet('%s'))", sel, weirFiles, sel, orig),
		fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM read_parquet('%s') EXCEPT ALL SELECT %s FROM %s)", sel, orig, sel, weirFiles),
	} {
		if err := db.QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d rows differ (%v): %s", n, err, q)
		}
	}
	// The types DuckDB sees in weir's files are the original's.
	typesOf := func(from string) []string {
		rs, err := db.Query(fmt.Sprintf("DESCRIBE SELECT %s FROM %s", sel, from))
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		var out []string
		for rs.Next() {
			var name, ty string
			var null, key, def, extra sql.NullString
			if err := rs.Scan(&name, &ty, &null, &key, &def, &extra); err != nil {
				t.Fatal(err)
			}
			out = append(out, name+" "+ty)
		}
		return out
	}
	if w, d := typesOf(weirFiles), typesOf(fmt.Sprintf("read_parquet('%s')", orig)); !slices.Equal(w, d) {
		t.Errorf("DuckDB's types of weir's files:\n%v\nof its own:\n%v", w, d)
	}
	// Spot values through DuckDB's own rendering.
	var s string
	if err := db.QueryRow(fmt.Sprintf("SELECT d38::VARCHAR || ' ' || ts::VARCHAR || ' ' || to_json(r)::VARCHAR FROM %s WHERE id = 1502", weirFiles)).Scan(&s); err != nil {
		t.Fatal(err)
	}
	ts := time.UnixMicro(columns[14].want(1502).I).UTC().Format("2006-01-02 15:04:05.000000")
	if want := `2000000000000000.0000012345 ` + ts + ` {"x":1502,"tags":["a",null,"1502"]}`; s != want {
		t.Errorf("DuckDB renders row 1502 as %q, want %q", s, want)
	}
}

// A query reading a few columns and a ROW's field (the source decodes
// those only) gives what DuckDB's same query gives; its output's strings
// are dictionary-encoded.
func TestProjectedQuery(t *testing.T) {
	dir := t.TempDir()
	db := duck(t)
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	os.MkdirAll(in, 0o755)
	orig := filepath.Join(in, "duck.parquet")
	duckWrite(t, db, orig)
	script := ddl("src", in, "", "") +
		fmt.Sprintf("CREATE TABLE small (id BIGINT, x INT, s STRING, day STRING) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet', 'parquet.enable.dictionary' = 'true');\n", out) +
		"INSERT INTO small SELECT id, r.x, s, day FROM src WHERE hr = 1;\n"
	if err := weirsql.Run(context.Background(), script); err != nil {
		t.Fatal(err)
	}
	var n, diff int
	weirFiles := fmt.Sprintf("read_parquet('%s/*.parquet')", out)
	if err := db.QueryRow("SELECT count(*) FROM " + weirFiles).Scan(&n); err != nil || n != rows/2 {
		t.Fatalf("%d rows (%v), want %d", n, err, rows/2)
	}
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM (SELECT id, x, s, day FROM %s EXCEPT ALL SELECT id, r.x, s, day FROM read_parquet('%s') WHERE hr = 1)", weirFiles, orig),
		fmt.Sprintf("SELECT count(*) FROM (SELECT id, r.x, s, day FROM read_parquet('%s') WHERE hr = 1 EXCEPT ALL SELECT id, x, s, day FROM %s)", orig, weirFiles),
	} {
		if err := db.QueryRow(q).Scan(&diff); err != nil || diff != 0 {
			t.Errorf("%d rows differ (%v): %s", diff, err, q)
		}
	}
}

// INT96 timestamps ('parquet.write.int64.timestamp' = 'false', as Flink
// writes by default; UTC with 'parquet.utc-timezone') read by DuckDB as
// the same instants, and read back by weir.
func TestINT96Timestamps(t *testing.T) {
	dir := t.TempDir()
	db := duck(t)
	in, out, back := filepath.Join(dir, "in"), filepath.Join(dir, "out"), filepath.Join(dir, "back")
	os.MkdirAll(in, 0o755)
	orig := filepath.Join(in, "duck.parquet")
	duckWrite(t, db, orig)
	const opts = "'parquet.write.int64.timestamp' = 'false', 'parquet.utc-timezone' = 'true'"
	script := ddl("src", in, "", "") +
		fmt.Sprintf("CREATE TABLE ts96 (id BIGINT, ts TIMESTAMP(6), ltz TIMESTAMP_LTZ(6)) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet', %s);\n", out, opts) +
		"INSERT INTO ts96 SELECT id, ts, ltz FROM src;\n"
	if err := weirsql.Run(context.Background(), script); err != nil {
		t.Fatal(err)
	}
	var n, diff int
	var phys string
	if err := db.QueryRow(fmt.Sprintf("SELECT DISTINCT type FROM parquet_schema('%s/*.parquet') WHERE name = 'ts'", out)).Scan(&phys); err != nil || phys != "INT96" {
		t.Fatalf("ts is %q (%v), want INT96", phys, err)
	}
	weirFiles := fmt.Sprintf("read_parquet('%s/*.parquet')", out)
	if err := db.QueryRow("SELECT count(*) FROM " + weirFiles).Scan(&n); err != nil || n != rows {
		t.Fatalf("%d rows (%v), want %d", n, err, rows)
	}
	q := fmt.Sprintf("SELECT count(*) FROM %s w JOIN read_parquet('%s') d USING (id) WHERE epoch_us(w.ts) IS DISTINCT FROM epoch_us(d.ts) OR epoch_us(w.ltz) IS DISTINCT FROM epoch_us(d.ltz)", weirFiles, orig)
	if err := db.QueryRow(q).Scan(&diff); err != nil || diff != 0 {
		t.Fatalf("%d rows differ (%v): %s", diff, err, q)
	}
	// and weir reads its INT96 back: a copy to INT64 timestamps equals
	script = fmt.Sprintf("CREATE TABLE a (id BIGINT, ts TIMESTAMP(6), ltz TIMESTAMP_LTZ(6)) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet', %s);\n", out, opts) +
		fmt.Sprintf("CREATE TABLE b (id BIGINT, ts TIMESTAMP(6), ltz TIMESTAMP_LTZ(6)) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet');\n", back) +
		"INSERT INTO b SELECT * FROM a;\n"
	if err := weirsql.Run(context.Background(), script); err != nil {
		t.Fatal(err)
	}
	q = fmt.Sprintf("SELECT count(*) FROM read_parquet('%s/*.parquet') w JOIN read_parquet('%s') d USING (id) WHERE w.ts IS DISTINCT FROM d.ts OR w.ltz IS DISTINCT FROM d.ltz", back, orig)
	if err := db.QueryRow(q).Scan(&diff); err != nil || diff != 0 {
		t.Fatalf("%d rows differ after weir read its INT96 (%v)", diff, err)
	}
}

// A PARTITIONED BY table in a row format (JSON) through SQL: written with
// the partition columns in the directory names only, read back by the
// planner's scan with them, equal to DuckDB's rows.
func TestPartitionedJSONThroughSQL(t *testing.T) {
	dir := t.TempDir()
	db := duck(t)
	in, js, back := filepath.Join(dir, "in"), filepath.Join(dir, "json"), filepath.Join(dir, "back")
	os.MkdirAll(in, 0o755)
	orig := filepath.Join(in, "duck.parquet")
	duckWrite(t, db, orig)
	const cols = "id BIGINT, s STRING, d18 DECIMAL(18, 4), ts TIMESTAMP(6), day STRING, hr INT"
	script := ddl("src", in, "", "") +
		fmt.Sprintf("CREATE TABLE j (%s) PARTITIONED BY (day, hr) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');\n", cols, js) +
		"INSERT INTO j SELECT id, s, d18, ts, day, hr FROM src;\n"
	if err := weirsql.Run(context.Background(), script, weirsql.Parallelism(2)); err != nil {
		t.Fatal(err)
	}
	parts, err := filepath.Glob(filepath.Join(js, "day=2026-12-02", "hr=0", "part-*"))
	if err != nil || len(parts) == 0 {
		t.Fatalf("no part file in a partition (%v)", err)
	}
	line, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(line), "2026-12-02") || strings.Contains(string(line), `"hr"`) {
		t.Fatalf("a JSON record holds a partition column: %.200s", line)
	}
	script = fmt.Sprintf("CREATE TABLE j (%s) PARTITIONED BY (day, hr) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'json');\n", cols, js) +
		fmt.Sprintf("CREATE TABLE b (%s) WITH ('connector' = 'filesystem', 'path' = '%s', 'format' = 'parquet');\n", cols, back) +
		"INSERT INTO b SELECT * FROM j;\n"
	if err := weirsql.Run(context.Background(), script); err != nil {
		t.Fatal(err)
	}
	const sel = "id, s, d18, ts, day, hr"
	var n int
	for _, q := range []string{
		fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM read_parquet('%s/*.parquet') EXCEPT ALL SELECT %s FROM read_parquet('%s'))", sel, back, sel, orig),
		fmt.Sprintf("SELECT count(*) FROM (SELECT %s FROM read_parquet('%s') EXCEPT ALL SELECT %s FROM read_parquet('%s/*.parquet'))", sel, orig, sel, back),
	} {
		if err := db.QueryRow(q).Scan(&n); err != nil || n != 0 {
			t.Errorf("%d rows differ (%v): %s", n, err, q)
		}
	}
}
