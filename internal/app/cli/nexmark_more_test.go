package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/nexmark/batchref"
)

// run --output of q12, q13, q15, q16, q18 and q19 over a file writes
// batchref's rows (q12: its per-bidder totals; the updating ones: their
// upsert view); q13 with --side-input joins the file's rows instead of the
// generated ones.
func TestNexmarkRunMoreQueries(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.json")
	if _, stderr, code := run(t, "nexmark", "gen", "--output", events, "--events", "8000", "--event-rate", "1000", "--seed", "5"); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	canon := func(lines []string) []string {
		out := make([]string, 0, len(lines))
		for _, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("%v: %q", err, l)
			}
			b, _ := json.Marshal(m)
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	runQuery := func(q string, extra ...string) []string {
		t.Helper()
		path := filepath.Join(dir, q+".json")
		args := append([]string{"nexmark", "run", "--query", q, "--parallelism", "2", "--input", events, "--output", path}, extra...)
		if _, stderr, code := run(t, args...); code != 0 {
			t.Fatalf("%s: %s", q, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"q12", "q13", "q15", "q16", "q18", "q19"}
	want, err := batchref.EvaluateAll(names, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range names {
		got := runQuery(q)
		if q == "q12" {
			sum := map[float64]float64{}
			for _, r := range got {
				var m map[string]float64
				if err := json.Unmarshal([]byte(r), &m); err != nil {
					t.Fatalf("q12: %v: %s", err, r)
				}
				sum[m["bidder"]] += m["bid_count"]
			}
			got = got[:0]
			for b, n := range sum {
				got = append(got, fmt.Sprintf(`{"bidder":%.0f,"bid_count":%.0f}`, b, n))
			}
		}
		if len(want[q]) == 0 || !slices.Equal(canon(got), canon(want[q])) {
			t.Errorf("%s: %d rows, batchref %d, or different", q, len(got), len(want[q]))
		}
	}

	side := filepath.Join(dir, "side.csv")
	if err := os.WriteFile(side, []byte("1003,x\n20000,never\n1005,five\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var fromFile []string
	for _, r := range want["q13"] {
		r = strings.Replace(strings.Replace(r, `"value":"1003"`, `"value":"x"`, 1), `"value":"1005"`, `"value":"five"`, 1)
		if strings.HasSuffix(r, `"value":"x"}`) || strings.HasSuffix(r, `"value":"five"}`) {
			fromFile = append(fromFile, r)
		}
	}
	if got := runQuery("q13", "--side-input", side); len(fromFile) == 0 || !slices.Equal(canon(got), canon(fromFile)) {
		t.Errorf("q13 --side-input: %d rows, want %d", len(got), len(fromFile))
	}
	if _, stderr, code := run(t, "nexmark", "run", "--query", "q0", "--side-input", side); code == 0 || !strings.Contains(stderr, "for q13") {
		t.Errorf("--side-input with q0: exit %d, %s", code, stderr)
	}
}
