package cli

import (
	"encoding/json"
	"testing"
)

func TestBenchBrokerJSON(t *testing.T) {
	out, stderr, code := run(t, "bench", "broker", "--records", "2000", "--latency-seconds", "1", "--json", "--data-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, k := range []string{"direct_append_rps", "direct_read_rps", "broker_produce_rps", "broker_consume_rps",
		"produce_ratio", "consume_ratio", "p50_latency_ms", "p99_latency_ms"} {
		if v, ok := r[k].(float64); !ok || v <= 0 {
			t.Errorf("%s = %v, want a positive number", k, r[k])
		}
	}
	for k, want := range map[string]float64{"records": 2000, "record_bytes": 1024, "partitions": 8} {
		if r[k] != want {
			t.Errorf("%s = %v, want %v", k, r[k], want)
		}
	}
}
