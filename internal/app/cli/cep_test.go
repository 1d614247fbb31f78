package cli

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestBenchCEPJSON(t *testing.T) {
	out, stderr, code := run(t, "bench", "cep", "--events", "200000", "--keys", "10000", "--patterns", "3", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"events_per_sec", "events_per_sec_per_core", "peak_rss_bytes"} {
		if v, ok := res[k].(float64); !ok || v <= 0 {
			t.Errorf("JSON %q = %v: %s", k, res[k], lines[len(lines)-1])
		}
	}
	if res["matches"].(float64) == 0 || res["patterns"].(float64) != 3 {
		t.Errorf("matches %v patterns %v", res["matches"], res["patterns"])
	}
}

func TestDemoFraud(t *testing.T) {
	dir := t.TempDir()
	out, stderr, code := run(t, "demo", "fraud", "--events", "30000", "--data-dir", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{"ALERT small-then-large-abroad", "ALERT three-declined", "summary"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	m := regexp.MustCompile(`alerts +(\d+) in all; topic fraud-alerts: (\d+) records`).FindStringSubmatch(out)
	if m == nil || m[1] != m[2] || m[1] == "0" {
		t.Errorf("summary: %v\n%s", m, out)
	}
	if n := strings.Count(out, "ALERT "); m != nil && strings.TrimSpace(m[1]) != itoa(n) {
		t.Errorf("%d alerts printed, summary says %s", n, m[1])
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
