package jdbc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/pgtest"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/connector/jdbc"
	"github.com/weirstream/weir/sql/format"
	"github.com/weirstream/weir/sql/types"
)

var (
	server     *pgtest.Server
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	s, err := pgtest.Start(context.Background(), 2*time.Minute)
	switch {
	case errors.Is(err, pgtest.ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1":
		skipReason = fmt.Sprintf("no PostgreSQL server (%v)", err)
		return m.Run()
	case err != nil:
		fmt.Fprintln(os.Stderr, "sql/connector/jdbc:", err)
		return 1
	}
	server = s
	code := m.Run()
	if err := s.Stop(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "sql/connector/jdbc:", err)
		code = 1
	}
	return code
}

// jdbcURL is the server as a JDBC URL (its socket directory in 'host').
func jdbcURL(t *testing.T) string {
	t.Helper()
	if server == nil {
		t.Skip(skipReason)
	}
	return "jdbc:postgresql://localhost:5432/postgres?sslmode=disable&host=" + url.QueryEscape(server.Dir)
}

func exec(t *testing.T, sql string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), server.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatal(err)
	}
}

func query(t *testing.T, sql string) []string {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), server.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.TrimSuffix(fmt.Sprintln(vals...), "\n"))
	}
	if rows.Err() != nil {
		t.Fatal(rows.Err())
	}
	return out
}

var schema = types.Schema{
	{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType},
	{Name: "price", Type: types.DecimalType(10, 2)}, {Name: "ts", Type: types.Timestamp3},
}

func row(k types.RowKind, id int64, name string, cents int64) types.Row {
	return types.Row{Kind: k, Values: []types.Value{{I: id}, {S: name}, {I: cents}, {I: 1586937901500_000}}}
}

func runJob(t *testing.T, sink *connector.Sink, rows []types.Row) {
	t.Helper()
	job := weir.NewJob("jdbc")
	weir.To(weir.FromSource(job, "rows", weir.SliceSource(rows), weir.NoWatermarks[types.Row]()), sink.Sink, sink.Options...)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestUpsertsAndDeletes(t *testing.T) {
	u := jdbcURL(t)
	exec(t, `CREATE TABLE items (id bigint PRIMARY KEY, name text, price numeric(10,2), ts timestamp)`)
	tab := &connector.Table{Name: "items", Schema: schema, PrimaryKey: []int{0}, Options: map[string]string{
		"connector": "jdbc", "url": u, "table-name": "items", "username": "weir", "sink.buffer-flush.max-rows": "2",
	}}
	sink, err := connector.CreateSink(tab)
	if err != nil {
		t.Fatal(err)
	}
	if sink.Accepts != types.Upsert {
		t.Fatalf("accepts %v", sink.Accepts)
	}
	changes := []types.Row{
		row(types.Insert, 1, "a", 150), row(types.Insert, 2, "b", 200), row(types.Insert, 3, "c", 1),
		row(types.UpdateBefore, 1, "a", 150), row(types.UpdateAfter, 1, "a2", 175), row(types.Delete, 2, "b", 200),
		row(types.Insert, 4, "d'\"x", -5),
	}
	runJob(t, sink, changes)
	want := []string{"1 a2 1.75 2020-04-15 08:05:01.5 +0000 UTC", "3 c 0.01 2020-04-15 08:05:01.5 +0000 UTC", `4 d'"x -0.05 2020-04-15 08:05:01.5 +0000 UTC`}
	got := query(t, `SELECT id, name, price::text, ts FROM items ORDER BY id`)
	if !slices.Equal(got, want) {
		t.Fatalf("table\n%q\nwant\n%q", got, want)
	}
	// A replay of the same changes (at-least-once after a restore) leaves
	// the same table.
	runJob(t, sink, changes)
	if got := query(t, `SELECT id, name, price::text, ts FROM items ORDER BY id`); !slices.Equal(got, want) {
		t.Fatalf("after a replay\n%q\nwant\n%q", got, want)
	}
}

func TestAppendWithoutKey(t *testing.T) {
	u := jdbcURL(t)
	exec(t, `CREATE TABLE log (id bigint, name text, price numeric(10,2), ts timestamp)`)
	sink, err := connector.CreateSink(&connector.Table{Name: "log", Schema: schema, Options: map[string]string{"connector": "jdbc", "url": u, "table-name": "public.log", "username": "weir"}})
	if err != nil {
		t.Fatal(err)
	}
	if sink.Accepts != types.InsertOnly {
		t.Fatal(sink.Accepts)
	}
	var rows []types.Row
	for i := range 250 {
		rows = append(rows, row(types.Insert, int64(i), "x", int64(i)))
	}
	runJob(t, sink, rows)
	if got := query(t, `SELECT count(*), sum(price)::text FROM log`); !slices.Equal(got, []string{"250 311.25"}) {
		t.Fatal(got)
	}
}

func TestExactTableAfterARestore(t *testing.T) {
	u := jdbcURL(t)
	exec(t, `CREATE TABLE counts (id bigint PRIMARY KEY, name text, price numeric(10,2), ts timestamp)`)
	sink, err := connector.CreateSink(&connector.Table{Name: "counts", Schema: schema, PrimaryKey: []int{0}, Options: map[string]string{"connector": "jdbc", "url": u, "table-name": "counts", "username": "weir"}})
	if err != nil {
		t.Fatal(err)
	}
	// Key i%50 is updated again and again; keys with i%7 == 0 end deleted.
	var rows []types.Row
	final := map[int64]int64{}
	for i := range int64(3000) {
		k := i % 50
		rows = append(rows, row(types.UpdateAfter, k, "v", i))
		final[k] = i
	}
	for k := int64(0); k < 50; k += 7 {
		rows = append(rows, row(types.Delete, k, "", 0))
		delete(final, k)
	}
	var failed atomic.Bool
	job := weir.NewJob("jdbc", weir.Checkpointing(5*time.Millisecond, filepath.Join(t.TempDir(), "ckpt")),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 5, Interval: time.Hour}))
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(rows).(weir.RestorableSource[types.Row]), 200)
	s := weir.Map(weir.FromSource(job, "rows", weir.Source[types.Row](paced), weir.NoWatermarks[types.Row]()), func(r types.Row) types.Row {
		if !failed.Load() && r.Values[2].I > 1500 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
			panic("injected failure")
		}
		return r
	})
	weir.To(s, sink.Sink)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("no failure injected")
	}
	var want []string
	for k := int64(0); k < 50; k++ {
		if v, ok := final[k]; ok {
			want = append(want, fmt.Sprintf("%d %d.%02d", k, v/100, v%100))
		}
	}
	if got := query(t, `SELECT id, price::text FROM counts ORDER BY id`); !slices.Equal(got, want) {
		t.Fatalf("table\n%q\nwant\n%q", got, want)
	}
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		opts   map[string]string
		schema types.Schema
		want   string
	}{
		{map[string]string{"table-name": "t"}, schema, "missing required option 'url'"},
		{map[string]string{"url": "jdbc:mysql://h/db", "table-name": "t"}, schema, "only PostgreSQL is supported (jdbc:postgresql://...), not jdbc:mysql:"},
		{map[string]string{"url": "jdbc:postgresql://h/db"}, schema, "missing required option 'table-name'"},
		{map[string]string{"url": "jdbc:postgresql://h/db", "table-name": "t", "sink.max-retries": "3"}, schema, "unsupported options found for 'jdbc': 'sink.max-retries'"},
		{map[string]string{"url": "jdbc:postgresql://h/db", "table-name": "t"}, types.Schema{{Name: "a", Type: types.ArrayOf(types.IntType)}}, "column 'a': type ARRAY<INT> is not supported"},
	} {
		c.opts["connector"] = "jdbc"
		_, err := connector.CreateSink(&connector.Table{Name: "t", Schema: c.schema, Options: c.opts})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
	if _, err := connector.CreateSource(&connector.Table{Name: "t", Schema: schema, Options: map[string]string{"connector": "jdbc", "url": "jdbc:postgresql://h/db", "table-name": "t", "scan.partition.column": "id"}}); err == nil ||
		!strings.Contains(err.Error(), "unsupported options found for 'jdbc': 'scan.partition.column'") {
		t.Fatal(err)
	}
	dsn, err := jdbc.DSN("jdbc:postgresql://db.example:5433/shop?sslmode=require", "ann", "p@ss")
	if err != nil || dsn != "postgres://ann:p%40ss@db.example:5433/shop?sslmode=require" {
		t.Fatal(dsn, err)
	}
}

func TestScan(t *testing.T) {
	u := jdbcURL(t)
	exec(t, `CREATE TABLE dim (id bigint PRIMARY KEY, name text, price numeric(10,2), at timestamptz, day date, ok boolean, b bytea, d double precision);
		INSERT INTO dim VALUES (3, 'c', 0.01, '2020-04-15 08:05:01.5+00', '2020-04-15', true, '\x01ff', 1e10),
			(1, NULL, -1.50, NULL, NULL, false, NULL, 0.25), (2, 'b''x', 2, '1970-01-01 00:00:00+00', '1969-12-31', NULL, '', NULL)`)
	s := types.Schema{
		{Name: "id", Type: types.BigIntType}, {Name: "name", Type: types.StringType}, {Name: "price", Type: types.DecimalType(10, 2)},
		{Name: "at", Type: types.TimestampLTZ3}, {Name: "day", Type: types.DateType}, {Name: "ok", Type: types.BooleanType},
		{Name: "b", Type: types.BytesType}, {Name: "d", Type: types.DoubleType},
	}
	src, err := connector.CreateSource(&connector.Table{Name: "dim", Schema: s, PrimaryKey: []int{0}, Options: map[string]string{
		"connector": "jdbc", "url": u, "table-name": "dim", "username": "weir", "scan.fetch-size": "2"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sp, _ := src.Source.Splits(ctx)
	readAll := func(r weir.SplitReader[types.Row]) []types.Row {
		var out []types.Row
		buf := make([]types.Row, 8)
		for {
			n, err := r.Read(ctx, buf)
			out = append(out, buf[:n]...)
			if err == io.EOF {
				r.Close()
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	r, err := src.Source.Open(ctx, sp[0])
	if err != nil {
		t.Fatal(err)
	}
	rows := readAll(r)
	var got []string
	for _, row := range rows {
		got = append(got, string(format.NewPrinter(s).Append(nil, &row)))
	}
	want := []string{
		"+I[1, null, -1.50, null, null, false, null, 0.25]",
		"+I[2, b'x, 2.00, 1970-01-01T00:00Z, 1969-12-31, null, [], null]",
		"+I[3, c, 0.01, 2020-04-15T08:05:01.500Z, 2020-04-15, true, [1, -1], 1.0E10]",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("scanned\n%q\nwant\n%q", got, want)
	}
	// A restore after two rows reads the third.
	r, _ = src.Source.Open(ctx, sp[0])
	two := make([]types.Row, 2)
	if n, err := r.Read(ctx, two); n != 2 || err != nil {
		t.Fatal(n, err)
	}
	pos, _ := r.(weir.CheckpointedReader[types.Row]).Position()
	r.Close()
	r, err = src.Source.(weir.RestorableSource[types.Row]).OpenAt(ctx, sp[0], pos)
	if err != nil {
		t.Fatal(err)
	}
	if rest := readAll(r); len(rest) != 1 || rest[0].Values[0].I != 3 {
		t.Fatalf("after the restore: %+v", rest)
	}
}
