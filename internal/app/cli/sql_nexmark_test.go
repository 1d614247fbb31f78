package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/sql/nexmarksql"
)

// Flink's Nexmark query files run with `weir sql -f` as a user runs them:
// the DDL and the query file in one script, the variables by --define.
// q10 writes every bid as CSV into its filesystem sink's directory; q13
// joins with the side input file.
func TestSQLFileNexmarkQueries(t *testing.T) {
	dir := t.TempDir()
	var side strings.Builder
	for _, r := range nexmark.SideInput(nexmark.SideInputRows) {
		fmt.Fprintf(&side, "%d,%s\n", r.Key, r.Value)
	}
	sidePath := filepath.Join(dir, "side_input.txt")
	if err := os.WriteFile(sidePath, []byte(side.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"q10", "q13"} {
		job, err := nexmarksql.Job(q)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, q+".sql")
		if err := os.WriteFile(path, []byte(nexmarksql.DDL()+"\n"+job), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errText, code := run(t, "sql", "-f", path, "--define", "TPS=1000", "--define", "EVENTS_NUM=1000",
			"--define", "NEXMARK_TABLE=datagen", "--define", "NEXMARK_DIR="+dir, "--define", "SIDE_INPUT="+sidePath, "--define", "SUBMIT_TIME=1")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s %s", q, code, out, errText)
		}
	}
	// 1000 events hold 920 bids (46 in every 50)
	var lines int
	err := filepath.WalkDir(filepath.Join(dir, "data/output/1/bid"), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines += strings.Count(string(b), "\n")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if lines != 920 {
		t.Fatalf("q10 wrote %d rows, want 920 (the bids)", lines)
	}
}

// weir bench nexmark --sql runs a query file's setup too: q13's SQL reads
// the side input written for the run (before, its side table had no file).
func TestBenchNexmarkSQLSideInput(t *testing.T) {
	out, errText, code := run(t, "bench", "nexmark", "--sql", "--json", "--queries", "q13", "--events", "2000",
		"--parallelism", "1", "--latency-duration", "0", "--checkpoint-interval", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errText)
	}
	if !strings.Contains(out, `"query":"q13","plan":"sql"`) || !strings.Contains(out, `"rows":1840`) {
		t.Fatalf("no q13 SQL line with its 1840 rows (one per bid):\n%s", out)
	}
}

// Without a latency run (--latency-duration 0) the table's latency
// columns say "-", not a p99 of 0.0 that was never measured (issue 38).
func TestBenchNexmarkNoLatencyRun(t *testing.T) {
	out, errText, code := run(t, "bench", "nexmark", "--queries", "q1", "--events", "2000",
		"--parallelism", "1", "--latency-duration", "0", "--checkpoint-interval", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errText)
	}
	if !strings.Contains(out, "\n      runs: throughput 2000 events in ") || strings.Contains(out, "; latency") {
		t.Fatalf("the runs line: want the throughput run alone:\n%s", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "q1" {
			if n := len(f); n < 3 || f[n-1] != "-" || f[n-2] != "-" || f[n-4] != "-" {
				t.Fatalf("q1's line %q: want '-' for p99, latency rows and end p99", l)
			}
			return
		}
	}
	t.Fatalf("no q1 line:\n%s", out)
}

// The runs line says what each run processed, and that a latency run
// which fell behind its schedule measured a queue.
func TestBenchRunsLine(t *testing.T) {
	res := nexmarkBenchResult{Events: 2_000_000, Seconds: 0.25, PacingEvents: 5_000_000, PacingSeconds: 0.5,
		LatencyEvents: 95_000_000, LatencyRate: 9_500_000, LatencySeconds: 10, LatencyRunSeconds: 10.2}
	want := "runs: throughput 2000000 events in 0.2 s; pacing 5000000 events in 0.5 s; latency 95000000 events at 9500 K/s in 10.2 s (schedule 10.0 s)"
	if got := benchRunsLine(res); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	res.LatencyRunSeconds = 21
	if got := benchRunsLine(res); !strings.HasSuffix(got, "(schedule 10.0 s): 11.0 s behind, the job did not keep up with the paced rate and its p99 is mostly that queue (try a lower --latency-fraction)") {
		t.Fatalf("behind: %q", got)
	}
}
