package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/batchref"
)

func TestNexmarkGen(t *testing.T) {
	out, stderr, code := run(t, "nexmark", "gen", "--events", "100", "--seed", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 100 {
		t.Fatalf("%d lines, want 100", len(lines))
	}
	var kinds [3]int
	for _, l := range lines {
		var e nexmark.Event
		if err := nexmark.DecodeJSON([]byte(l), &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		kinds[e.Type]++
	}
	if kinds != [3]int{2, 6, 92} {
		t.Errorf("kinds %v, want 2:6:92", kinds)
	}
	again, _, _ := run(t, "nexmark", "gen", "--events", "100", "--seed", "3")
	other, _, _ := run(t, "nexmark", "gen", "--events", "100", "--seed", "4")
	if again != out || other == out {
		t.Error("gen is not a function of the seed")
	}
}

// run over a file written by gen, at parallelism 2, writes the rows of the
// same run over generated events at parallelism 1.
func TestNexmarkRunFileAndGenerated(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.json")
	gen := []string{"--events", "20000", "--event-rate", "1000", "--seed", "5"}
	if _, stderr, code := run(t, append([]string{"nexmark", "gen", "--output", events}, gen...)...); code != 0 {
		t.Fatalf("gen: %s", stderr)
	}
	read := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		l := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		slices.Sort(l)
		return l
	}
	for _, q := range []string{"q5", "q7", "q11"} {
		a, b := filepath.Join(dir, q+"-gen.json"), filepath.Join(dir, q+"-file.json")
		out, stderr, code := run(t, append([]string{"nexmark", "run", "--query", q, "--parallelism", "1", "--output", a}, gen...)...)
		if code != 0 {
			t.Fatalf("%s: %s", q, stderr)
		}
		if !strings.HasPrefix(out, q+": 20000 events, ") {
			t.Errorf("summary %q", out)
		}
		// The queries whose columns leave the window out say so.
		if say := strings.Contains(out, "leave the window out"); say != (q != "q11") {
			t.Errorf("%s: summary %q", q, out)
		}
		if _, stderr, code := run(t, "nexmark", "run", "--query", q, "--parallelism", "2", "--input", events, "--output", b); code != 0 {
			t.Fatalf("%s --input: %s", q, stderr)
		}
		ra, rb := read(a), read(b)
		if len(ra) == 0 || ra[0] == "" || !slices.Equal(ra, rb) {
			t.Errorf("%s: %d rows generated at parallelism 1, %d from the file at parallelism 2, or different", q, len(ra), len(rb))
		}
	}
	if _, stderr, code := run(t, "nexmark", "run", "--query", "q6"); code == 0 || !strings.Contains(stderr, "no query") {
		t.Errorf("unknown query: exit %d, %s", code, stderr)
	}
}

// run --output of an updating query writes its upsert view: batchref's
// final rows, one per key, not the changelog.
func TestNexmarkRunUpsertView(t *testing.T) {
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
	for _, q := range []string{"q4", "q17"} {
		f, err := os.Open(events)
		if err != nil {
			t.Fatal(err)
		}
		want, err := batchref.Evaluate(q, f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, q+".json")
		out, stderr, code := run(t, "nexmark", "run", "--query", q, "--parallelism", "2", "--input", events, "--output", path)
		if code != 0 {
			t.Fatalf("%s: %s", q, stderr)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(want) == 0 || !slices.Equal(canon(got), canon(want)) {
			t.Errorf("%s: %d rows, batchref %d, or different:\n%.500s", q, len(got), len(want), b)
		}
		if !strings.Contains(out, fmt.Sprintf(" %d rows (upsert view of ", len(want))) {
			t.Errorf("%s: summary %q", q, out)
		}
	}
}

func TestBenchNexmarkJSON(t *testing.T) {
	out, stderr, code := run(t, "bench", "nexmark", "--queries", "q1,q7,q4", "--events", "30000", "--latency-duration", "500ms",
		"--latency-warmup", "0", "--checkpoint-interval", "100ms", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %s", len(lines), out)
	}
	for i, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if r["query"] != []string{"q1", "q7", "q4"}[i] {
			t.Errorf("line %d: query %v", i, r["query"])
		}
		for _, k := range []string{"events_per_sec", "events_per_sec_per_core", "peak_rss_bytes", "p99_latency_ms"} {
			if v, ok := r[k].(float64); !ok || v <= 0 {
				t.Errorf("%s: %s = %v", r["query"], k, r[k])
			}
		}
		if r["query"] == "q7" {
			// Without the warm-up no 10 s window closes in the run: its
			// rows are all end-of-input rows, and p99 rests on them.
			if r["end_rows"] == nil || r["end_rows"] != r["latency_rows"] {
				t.Errorf("q7: end_rows %v, latency_rows %v", r["end_rows"], r["latency_rows"])
			}
		}
	}
}

func TestLatencyHistogram(t *testing.T) {
	h := &histogram{}
	for v := int64(1); v <= 100_000; v++ {
		h.add(v * 10) // 10 µs .. 1 s
	}
	for _, c := range []struct{ q, want float64 }{{0.5, 500_000}, {0.99, 990_000}} {
		if got := h.quantile(c.q); got > c.want || got < c.want*0.997 {
			t.Errorf("quantile(%v) = %v, want %v within 0.3%%", c.q, got, c.want)
		}
	}
	for v := int64(0); v < 1<<40; v = v*3 + 1 {
		if b := bucketOf(v); bucketLow(b) > float64(v) || bucketOf(int64(bucketLow(b))) != b {
			t.Fatalf("bucket of %d: %d, low %v", v, b, bucketLow(b))
		}
	}
}

type readyRow int64

func (r readyRow) AppendJSON(dst []byte) []byte { return dst }
func (r readyRow) Ready() int64                 { return int64(r) }

// TestLatencyEndOfInputApart: a row whose window closed during the run is
// measured from its Ready, one that only the end of the input fired from
// the last event, and each lands in its own histogram.
func TestLatencyEndOfInputApart(t *testing.T) {
	now := int64(0)
	l := &latencyRecorder{base: 1000, last: 21_000, now: func() int64 { return now }}
	w, err := l.output()(0)
	if err != nil {
		t.Fatal(err)
	}
	lw := w.(*latencyWriter)
	lw.started = 5_000_000 // unix µs at which event time 1000 was due
	// A window ready at event time 15000 (14 s in), written 30 ms late.
	now = 5_000_000 + 14_000_000 + 30_000
	lw.Write(readyRow(15_000))
	// Two windows ready after the last event: due at the last event (20 s
	// in), written 700 ms after it.
	now = 5_000_000 + 20_000_000 + 700_000
	lw.Write(readyRow(24_000))
	lw.Write(readyRow(31_000))
	steady, end := l.merged()
	if steady.count != 1 || steady.max != 30_000 {
		t.Errorf("steady: %d rows, max %d µs; want 1 row of 30000", steady.count, steady.max)
	}
	if end.count != 2 || end.max != 700_000 {
		t.Errorf("end of input: %d rows, max %d µs; want 2 rows of 700000", end.count, end.max)
	}
}

// TestLatencyClockOncePerBatch: the rows of one batch are measured at the
// clock read when the batch began (StartBatch), one read a batch, and a
// writer that is not told of batches reads it for each row.
func TestLatencyClockOncePerBatch(t *testing.T) {
	reads := 0
	now := int64(0)
	l := &latencyRecorder{base: 1000, last: 21_000, now: func() int64 { reads++; return now }}
	w, err := l.output()(0)
	if err != nil {
		t.Fatal(err)
	}
	lw := w.(*latencyWriter)
	lw.started = 5_000_000
	if _, ok := w.(nexmark.BatchStarter); !ok {
		t.Fatal("the latency writer is not a nexmark.BatchStarter")
	}
	// Unbatched: a clock read a row.
	now = 5_000_000 + 14_000_000 + 10_000
	lw.Write(readyRow(15_000))
	if reads != 1 {
		t.Fatalf("%d clock reads for one unbatched row, want 1", reads)
	}
	// A batch of three rows that began 40 ms after they were due.
	now = 5_000_000 + 14_000_000 + 40_000
	lw.StartBatch()
	now += 1_000_000 // the clock moves on; the batch's rows keep its start
	for range 3 {
		lw.Write(readyRow(15_000))
	}
	if reads != 2 {
		t.Fatalf("%d clock reads after a batch of three rows, want 2", reads)
	}
	steady, _ := l.merged()
	if steady.count != 4 || steady.max != 40_000 {
		t.Errorf("%d rows, max %d µs; want 4 rows, max 40000", steady.count, steady.max)
	}
}
