package cli

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/types"
)

// writeSQLFixture writes a JSON-lines input and returns the directory.
func writeSQLFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	input := `{"auction": 1, "price": 10, "ts": "2024-01-01 00:00:01"}
{"auction": 2, "price": 20, "ts": "2024-01-01 00:00:04"}
{"auction": 1, "price": 30, "ts": "2024-01-01 00:00:06"}
{"auction": 1, "price": 5, "ts": "2024-01-01 00:00:12"}
`
	if err := os.WriteFile(filepath.Join(dir, "bids.json"), []byte(input), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readParts(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return lines
}

// TestSQLFile runs `weir sql -f` over a JSON-lines file: a window
// aggregation written to a directory of part files and a SELECT printed
// as a changelog, in one job; ${VAR} comes from --define.
func TestSQLFile(t *testing.T) {
	dir := writeSQLFixture(t)
	script := `
CREATE TABLE bids (auction BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)
WITH ('connector' = 'filesystem', 'path' = '${DIR}/bids.json', 'format' = 'json');
CREATE TABLE out (auction BIGINT, n BIGINT, total BIGINT, wstart TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/out', 'format' = 'json');
INSERT INTO out
SELECT auction, COUNT(*), SUM(price), window_start
FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;
SELECT auction, MAX(price) FROM bids GROUP BY auction;
`
	path := filepath.Join(dir, "job.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := run(t, "sql", "-f", path, "--define", "DIR="+dir, "--parallelism", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got := readParts(t, filepath.Join(dir, "out"))
	want := []string{
		`{"auction":1,"n":1,"total":5,"wstart":"2024-01-01 00:00:10"}`,
		`{"auction":1,"n":2,"total":40,"wstart":"2024-01-01 00:00:00"}`,
		`{"auction":2,"n":1,"total":20,"wstart":"2024-01-01 00:00:00"}`,
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("out:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// the printed changelog: +I for each new group, -U/+U when auction 1's
	// maximum rises from 10 to 30
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	sort.Strings(lines)
	wantPrint := []string{"+I[1, 10]", "+I[2, 20]", "+U[1, 30]", "-U[1, 10]"}
	if strings.Join(lines, "\n") != strings.Join(wantPrint, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, strings.Join(wantPrint, "\n"))
	}
}

// TestSQLFileErrors: planning errors name the file, line and column, and
// an insert-only sink refuses an updating query, naming the operator.
func TestSQLFileErrors(t *testing.T) {
	dir := writeSQLFixture(t)
	cases := []struct{ script, want string }{
		{`CREATE TABLE bids (auction BIGINT, price BIGINT, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/bids.json', 'format' = 'json');
CREATE TABLE out (auction BIGINT, n BIGINT) WITH ('connector' = 'filesystem', 'path' = '${DIR}/o', 'format' = 'json');
INSERT INTO out SELECT auction, COUNT(*) FROM bids GROUP BY auction;`,
			"line 4, column 1: table sink 'out' doesn't support consuming update changes which is produced by node GroupAggregate(groupBy=[auction], select=[COUNT(*)])"},
		{"SELECT 1 FROM\n  WHERE", "line 2, column 3: expected a table name"},
		{"SELECT ${NOPE}", "line 1, column 8: undefined variable ${NOPE}"},
	}
	for _, c := range cases {
		path := filepath.Join(dir, "bad.sql")
		if err := os.WriteFile(path, []byte(c.script), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := run(t, "sql", "-f", path, "--define", "DIR="+dir)
		if code == 0 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "bad.sql") {
			t.Errorf("exit %d, stderr %q; want an error containing %q and the file name", code, stderr, c.want)
		}
	}
}

// TestSQLLogLevel: `weir sql --log-level` sets the least level of the
// job's log on stderr (warnings by default, so a clean run prints no log
// line); a level slog does not know is an error naming the flag.
func TestSQLLogLevel(t *testing.T) {
	dir := writeSQLFixture(t)
	path := filepath.Join(dir, "job.sql")
	script := `CREATE TABLE bids (auction BIGINT, price BIGINT, ts TIMESTAMP(3))
WITH ('connector' = 'filesystem', 'path' = '${DIR}/bids.json', 'format' = 'json');
SELECT auction FROM bids WHERE price > 25;`
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		log  bool
	}{{nil, false}, {[]string{"--log-level", "info"}, true}, {[]string{"--log-level", "WARN"}, false}} {
		stdout, stderr, code := run(t, append([]string{"sql", "-f", path, "--define", "DIR=" + dir}, c.args...)...)
		if code != 0 || strings.TrimSpace(stdout) != "+I[1]" {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", c.args, code, stdout, stderr)
		}
		if got := strings.Contains(stderr, `level=INFO msg="job starting"`); got != c.log {
			t.Errorf("%v: the job's start logged: %v, want %v; stderr %q", c.args, got, c.log, stderr)
		}
	}
	_, stderr, code := run(t, "sql", "-f", path, "--define", "DIR="+dir, "--log-level", "loud")
	if code == 0 || !strings.Contains(stderr, "--log-level") || !strings.Contains(stderr, "loud") {
		t.Errorf("--log-level loud: exit %d, stderr %q; want an error naming the flag and the level", code, stderr)
	}
}

// TestSQLShell feeds statements to the shell: multi-line input, SHOW
// TABLES, DESCRIBE and a SELECT printed as a changelog.
func TestSQLShell(t *testing.T) {
	dir := writeSQLFixture(t)
	in := "CREATE TABLE bids (auction BIGINT, price BIGINT, ts TIMESTAMP(3))\n" +
		"WITH ('connector' = 'filesystem', 'path' = '" + dir + "/bids.json', 'format' = 'json');\n" +
		"SHOW TABLES;\nDESCRIBE bids;\nSELECT auction,\n  price * 2 FROM bids WHERE price > 10;\nEXPLAIN SELECT auction, COUNT(*) FROM bids GROUP BY auction;\n"
	var out, errb strings.Builder
	r := NewRoot(&out, &errb)
	r.SetIn(strings.NewReader(in))
	r.SetArgs([]string{"sql"})
	if err := r.Execute(); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	got := out.String()
	for _, want := range []string{"bids\n", "auction", "BIGINT", "+I[2, 40]", "+I[1, 60]",
		"GroupAggregate(groupBy=[auction], select=[COUNT(*)]), changelogMode=[I,UB,UA,D]"} {
		if !strings.Contains(got, want) {
			t.Errorf("shell output lacks %q:\n%s\nstderr: %s", want, got, errb.String())
		}
	}
}

// TestLiveTable: the shell's terminal view applies the changelog in place.
func TestLiveTable(t *testing.T) {
	schema := types.Schema{{Name: "k", Type: types.StringType}, {Name: "n", Type: types.BigIntType}}
	lt := newLiveTable(schema)
	row := func(kind types.RowKind, k string, n int64) types.Row {
		return types.Row{Kind: kind, Values: []types.Value{types.StringValue(k), types.IntValue(n)}}
	}
	lt.apply([]types.Row{row(types.Insert, "a", 1), row(types.Insert, "b", 1),
		row(types.UpdateBefore, "a", 1), row(types.UpdateAfter, "a", 2), row(types.Delete, "b", 1)})
	var b strings.Builder
	lt.render(&b, 10)
	want := "k | n\n--+--\na | 2\n1 rows (1 shown), 5 changes\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestSQLFileUnboundedStopsOnSignal: a job over an unbounded source runs
// until the command's context ends (SIGINT/SIGTERM in Main), then stops
// cleanly with exit code 0.
func TestSQLFileUnboundedStopsOnSignal(t *testing.T) {
	dir := t.TempDir()
	script := `CREATE TABLE gen (event_type INT, bid ROW<auction BIGINT, price BIGINT>)
WITH ('connector' = 'nexmark', 'first-event.rate' = '2000', 'next-event.rate' = '2000', 'rate.limited' = 'true');
SELECT bid.auction, bid.price FROM gen WHERE event_type = 2;`
	path := filepath.Join(dir, "unbounded.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &syncBuffer{}
	var errb strings.Builder
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"sql", "-f", path}, out, &errb) }()
	weirtest.WaitFor(t, "printed rows", time.Minute, func() bool { return strings.Count(out.String(), "+I[") >= 10 })
	cancel() // what SIGINT does to Main's context
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d after the signal: %s", code, errb.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("the job did not stop after the signal")
	}
}
