package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestBenchNexmarkStateBytesPerKey: each --json line of a query with keyed
// state (q4: a join of auctions and bids, then max per auction and an
// average per category) carries its operators' keys and bytes, and the
// main one's bytes a key, for the hand-written query and its SQL plan; a
// stateless query (q1) carries none.
func TestBenchNexmarkStateBytesPerKey(t *testing.T) {
	out, stderr, code := run(t, "bench", "nexmark", "--queries", "q1,q4", "--events", "20000", "--latency-duration", "0",
		"--checkpoint-interval", "0", "--json", "--sql")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Query            string   `json:"query"`
			Plan             string   `json:"plan"`
			EventsPerSec     float64  `json:"events_per_sec"`
			StateBytesPerKey *float64 `json:"state_bytes_per_key"`
			StateOperator    string   `json:"state_operator"`
			StateOperators   []struct {
				Operator    string  `json:"operator"`
				Keys        int64   `json:"keys"`
				Bytes       int64   `json:"bytes"`
				BytesPerKey float64 `json:"bytes_per_key"`
			} `json:"state_operators"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		lines++
		if r.EventsPerSec <= 0 {
			t.Errorf("%s %s: the existing fields are gone: %s", r.Query, r.Plan, l)
		}
		if r.Query == "q1" {
			if r.StateBytesPerKey != nil || len(r.StateOperators) > 0 {
				t.Errorf("q1 %s keeps no state but reports some: %s", r.Plan, l)
			}
			continue
		}
		if r.StateBytesPerKey == nil || *r.StateBytesPerKey < 16 || len(r.StateOperators) < 2 || r.StateOperators[0].Operator != r.StateOperator {
			t.Fatalf("q4 %s: no state bytes a key: %s", r.Plan, l)
		}
		for _, o := range r.StateOperators {
			if o.Keys <= 0 || o.Bytes < 16*o.Keys || o.BytesPerKey != float64(int64(10*float64(o.Bytes)/float64(o.Keys)+0.5))/10 {
				t.Errorf("q4 %s: operator %+v", r.Plan, o)
			}
		}
	}
	if lines != 4 {
		t.Fatalf("%d lines, want 4 (q1, q1/sql, q4, q4/sql):\n%s", lines, out)
	}
}
