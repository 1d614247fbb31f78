package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
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
	out, stderr, code := run(t, "demo", "adclicks", "--events", "300000", "--ads", "4", "--parallelism", "1", "--seed", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	golden(t, "demo-adclicks.golden", out)
}

// The same seed gives the same results at any parallelism (as a multiset:
// lines of different subtasks may interleave differently).
func TestDemoSameResultsAtAnyParallelism(t *testing.T) {
	lines := func(p string) []string {
		out, stderr, code := run(t, "demo", "adclicks", "--events", "200000", "--parallelism", p, "--seed", "3")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
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
	for _, delay := range []string{"5000", "1000"} {
		out, stderr, code := run(t, "bench", "adclicks", "--events", "200000", "--runs", "1", "--delay", delay, "--json")
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
	}
}

func TestUnknownCommandFails(t *testing.T) {
	if _, _, code := run(t, "demo", "nosuch"); code == 0 {
		t.Fatal("unknown subcommand must fail")
	}
	if _, _, code := run(t, "bench", "adclicks", "--runs", "0"); code == 0 {
		t.Fatal("--runs 0 must fail")
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
