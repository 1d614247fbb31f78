package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/weirstream/weir/internal/testing/pgtest"
)

func table(t *testing.T, conn *pgx.Conn, name string) string {
	t.Helper()
	rows, err := conn.Query(context.Background(), "SELECT account, balance, ops, refused FROM "+name+" ORDER BY account")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var a string
		var b, o, r int64
		if err := rows.Scan(&a, &b, &o, &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, strings.Join([]string{a, itoa(b), itoa(o), itoa(r)}, " "))
	}
	return strings.Join(out, "; ")
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// The example against a real PostgreSQL: the log folded into the read
// model (bob's overdraft compensated, carol's closed account gone), the
// same from a file of JSON lines, a second replay from offset 0 leaving
// the table as it was, and a rebuild with new code into a new table.
func TestBank(t *testing.T) {
	s, err := pgtest.Start(context.Background(), 2*time.Minute)
	if errors.Is(err, pgtest.ErrNotFound) && os.Getenv("WEIR_REQUIRE_POSTGRES") != "1" {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	logDir := t.TempDir()
	c := Config{DSN: s.DSN, LogDir: logDir, Model: "v1", Table: "accounts"}
	const v1 = "alice 180 0 0; bob 250 0 0"
	if err := run(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := table(t, conn, "accounts"); got != v1 {
		t.Fatalf("v1 read model: %s, want %s", got, v1)
	}
	// Replayed from offset 0 again: every write is skipped (positions).
	if err := run(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := table(t, conn, "accounts"); got != v1 {
		t.Fatalf("after a replay: %s, want %s", got, v1)
	}
	// From a file of JSON lines.
	path := filepath.Join(t.TempDir(), "events.jsonl")
	var lines []string
	for _, e := range History() {
		b, _ := json.Marshal(e)
		lines = append(lines, string(b))
	}
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	if err := run(ctx, Config{DSN: s.DSN, Events: path, Model: "v1", Table: "accounts_file"}); err != nil {
		t.Fatal(err)
	}
	if got := table(t, conn, "accounts_file"); got != v1 {
		t.Fatalf("from a file: %s, want %s", got, v1)
	}
	// The rebuild: new code over the whole log, into a new table; the old
	// one is untouched.
	if err := run(ctx, Config{DSN: s.DSN, LogDir: logDir, Model: "v2", Table: "accounts_v2"}); err != nil {
		t.Fatal(err)
	}
	if got, want := table(t, conn, "accounts_v2"), "alice 180 3 0; bob 250 5 1"; got != want {
		t.Fatalf("v2 read model: %s, want %s", got, want)
	}
	if got := table(t, conn, "accounts"); got != v1 {
		t.Fatalf("the rebuild changed the old read model: %s", got)
	}
}
