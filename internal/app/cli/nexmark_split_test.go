package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchNexmarkDistinctSplit: --distinct-split adds the SQL plans with
// table.optimizer.distinct-agg.split.enabled, with and without
// mini-batch, and q15's final view (one row per day) is reached by them.
func TestBenchNexmarkDistinctSplit(t *testing.T) {
	out, stderr, code := run(t, "bench", "nexmark", "--queries", "q15", "--events", "5000", "--latency-duration", "0",
		"--checkpoint-interval", "0", "--json", "--sql", "--mini-batch", "100", "--distinct-split")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	plans := map[string]int64{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Plan string `json:"plan"`
			Rows int64  `json:"rows"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r.Plan != "" {
			plans[r.Plan] = r.Rows
		}
	}
	for _, p := range []string{"sql", "sql-mini-batch", "sql-distinct-split", "sql-mini-batch-distinct-split"} {
		if n, ok := plans[p]; !ok || n == 0 {
			t.Errorf("no %s run with rows: %v", p, plans)
		}
	}
	// the split's changelog is not the unsplit one's (a partial per
	// bucket updates the final row): the option reached the plan
	if plans["sql"] == plans["sql-distinct-split"] {
		t.Errorf("the same %d rows with and without the split", plans["sql"])
	}
}
