package cli

import (
	"encoding/json"
	"testing"
)

// `weir bench checkpoint --json` prints every mode's checkpoints: full
// ones write the whole state, changelog ones after the first about the
// change (here 2% of the keys: at most 5% of the state).
func TestBenchCheckpointJSON(t *testing.T) {
	out, stderr, code := run(t, "bench", "checkpoint", "--keys", "20000", "--checkpoints", "3", "--change", "0.02", "--json", "--dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res checkpointBenchResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if len(res.Checkpoints) != 9 {
		t.Fatalf("%d checkpoints, want 3 for each of 3 modes: %s", len(res.Checkpoints), out)
	}
	for _, r := range res.Checkpoints {
		if r.StateBytes < 20000*100 || r.Written <= 0 {
			t.Errorf("%+v: state under the values' 2 MB, or nothing written", r)
		}
	}
	if full := res.MaxWrittenRatio["full"]; full < 0.95 {
		t.Errorf("full checkpoints wrote at most %.2f of the state, want all of it", full)
	}
	if cl := res.MaxWrittenRatio["changelog"]; cl <= 0 || cl > 0.05 {
		t.Errorf("changelog checkpoints wrote up to %.3f of the state, want (0, 0.05]", cl)
	}
}
