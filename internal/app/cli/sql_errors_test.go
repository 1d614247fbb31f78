package cli

import (
	"context"
	"os"
	"path/filepath"
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
	run := func(path string) string {
		f := filepath.Join(dir, "job.sql")
		text := "CREATE TABLE pageviews (id INT) WITH ('connector' = 'filesystem', 'path' = '" + path + "', 'format' = 'json');\n" +
			"SELECT * FROM pageviews;\n"
		if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var out, errOut strings.Builder
		if code := Run(context.Background(), []string{"sql", "-f", f}, &out, &errOut); code != 1 {
			t.Fatalf("exit %d, want 1; stderr %q", code, errOut.String())
		}
		return errOut.String()
	}
	missing := filepath.Join(dir, "nope.jsonl")
	if got, want := run(missing), "weir: "+filepath.Join(dir, "job.sql")+": line 2, column 15: table 'pageviews': its 'path' "+missing+" does not exist\n"; got != want {
		t.Errorf("missing file:\n%q\nwant\n%q", got, want)
	}
	got := run(data)
	if strings.Count(got, "weir:") != 1 || !strings.HasPrefix(got, "weir: ") || !strings.Contains(got, "views.jsonl:2 (byte offset 10)") {
		t.Errorf("malformed record: %q; want one 'weir:' and the record's place", got)
	}
}
