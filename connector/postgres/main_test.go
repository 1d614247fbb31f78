package postgres_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir/internal/testing/pgtest"
)

// server is the package's throwaway PostgreSQL server; nil when there is
// none (then every test that needs it skips, or the run fails under
// WEIR_REQUIRE_POSTGRES=1).
var (
	server     *pgtest.Server
	skipReason string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	start := time.Now()
	s, err := pgtest.Start(context.Background(), 2*time.Minute)
	switch {
	case errors.Is(err, pgtest.ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1":
		skipReason = fmt.Sprintf("no PostgreSQL server (%v); bash scripts/postgres.sh install, or run bash scripts/test.sh", err)
		fmt.Fprintln(os.Stderr, "connector/postgres: skipping the tests that need a server:", skipReason)
		return m.Run()
	case err != nil:
		fmt.Fprintln(os.Stderr, "connector/postgres: WEIR_REQUIRE_POSTGRES=1 and:", err)
		return 1
	}
	server = s
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "connector/postgres: server in %s started in %v\n", s.Dir, time.Since(start).Round(time.Millisecond))
	}
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "connector/postgres:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// dsn returns the server's connection string, or skips the test.
func dsn(t testing.TB) string {
	t.Helper()
	if server == nil {
		t.Skip(skipReason)
	}
	return server.DSN
}

// connect returns a connection for the test's own queries.
func connect(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

var tables atomic.Int64

// table returns a fresh table name for the test ("name" is an SQL
// fragment after CREATE TABLE <table>).
func table(t testing.TB, conn *pgx.Conn, columns string) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%s", tables.Add(1), strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_")))
	if len(name) > 40 {
		name = name[:40]
	}
	sqlExec(t, conn, "CREATE TABLE "+name+" "+columns)
	return name
}

func sqlExec(t testing.TB, conn *pgx.Conn, sql string, args ...any) int64 {
	t.Helper()
	tag, err := conn.Exec(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return tag.RowsAffected()
}

// rows returns the rows of a query as lines of space-separated values.
func rows(t testing.TB, conn *pgx.Conn, sql string, args ...any) []string {
	t.Helper()
	r, err := conn.Query(context.Background(), sql, args...)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	var out []string
	for r.Next() {
		vals, err := r.Values()
		if err != nil {
			t.Fatal(err)
		}
		s := make([]string, len(vals))
		for i, v := range vals {
			s[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(s, " "))
	}
	if err := r.Err(); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return out
}

func wantRows(t testing.TB, conn *pgx.Conn, sql string, want ...string) {
	t.Helper()
	got := rows(t, conn, sql)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot  %q\nwant %q", sql, got, want)
	}
}

func wantErr(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}
