package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --latency-profile writes a CPU profile and an execution trace of the
// latency run, and the trace holds the window operator's firing regions.
func TestBenchNexmarkLatencyProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "prof")
	_, stderr, code := run(t, "bench", "nexmark", "--queries", "q8", "--events", "20000", "--latency-duration", "300ms",
		"--latency-warmup", "0", "--checkpoint-interval", "0", "--json", "--latency-profile", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"q8-latency.prof", "q8-latency.trace"} {
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v (size %v)", f, err, st)
		}
	}
	tr, err := os.ReadFile(filepath.Join(dir, "q8-latency.trace"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(tr), "window-fire") {
		t.Error("the trace has no window-fire region")
	}
}
