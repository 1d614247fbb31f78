package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite golden files in testdata/")

func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), code
}

// golden compares got with testdata/name, after masking figures that vary
// from run to run (rates, elapsed times).
func golden(t *testing.T, name, got string) {
	t.Helper()
	got = regexp.MustCompile(`throughput .*`).ReplaceAllString(got, "throughput <masked>")
	path := filepath.Join("testdata", name)
	if *rewrite {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -rewrite to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("output differs from %s (run with -rewrite and review the diff):\n%s", path, got)
	}
}

func TestDemoAdclicksGolden(t *testing.T) {
	out, stderr, code := run(t, "demo", "adclicks", "--data-dir", t.TempDir(), "--events", "300000", "--ads", "4", "--parallelism", "1", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "demo-adclicks.golden", out)
	// Without --windows the output is short: the top windows, the
	// true-up and the summary, which ends it.
	if strings.Contains(out, "\nwindow ") || !strings.HasPrefix(out, "counting 300000 clicks") || !strings.Contains(out, "\ntop windows: ") {
		t.Fatalf("the default output prints every window or lacks its head:\n%s", out)
	}
	// The in-memory generator gives the same results, without the log.
	gen, stderr, code := run(t, "demo", "adclicks", "--source", "generator", "--data-dir", t.TempDir(), "--events", "300000", "--ads", "4", "--parallelism", "1", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	logLines := regexp.MustCompile(`(?m)^  (input|results) .*\n`)
	mask := regexp.MustCompile(`throughput .*`)
	if a, b := mask.ReplaceAllString(logLines.ReplaceAllString(out, ""), ""), mask.ReplaceAllString(gen, ""); a != b {
		t.Fatalf("--source generator differs from the log path:\n%s\nvs\n%s", b, a)
	}
	if strings.Contains(gen, "topic clicks") {
		t.Fatal("--source generator mentions the log")
	}
}

// A second run on the same data directory finds the clicks in the topic
// and writes none; a run with another seed starts the topic again; the
// results topic holds one run's results.
func TestDemoLogTopicsAcrossRuns(t *testing.T) {
	dir := t.TempDir()
	demo := func(extra ...string) string {
		t.Helper()
		out, stderr, code := run(t, append([]string{"demo", "adclicks", "--data-dir", dir, "--events", "60000", "--ads", "3", "--quiet"}, extra...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		return regexp.MustCompile(`throughput .*`).ReplaceAllString(out, "")
	}
	first := demo()
	if !strings.Contains(first, "60000 clicks read (60000 written by the producer in this run)") {
		t.Fatalf("first run:\n%s", first)
	}
	second := demo()
	if !strings.Contains(second, "(0 written by the producer in this run)") {
		t.Fatalf("second run wrote clicks again:\n%s", second)
	}
	if strings.ReplaceAll(second, "(0 written", "(60000 written") != first {
		t.Fatalf("second run differs:\n%s\nvs\n%s", second, first)
	}
	longer := demo("--events", "90000")
	if !strings.Contains(longer, "90000 clicks read (30000 written by the producer in this run)") {
		t.Fatalf("a longer stream resumes where the topic ends:\n%s", longer)
	}
	other := demo("--seed", "9")
	if !strings.Contains(other, "60000 clicks read (60000 written by the producer in this run)") {
		t.Fatalf("another seed must start the topic again:\n%s", other)
	}
	m := regexp.MustCompile(`results        topic click-counts: (\d+) records`).FindStringSubmatch(first)
	if m == nil || m[1] == "0" || !strings.Contains(second, m[0]) {
		t.Fatalf("results topic: first run %q, second run:\n%s", m, second)
	}
}

// The same seed gives the same results at any parallelism (as a multiset:
// lines of different subtasks may interleave differently).
func TestDemoSameResultsAtAnyParallelism(t *testing.T) {
	lines := func(p string) []string {
		out, stderr, code := run(t, "demo", "adclicks", "--data-dir", t.TempDir(), "--events", "200000", "--parallelism", p, "--seed", "3", "--windows")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		// --windows prints every per-ad result as it fires.
		if n := len(regexp.MustCompile(`(?m)^window `).FindAllString(out, -1)); n < 100 {
			t.Fatalf("--windows printed %d results:\n%s", n, out)
		}
		ls := strings.Split(regexp.MustCompile(`throughput .*`).ReplaceAllString(out, ""), "\n")
		return sortedCopy(ls)
	}
	a, b := lines("1"), lines("3")
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatal("results differ between parallelism 1 and 3")
	}
}

func TestBenchAdclicksJSON(t *testing.T) {
	for _, args := range [][]string{{"--delay", "5000"}, {"--delay", "1000"}, {"--delay", "5000", "--splits", "3"}} {
		delay := args[1]
		out, stderr, code := run(t, append([]string{"bench", "adclicks", "--events", "200000", "--runs", "1", "--json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s\n%s", code, stderr, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var res map[string]any
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("last line is not JSON: %v\n%s", err, out)
		}
		for _, k := range []string{"events_per_sec", "baseline_events_per_sec", "ratio", "checksum", "baseline_checksum"} {
			if _, ok := res[k]; !ok {
				t.Errorf("JSON lacks %q: %s", k, lines[len(lines)-1])
			}
		}
		if res["checksum"] != res["baseline_checksum"] || len(res["checksum"].(string)) != 16 {
			t.Errorf("checksums %v and %v", res["checksum"], res["baseline_checksum"])
		}
		if delay == "1000" && res["dropped"].(float64) == 0 {
			t.Errorf("delay 1000 must drop events")
		}
		// Default splits: one per subtask (parallelism 2) without late
		// events, one with them; --splits as given.
		wantSplits := map[string]float64{"5000": 2, "1000": 1}[delay]
		if len(args) > 2 {
			wantSplits = 3
		}
		if res["splits"] != wantSplits {
			t.Errorf("%v: splits %v, want %v", args, res["splits"], wantSplits)
		}
	}
}

func TestUnknownCommandFails(t *testing.T) {
	if _, _, code := run(t, "demo", "nosuch"); code == 0 {
		t.Fatal("unknown subcommand must fail")
	}
	if _, _, code := run(t, "bench", "adclicks", "--runs", "0"); code == 0 {
		t.Fatal("--runs 0 must fail")
	}
	if _, stderr, code := run(t, "bench", "adclicks", "--splits", "2", "--delay", "1000", "--events", "1000"); code == 0 || !strings.Contains(stderr, "--splits 2 needs --delay") {
		t.Fatalf("--splits 2 with --delay 1000 must fail with a clear error, got exit %d: %s", code, stderr)
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return c
}

// The three late policies on the same seed: drop and side-output lose the
// same clicks (side-output shows each), correct with enough allowed
// lateness loses none and its true-up shows no difference.
func TestDemoLatePolicies(t *testing.T) {
	args := []string{"demo", "adclicks", "--data-dir", t.TempDir(), "--events", "100000", "--seed", "5", "--quiet"}
	cost := func(out string) string {
		m := regexp.MustCompile(`watermark cost (\d+) clicks`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no watermark cost in:\n%s", out)
		}
		return m[1]
	}
	drop, stderr, code := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	side, stderr, code := run(t, "demo", "adclicks", "--data-dir", t.TempDir(), "--events", "100000", "--seed", "5", "--late-policy", "side-output")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	corr, stderr, code := run(t, "demo", "adclicks", "--data-dir", t.TempDir(), "--events", "100000", "--seed", "5", "--quiet", "--late-policy", "correct", "--allowed-lateness", "30m")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if cost(drop) == "0" || cost(drop) != cost(side) {
		t.Fatalf("drop costs %s clicks, side-output %s", cost(drop), cost(side))
	}
	if n := len(regexp.MustCompile(`(?m)^late click `).FindAllString(side, -1)); strconv.Itoa(n) != cost(side) {
		t.Fatalf("side-output printed %d late clicks, cost %s", n, cost(side))
	}
	if cost(corr) != "0" || !strings.Contains(corr, "corrections in this run") {
		t.Fatalf("correct with 30m lateness lost %s clicks", cost(corr))
	}
	if _, _, code := run(t, "demo", "adclicks", "--data-dir", t.TempDir(), "--late-policy", "bogus"); code == 0 {
		t.Fatal("an unknown late policy must fail")
	}
}

func TestCheckpointsListAndInspect(t *testing.T) {
	dir := t.TempDir()
	ck, out := filepath.Join(dir, "ck"), filepath.Join(dir, "out")
	if _, stderr, code := run(t, "demo", "adclicks", "--data-dir", t.TempDir(), "--events", "50000", "--quiet", "--checkpoint-dir", ck, "--checkpoint-interval", "5ms", "--output", out); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	list, stderr, code := run(t, "checkpoints", "list", ck)
	if code != 0 {
		t.Fatalf("list: %s", stderr)
	}
	rows := strings.Split(strings.TrimSpace(list), "\n")
	if len(rows) < 2 || !strings.HasPrefix(rows[0], "ID") || !strings.Contains(rows[1], " ok ") {
		t.Fatalf("list output:\n%s", list)
	}
	path := strings.Fields(rows[len(rows)-1])
	insp, stderr, code := run(t, "checkpoints", "inspect", path[len(path)-1])
	if code != 0 {
		t.Fatalf("inspect: %s", stderr)
	}
	for _, want := range []string{"verify          ok", `operator "clicks"`, "source positions: split partition-0 at end", `operator "count-per-minute"`, "key groups [0, 64)"} {
		if !strings.Contains(insp, want) {
			t.Errorf("inspect lacks %q:\n%s", want, insp)
		}
	}
	// The sink's staged output shows in the checkpoints that had any (the
	// final one may have nothing new).
	withCommits := 0
	for _, row := range rows[1:] {
		f := strings.Fields(row)
		out, _, _ := run(t, "checkpoints", "inspect", f[len(f)-1])
		if strings.Contains(out, "committables") {
			withCommits++
		}
	}
	if withCommits == 0 {
		t.Errorf("no retained checkpoint lists the sink's committables:\n%s", list)
	}
	if _, _, code := run(t, "savepoint", "--checkpoint-dir", ck, filepath.Join(dir, "sp")); code == 0 {
		t.Fatal("savepoint of a job that is not running must fail")
	}
	files, _ := filepath.Glob(filepath.Join(out, "part-*"))
	if len(files) == 0 {
		t.Fatal("--output committed no part file")
	}
}

func TestBenchLogJSON(t *testing.T) {
	out, stderr, code := run(t, "bench", "log", "--records", "20000", "--batch", "500", "--json", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("want one JSON line per mode:\n%s", out)
	}
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r["append_records_per_sec"].(float64) <= 0 || r["read_records_per_sec"].(float64) <= 0 {
			t.Fatalf("no rates: %s", l)
		}
	}
}
