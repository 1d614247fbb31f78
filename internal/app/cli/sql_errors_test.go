package cli

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Errors of `weir sql -f` say "weir:" once and name the place: a missing
// input file at the line and column where the table is used, when the
// statement is planned; a malformed record at its file, line and offset,
// when the job runs (issue 38: "weir: weir: source ...: stat ...").
func TestSQLErrorsNameThePlace(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "views.jsonl")
	if err := os.WriteFile(data, []byte("{\"id\": 1}\n{\"id\": \"x\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	runText := func(text string) string {
		f := filepath.Join(dir, "job.sql")
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		if code := Run(context.Background(), []string{"sql", "-f", f}, &out, &errOut); code != 1 {
			t.Fatalf("exit %d, want 1; stderr %q", code, errOut.String())
		}
		return errOut.String()
	}
	run := func(path string) string {
		return runText("CREATE TABLE pageviews (id INT) WITH ('connector' = 'filesystem', 'path' = '" + path + "', 'format' = 'json');\n" +
			"SELECT * FROM pageviews;\n")
	}
	missing := filepath.Join(dir, "nope.jsonl")
	if got, want := run(missing), "weir: "+filepath.Join(dir, "job.sql")+": line 2, column 15: table 'pageviews': its 'path' "+missing+" does not exist\n"; got != want {
		t.Errorf("missing file:\n%q\nwant\n%q", got, want)
	}
	got := run(data)
	if strings.Count(got, "weir:") != 1 || !strings.HasPrefix(got, "weir: ") || !strings.Contains(got, "views.jsonl:2 (byte offset 10)") {
		t.Errorf("malformed record: %q; want one 'weir:' and the record's place", got)
	}
	// A wrong option is reported at its place in the WITH clause, naming
	// where the table is used (issue 38: at the use alone).
	job := filepath.Join(dir, "job.sql") + ": "
	for text, want := range map[string]string{
		"CREATE TABLE t (a INT)\n  WITH ('connector' = 'datagen', 'rows-per-secnd' = '5');\nSELECT * FROM t;\n": job +
			"line 2, column 34: table 't' (connector 'datagen'): unsupported options found for 'datagen': 'rows-per-secnd' (supported options: ",
		"CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'path' = '" + data + "', 'format' = 'jsn');\nSELECT a FROM t;\n": job +
			"line 1, column " + strconv.Itoa(len("CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'path' = '"+data+"', ")+1) +
			": table 't' (connector 'filesystem'): option 'format' = 'jsn': no such format (available: ",
		"CREATE TABLE t (a INT) WITH ('connector' = 'filesystem', 'format' = 'json');\nSELECT a FROM t;\n": job +
			"line 1, column 1: table 't' (connector 'filesystem'): missing required option 'path' (the table is used at line 2, column 15)",
	} {
		if got := runText(text); !strings.HasPrefix(got, "weir: "+want) || !strings.Contains(got, "(the table is used at line ") {
			t.Errorf("%s:\ngot  %q\nwant %q", text, got, want)
		}
	}
}
