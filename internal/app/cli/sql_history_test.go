package cli

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql"
)

// fakeLines feeds lines to the shell loop as a terminal would, an entry
// "^C" standing for Ctrl-C, and records the history.
type fakeLines struct {
	lines   []string
	history []string
}

func (f *fakeLines) ReadLine(string) (string, error) {
	if len(f.lines) == 0 {
		return "", io.EOF
	}
	l := f.lines[0]
	f.lines = f.lines[1:]
	if l == "^C" {
		return "", errLineAborted
	}
	return l, nil
}
func (f *fakeLines) AddHistory(s string) { f.history = append(f.history, s) }
func (f *fakeLines) Close() error        { return nil }

// Each complete statement goes to the history once, a multi-line one
// whole; Ctrl-C drops the statement being typed.
func TestShellHistory(t *testing.T) {
	f := &fakeLines{lines: []string{"SHOW", "  TABLES;", "SELECT 1 +", "^C", "SELECT 2", ";", "quit;"}}
	var out, errb strings.Builder
	if err := shellLoop(context.Background(), f, &out, &errb, []sql.Option{sql.Stdout(&out)}, nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"SHOW\n  TABLES;\n", "SELECT 2\n;\n", "quit;\n"}
	if !slices.Equal(f.history, want) {
		t.Fatalf("history %q, want %q", f.history, want)
	}
	if !strings.Contains(out.String(), "+I[2]") || strings.Contains(out.String(), "+I[1]") {
		t.Fatalf("output %q: want SELECT 2 run and the aborted SELECT 1 not", out.String())
	}
}

// The history lives in a file under the user's config directory: a new
// shell starts with the statements of the earlier ones, one line each.
func TestShellHistoryFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("HOME", dir)
	path := sqlHistoryFile()
	if !strings.HasPrefix(path, dir) {
		t.Fatalf("history file %s is not under the config dir %s", path, dir)
	}
	var errb strings.Builder
	r := newHistoryReader(path, &errb)
	r.AddHistory("SELECT a,\n  b FROM t;\n")
	r.AddHistory("SHOW TABLES;\n")
	r.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != "SELECT a, b FROM t;\nSHOW TABLES;\n" {
		t.Fatalf("history file %q", got)
	}
	r2 := newHistoryReader(path, &errb)
	r2.AddHistory("DESCRIBE t;")
	var b strings.Builder
	r2.st.WriteHistory(&b)
	r2.Close()
	if got := b.String(); got != "SELECT a, b FROM t;\nSHOW TABLES;\nDESCRIBE t;\n" {
		t.Fatalf("a second session's history %q", got)
	}
	if fi, err := os.Stat(filepath.Dir(path)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("history directory: %v %v", fi, err)
	}
	if errb.Len() > 0 {
		t.Fatalf("warnings: %s", errb.String())
	}
}

// The shell answers as Flink's sql-client does: HELP; lists the commands,
// a statement without a result says it succeeded, SET says the property is
// set, and an empty SHOW TABLES says "Empty set" (issue 38: the shell
// printed nothing for any of them).
func TestShellManners(t *testing.T) {
	f := &fakeLines{lines: []string{"help;", "SHOW TABLES;", "CREATE TABLE t (a INT) WITH ('connector' = 'datagen');",
		"SHOW TABLES;", "SET 'parallelism.default' = '2';", "RESET 'parallelism.default';", "DROP TABLE t;", "SELECT 1 +;"}}
	var out, errb strings.Builder
	if err := shellLoop(context.Background(), f, &out, &errb, nil, nil); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	help, rest, _ := strings.Cut(got, "(multi-line statements work).")
	if !strings.HasPrefix(help, "The following commands are available:") || !strings.Contains(help, "SELECT\t") {
		t.Fatalf("HELP printed %q", help)
	}
	want := "\nEmpty set\n[INFO] Execute statement succeed.\nt\n[INFO] Session property has been set.\n" +
		"[INFO] Session property has been reset.\n[INFO] Execute statement succeed.\n"
	if rest != want {
		t.Fatalf("after HELP the shell printed\n%q\nwant\n%q", rest, want)
	}
	if !strings.Contains(errb.String(), "[ERROR]") {
		t.Fatalf("the bad statement: stderr %q", errb.String())
	}
}

// Catalog statements answer as Flink's sql-client does: DDL and USE that
// they succeeded, SHOW its names, an empty SHOW "Empty set".
func TestShellCatalogs(t *testing.T) {
	f := &fakeLines{lines: []string{"CREATE CATALOG c WITH ('type' = 'generic_in_memory');", "USE CATALOG c;",
		"SHOW CURRENT CATALOG;", "CREATE DATABASE db;", "USE c.db;", "SHOW DATABASES;", "SHOW TABLES;",
		"SHOW USER FUNCTIONS;", "DROP DATABASE c.`default`;"}}
	var out, errb strings.Builder
	if err := shellLoop(context.Background(), f, &out, &errb, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := "[INFO] Execute statement succeed.\n[INFO] Execute statement succeed.\nc\n" +
		"[INFO] Execute statement succeed.\n[INFO] Execute statement succeed.\ndb\ndefault\nEmpty set\nEmpty set\n" +
		"[INFO] Execute statement succeed.\n"
	if got := out.String(); got != want || errb.Len() > 0 {
		t.Fatalf("the shell printed\n%q\nwant\n%q\nstderr %q", got, want, errb.String())
	}
}

// SET 'sql-client.execution.result-mode' = 'tableau' prints a query's
// changes as Flink's sql-client does in its tableau mode; 'changelog'
// prints them as "+I[...]"; a mode that is none of Flink's is an error.
func TestShellResultModes(t *testing.T) {
	f := &fakeLines{lines: []string{
		"SET 'sql-client.execution.result-mode' = 'tableau';",
		"SELECT name, COUNT(*) AS cnt FROM (VALUES ('Bob'), ('Alice'), ('Bob'), (CAST(NULL AS STRING))) AS t(name) GROUP BY name;",
		"SELECT * FROM (VALUES (1)) AS t(a) WHERE a > 1;",
		"SELECT 'a string longer than thirty characters' AS s, TIMESTAMP '2024-01-01 12:00:00.123' AS ts, TRUE AS b;",
		"SET 'sql-client.execution.result-mode' = 'CHANGELOG';",
		"SELECT 1 AS one;",
		"SET 'sql-client.execution.result-mode' = 'pretty';",
		"SELECT 1 AS one;",
	}}
	var out, errb strings.Builder
	if err := shellLoop(context.Background(), f, &out, &errb, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := `[INFO] Session property has been set.
+----+--------------------------------+----------------------+
| op |                           name |                  cnt |
+----+--------------------------------+----------------------+
| +I |                            Bob |                    1 |
| +I |                          Alice |                    1 |
| -U |                            Bob |                    1 |
| +U |                            Bob |                    2 |
| +I |                         <NULL> |                    1 |
+----+--------------------------------+----------------------+
Received a total of 5 rows
+----+-------------+
| op |           a |
+----+-------------+
+----+-------------+
Received a total of 0 row
+----+--------------------------------+-------------------------+--------+
| op |                              s |                      ts |      b |
+----+--------------------------------+-------------------------+--------+
| +I | a string longer than thirty... | 2024-01-01 12:00:00.123 |   TRUE |
+----+--------------------------------+-------------------------+--------+
Received a total of 1 row
[INFO] Session property has been set.
+I[1]
[INFO] Session property has been set.
`
	if out.String() != want {
		t.Fatalf("the shell printed\n%s\nwant\n%s\nstderr: %s", out.String(), want, errb.String())
	}
	if !strings.Contains(errb.String(), "[ERROR] 'sql-client.execution.result-mode' = 'pretty': want 'table', 'changelog' or 'tableau'") {
		t.Fatalf("a bad mode: stderr %q", errb.String())
	}
}
