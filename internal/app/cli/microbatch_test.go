package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func lastJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var res map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line is not JSON: %v\n%s", err, out)
	}
	return res
}

// TestMicrobatchFlags: --microbatch parses on the four commands, reaches
// the job (it reports the epochs it committed), keeps the results, and a
// negative value is refused with the flag's name.
func TestMicrobatchFlags(t *testing.T) {
	out, stderr, code := run(t, "bench", "adclicks", "--events", "200000", "--runs", "1", "--json", "--delay", "5000",
		"--microbatch", "20ms", "--latency-duration", "300ms")
	if code != 0 {
		t.Fatalf("bench adclicks: exit %d: %s\n%s", code, stderr, out)
	}
	res := lastJSON(t, out)
	if res["microbatch"] != "20ms" || res["epochs"] == nil || res["epochs"].(float64) < 1 {
		t.Errorf("bench adclicks: microbatch %v, epochs %v", res["microbatch"], res["epochs"])
	}
	if res["checksum"] != res["baseline_checksum"] {
		t.Errorf("bench adclicks: checksum %v, baseline %v", res["checksum"], res["baseline_checksum"])
	}
	if p99, _ := res["p99_latency_ms"].(float64); p99 <= 0 {
		t.Errorf("bench adclicks: no p99 latency: %v", res["p99_latency_ms"])
	}

	out, stderr, code = run(t, "bench", "nexmark", "--queries", "q1", "--events", "20000", "--latency-duration", "0", "--json", "--microbatch", "20ms")
	if code != 0 {
		t.Fatalf("bench nexmark: exit %d: %s\n%s", code, stderr, out)
	}
	if res := lastJSON(t, out); res["microbatch"] != "20ms" || res["checkpoints"].(float64) < 1 {
		t.Errorf("bench nexmark: microbatch %v, checkpoints %v", res["microbatch"], res["checkpoints"])
	}

	out, stderr, code = run(t, "demo", "adclicks", "--source", "generator", "--data-dir", t.TempDir(), "--events", "30000", "--ads", "4",
		"--parallelism", "1", "--quiet", "--microbatch", "20ms")
	if code != 0 || !strings.Contains(out, "microbatch 20ms: ") {
		t.Fatalf("demo adclicks: exit %d: %s\n%s", code, stderr, out)
	}

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
`
	path := filepath.Join(dir, "job.sql")
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = run(t, "sql", "-f", path, "--define", "DIR="+dir, "--microbatch", "20ms")
	if code != 0 || !strings.Contains(stderr, "microbatch 20ms: ") {
		t.Fatalf("sql: exit %d: %s", code, stderr)
	}
	got := readParts(t, filepath.Join(dir, "out"))
	want := []string{
		`{"auction":1,"n":1,"total":5,"wstart":"2024-01-01 00:00:10"}`,
		`{"auction":1,"n":2,"total":40,"wstart":"2024-01-01 00:00:00"}`,
		`{"auction":2,"n":1,"total":20,"wstart":"2024-01-01 00:00:00"}`,
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("sql out:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	for _, args := range [][]string{
		{"bench", "adclicks", "--events", "1000"},
		{"bench", "nexmark", "--queries", "q1", "--events", "1000"},
		{"demo", "adclicks", "--source", "generator", "--data-dir", t.TempDir(), "--events", "1000"},
		{"sql", "-f", path, "--define", "DIR=" + dir},
	} {
		if _, stderr, code := run(t, append(args, "--microbatch", "-1s")...); code == 0 || !strings.Contains(stderr, "--microbatch -1s") {
			t.Errorf("%v --microbatch -1s: exit %d: %s", args, code, stderr)
		}
	}
}
