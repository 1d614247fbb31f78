package postgrescdc_test

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/pgtest"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/types"
)

var (
	server     *pgtest.Server
	skipReason string
	slots      atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	s, err := pgtest.Start(context.Background(), 2*time.Minute)
	switch {
	case errors.Is(err, pgtest.ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1":
		skipReason = fmt.Sprintf("no PostgreSQL server (%v)", err)
		return m.Run()
	case err != nil:
		fmt.Fprintln(os.Stderr, "sql/connector/postgrescdc:", err)
		return 1
	}
	server = s
	code := m.Run()
	if err := s.Stop(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "sql/connector/postgrescdc:", err)
		code = 1
	}
	return code
}

func exec(t *testing.T, sqls ...string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), server.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range sqls {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// table declares a 'postgres-cdc' table over the test server, with the
// Flink CDC options (the socket directory as 'hostname').
func table(t *testing.T, name, pgTable string, schema types.Schema, pk []int, extra ...string) *connector.Table {
	t.Helper()
	if server == nil {
		t.Skip(skipReason)
	}
	opts := map[string]string{
		"connector": "postgres-cdc", "hostname": server.Dir, "port": "5432", "username": "weir",
		"database-name": "postgres", "schema-name": "public", "table-name": pgTable,
		"slot.name": fmt.Sprintf("weir_sqlcdc_%d", slots.Add(1)), "decoding.plugin.name": "pgoutput",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		opts[extra[i]] = extra[i+1]
	}
	return &connector.Table{Name: name, Schema: schema, PrimaryKey: pk, Options: opts}
}

// reader opens the table's source and returns a function that reads until
// n rows arrived (or the deadline).
type reader struct {
	t   *testing.T
	r   weir.SplitReader[types.Row]
	got []types.Row
}

func open(t *testing.T, tab *connector.Table) (*connector.Source, *reader) {
	t.Helper()
	src, err := connector.CreateSource(tab)
	if err != nil {
		t.Fatal(err)
	}
	splits, err := src.Source.Splits(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := src.Source.Open(context.Background(), splits[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return src, &reader{t: t, r: r}
}

// next reads until n more rows arrived or an error; it fails on a timeout.
func (r *reader) next(n int) ([]types.Row, error) {
	r.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	start := len(r.got)
	buf := make([]types.Row, 64)
	for len(r.got)-start < n {
		if time.Now().After(deadline) {
			r.t.Fatalf("%d of %d rows after 60s: %v", len(r.got)-start, n, r.got[start:])
		}
		k, err := r.r.Read(context.Background(), buf)
		r.got = append(r.got, buf[:k]...)
		if err != nil {
			return r.got[start:], err
		}
	}
	return r.got[start:], nil
}

func (r *reader) must(n int) []types.Row {
	r.t.Helper()
	rows, err := r.next(n)
	if err != nil {
		r.t.Fatal(err)
	}
	if len(rows) != n {
		r.t.Fatalf("want %d rows, got %d: %v", n, len(rows), rows)
	}
	return rows
}

func format(rows []types.Row) string {
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.Kind.String())
		for _, v := range r.Values {
			if v.Null {
				b.WriteString(" NULL")
			} else if v.X != nil {
				fmt.Fprintf(&b, " %v", v.X)
			} else if v.S != "" {
				fmt.Fprintf(&b, " %q", v.S)
			} else {
				fmt.Fprintf(&b, " %d", v.I)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

var accountsSchema = types.Schema{
	{Name: "id", Type: types.Type{Kind: types.BigInt, NotNull: true}},
	{Name: "owner", Type: types.StringType},
	{Name: "balance", Type: types.DecimalType(12, 2)},
}

// With the PRIMARY KEY and the default REPLICA IDENTITY the source is an
// upsert changelog: an update is +U, an update of the key deletes the old
// key, a delete carries the key.
func TestUpsertModeDefaultReplicaIdentity(t *testing.T) {
	exec(t, `CREATE TABLE acc_upsert (id bigint PRIMARY KEY, owner text, balance numeric(12,2), extra int)`,
		`INSERT INTO acc_upsert VALUES (1, 'ann', 10.50, 0), (2, 'bob', 3, 0)`)
	src, r := open(t, table(t, "accounts", "acc_upsert", accountsSchema, []int{0}))
	if src.Changelog != types.Upsert {
		t.Fatalf("changelog %v", src.Changelog)
	}
	got := format(r.must(2))
	if want := "+I 1 \"ann\" 1050\n+I 2 \"bob\" 300\n"; got != want {
		t.Fatalf("snapshot:\n%s\nwant\n%s", got, want)
	}
	exec(t, `UPDATE acc_upsert SET balance = 11, owner = 'cat' WHERE id = 1`,
		`UPDATE acc_upsert SET id = 3 WHERE id = 2`,
		`DELETE FROM acc_upsert WHERE id = 1`,
		`BEGIN; INSERT INTO acc_upsert VALUES (9, 'x', 1, 0); ROLLBACK`,
		`INSERT INTO acc_upsert VALUES (4, NULL, -0.01, 0)`)
	got = format(r.must(5))
	want := "+U 1 \"cat\" 1100\n-D 2 NULL NULL\n+U 3 \"bob\" 300\n-D 1 NULL NULL\n+I 4 NULL -1\n"
	if got != want {
		t.Fatalf("changes:\n%s\nwant\n%s", got, want)
	}
}

// Without a PRIMARY KEY the mode is 'all', which needs REPLICA IDENTITY
// FULL: the first change of a table without it fails, saying what to do;
// with it, updates come as -U/+U pairs and deletes with the whole row.
func TestAllModeNeedsReplicaIdentityFull(t *testing.T) {
	exec(t, `CREATE TABLE acc_def (id bigint PRIMARY KEY, owner text, balance numeric(12,2))`,
		`CREATE TABLE acc_full (id bigint PRIMARY KEY, owner text, balance numeric(12,2))`,
		`ALTER TABLE acc_full REPLICA IDENTITY FULL`)

	src, r := open(t, table(t, "accounts", "acc_def", accountsSchema, nil))
	if src.Changelog != types.All {
		t.Fatalf("changelog %v", src.Changelog)
	}
	exec(t, `INSERT INTO acc_def VALUES (1, 'ann', 1)`)
	_, err := r.next(1)
	if err == nil || !strings.Contains(err.Error(), "table 'accounts': PostgreSQL table public.acc_def does not have REPLICA IDENTITY FULL") {
		t.Fatalf("want the REPLICA IDENTITY error, got %v", err)
	}

	_, r = open(t, table(t, "accounts", "acc_full", accountsSchema, []int{0}, "changelog-mode", "all"))
	exec(t, `INSERT INTO acc_full VALUES (1, 'ann', 1)`, `UPDATE acc_full SET balance = 2 WHERE id = 1`, `DELETE FROM acc_full`)
	got := format(r.must(4))
	if want := "+I 1 \"ann\" 100\n-U 1 \"ann\" 100\n+U 1 \"ann\" 200\n-D 1 \"ann\" 200\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// Upsert mode over REPLICA IDENTITY FULL: the before-image of an update
// that keeps the key is dropped (the +U upserts), one that moves the key
// deletes the old key.
func TestUpsertModeFullIdentity(t *testing.T) {
	exec(t, `CREATE TABLE acc_fu (id bigint PRIMARY KEY, owner text, balance numeric(12,2))`, `ALTER TABLE acc_fu REPLICA IDENTITY FULL`)
	_, r := open(t, table(t, "accounts", "acc_fu", accountsSchema, []int{0}))
	exec(t, `INSERT INTO acc_fu VALUES (1, 'ann', 1)`, `UPDATE acc_fu SET balance = 2`, `UPDATE acc_fu SET id = 2`)
	got := format(r.must(4))
	if want := "+I 1 \"ann\" 100\n+U 1 \"ann\" 200\n-D 1 \"ann\" 200\n+U 2 \"ann\" 200\n"; got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

// Every mapped type, from the snapshot and from the WAL (the two paths
// give PostgreSQL's text format; the same decoders read both).
func TestTypes(t *testing.T) {
	exec(t, `CREATE TYPE mood AS ENUM ('sad', 'ok')`,
		`CREATE TABLE typed (id int PRIMARY KEY, s smallint, b bigint, n numeric(30,4), r real, d double precision,
			v varchar(10), c char(3), u uuid, j jsonb, m mood, ok boolean, raw bytea, day date, tod time,
			ts timestamp, tz timestamptz, ints int[], texts text[])`)
	row := `(%d, -7, 9007199254740993, -12345678901234567890.5, 1.5, -2.25, 'vé', 'ab', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
		'{"a": 1}', 'ok', true, '\x00ff41', '2024-02-29', '23:59:59.123456', '2024-02-29 12:34:56.789012',
		'2024-02-29 12:34:56.5+05:30', '{1,NULL,3}', '{"a b","c\"d",e,NULL,"NULL"}')`
	exec(t, fmt.Sprintf(`INSERT INTO typed VALUES `+row, 1))
	dec := func(p, s int) types.Type { return types.DecimalType(p, s) }
	arr := func(e types.Type) types.Type { return types.Type{Kind: types.Array, Elem: &e} }
	schema := types.Schema{
		{Name: "id", Type: types.IntType}, {Name: "s", Type: types.Type{Kind: types.SmallInt}},
		{Name: "b", Type: types.BigIntType}, {Name: "n", Type: dec(30, 4)},
		{Name: "r", Type: types.Type{Kind: types.Float}}, {Name: "d", Type: types.Type{Kind: types.Double}},
		{Name: "v", Type: types.StringType}, {Name: "c", Type: types.Type{Kind: types.Char, Length: 3}},
		{Name: "u", Type: types.StringType}, {Name: "j", Type: types.StringType}, {Name: "m", Type: types.StringType},
		{Name: "ok", Type: types.Type{Kind: types.Boolean}}, {Name: "raw", Type: types.Type{Kind: types.Varbinary, Length: types.MaxLength}},
		{Name: "day", Type: types.Type{Kind: types.Date}}, {Name: "tod", Type: types.Type{Kind: types.Time}},
		{Name: "ts", Type: types.Type{Kind: types.Timestamp, Precision: 6}},
		{Name: "tz", Type: types.Type{Kind: types.TimestampLTZ, Precision: 6}},
		{Name: "ints", Type: arr(types.IntType)}, {Name: "texts", Type: arr(types.StringType)},
	}
	_, r := open(t, table(t, "typed", "typed", schema, []int{0}))
	exec(t, fmt.Sprintf(`INSERT INTO typed VALUES `+row, 2))
	rows := r.must(2)
	wantN, _ := new(big.Int).SetString("-123456789012345678905000", 10)
	ts := time.Date(2024, 2, 29, 12, 34, 56, 789012000, time.UTC).UnixMicro()
	tz := time.Date(2024, 2, 29, 7, 4, 56, 500000000, time.UTC).UnixMicro()
	day := time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC).Unix() / 86400
	for i, row := range rows {
		v := row.Values
		checks := []struct {
			what string
			ok   bool
		}{
			{"id", v[0].I == int64(i+1)}, {"smallint", v[1].I == -7}, {"bigint", v[2].I == 9007199254740993},
			{"numeric", v[3].BigInt() != nil && v[3].BigInt().Cmp(wantN) == 0},
			{"real", v[4].Float() == 1.5}, {"double", v[5].Float() == -2.25},
			{"varchar", v[6].S == "vé"}, {"char", v[7].S == "ab "}, {"uuid", v[8].S == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"},
			{"jsonb", v[9].S == `{"a": 1}`}, {"enum", v[10].S == "ok"}, {"bool", v[11].Bool()},
			{"bytea", v[12].S == "\x00\xffA"}, {"date", v[13].I == day},
			{"time", v[14].I == ((23*60+59)*60+59)*1e6+123456}, {"timestamp", v[15].I == ts}, {"timestamptz", v[16].I == tz},
			{"int[]", format([]types.Row{{Values: v[17].List()}}) == "+I 1 NULL 3\n"},
			{"text[]", format([]types.Row{{Values: v[18].List()}}) == "+I \"a b\" \"c\\\"d\" \"e\" NULL \"NULL\"\n"},
		}
		for _, c := range checks {
			if !c.ok {
				t.Errorf("row %d: %s wrong: %s", i+1, c.what, format([]types.Row{row}))
			}
		}
	}
}

// A declared column missing in PostgreSQL, a type the declared one cannot
// hold, and a numeric with more digits than the DECIMAL's scale are
// errors naming the table and the column.
func TestSchemaErrors(t *testing.T) {
	exec(t, `CREATE TABLE bad (id bigint PRIMARY KEY, owner text, balance numeric(12,3))`,
		`INSERT INTO bad VALUES (1, 'ann', 1.005)`)
	cases := []struct {
		schema types.Schema
		want   string
	}{
		{types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "ownr", Type: types.StringType}},
			"table 'accounts': column 'ownr' does not exist in PostgreSQL table public.bad (its columns: id, owner, balance)"},
		{types.Schema{{Name: "id", Type: types.IntType}},
			"table 'accounts': column 'id' is INT, but public.bad.id is bigint in PostgreSQL, which cannot be read as INT"},
		{types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "owner", Type: types.Type{Kind: types.Date}}},
			"table 'accounts': column 'owner' is DATE, but public.bad.owner is text in PostgreSQL"},
		{types.Schema{{Name: "id", Type: types.BigIntType}, {Name: "balance", Type: types.DecimalType(12, 2)}},
			"table 'accounts': column 'balance' (public.bad.balance): 1.005 has more than 2 fractional digits"},
	}
	for _, c := range cases {
		_, r := open(t, table(t, "accounts", "bad", c.schema, []int{0}))
		_, err := r.next(1)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}

// Options are Flink CDC's: a typo, a missing slot, upsert mode without a
// key and a type that cannot come from PostgreSQL are planning errors.
func TestOptionErrors(t *testing.T) {
	if server == nil {
		t.Skip(skipReason)
	}
	mapType := types.Type{Kind: types.Map, Key: &types.StringType, Elem: &types.StringType}
	cases := []struct {
		opts   []string
		schema types.Schema
		pk     []int
		want   string
	}{
		{[]string{"slot.nam", "x"}, accountsSchema, nil, "unsupported options found for 'postgres-cdc': 'slot.nam'"},
		{[]string{"changelog-mode", "upsert"}, accountsSchema, nil, "option 'changelog-mode' = 'upsert': needs a PRIMARY KEY"},
		{[]string{"decoding.plugin.name", "decoderbufs"}, accountsSchema, nil, "only 'pgoutput' is supported"},
		{[]string{"scan.startup.mode", "timestamp"}, accountsSchema, nil, "option 'scan.startup.mode' = 'timestamp'"},
		{nil, types.Schema{{Name: "m", Type: mapType}}, nil, "column 'm': type MAP<STRING, STRING> cannot be read from PostgreSQL"},
	}
	for _, c := range cases {
		tab := table(t, "accounts", "x", c.schema, c.pk, c.opts...)
		_, err := connector.CreateSource(tab)
		if err == nil || !strings.Contains(err.Error(), "table 'accounts'") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: want %q, got %v", c.opts, c.want, err)
		}
	}
	tab := table(t, "accounts", "x", accountsSchema, nil)
	delete(tab.Options, "slot.name")
	if _, err := connector.CreateSource(tab); err == nil || !strings.Contains(err.Error(), "missing required option 'slot.name'") {
		t.Errorf("missing slot: %v", err)
	}
}

// A declared PRIMARY KEY that is not PostgreSQL's replica identity cannot
// normalize a key-only delete: the first one fails, saying so.
func TestUpsertModeKeyNotReplicaIdentity(t *testing.T) {
	exec(t, `CREATE TABLE acc_otherkey (id bigint PRIMARY KEY, owner text, balance numeric(12,2))`)
	_, r := open(t, table(t, "accounts", "acc_otherkey", accountsSchema, []int{1}))
	exec(t, `INSERT INTO acc_otherkey VALUES (1, 'ann', 1)`, `DELETE FROM acc_otherkey`)
	_, err := r.next(2)
	if err == nil || !strings.Contains(err.Error(), "table 'accounts': the declared PRIMARY KEY is not the replica identity of PostgreSQL table public.acc_otherkey") {
		t.Fatalf("got %v", err)
	}
}

// BenchmarkSnapshotRows reads a table's snapshot through the SQL source
// (PostgreSQL's text rows decoded into typed rows) and reports rows/s.
func BenchmarkSnapshotRows(b *testing.B) {
	if server == nil {
		b.Skip(skipReason)
	}
	const n = 100000
	conn, err := pgx.Connect(context.Background(), server.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, s := range []string{`DROP TABLE IF EXISTS bench_rows`,
		`CREATE TABLE bench_rows (id bigint PRIMARY KEY, owner text, balance numeric(12,2), ts timestamptz)`,
		fmt.Sprintf(`INSERT INTO bench_rows SELECT i, 'owner' || (i %% 100), i / 100.0, now() FROM generate_series(1, %d) i`, n)} {
		if _, err := conn.Exec(context.Background(), s); err != nil {
			b.Fatal(err)
		}
	}
	schema := append(accountsSchema[:3:3], types.Field{Name: "ts", Type: types.Type{Kind: types.TimestampLTZ, Precision: 6}})
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		tab := &connector.Table{Name: "bench", Schema: schema, PrimaryKey: []int{0}, Options: map[string]string{
			"connector": "postgres-cdc", "hostname": server.Dir, "username": "weir", "database-name": "postgres",
			"table-name": "bench_rows", "slot.name": fmt.Sprintf("weir_sqlcdc_bench_%d", slots.Add(1)),
		}}
		src, err := connector.CreateSource(tab)
		if err != nil {
			b.Fatal(err)
		}
		splits, _ := src.Source.Splits(context.Background())
		r, err := src.Source.Open(context.Background(), splits[0])
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]types.Row, 1024)
		for got := 0; got < n; {
			k, err := r.Read(context.Background(), buf)
			if err != nil {
				b.Fatal(err)
			}
			got += k
		}
		r.Close()
	}
	b.ReportMetric(float64(n*b.N)/time.Since(start).Seconds(), "rows/s")
}
