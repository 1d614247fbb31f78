package crashtest

import "testing"

// A seed given in WEIR_CRASH_SEED is the one the test gets: that is what
// makes a logged seed replayable.
func TestSeedReplays(t *testing.T) {
	t.Setenv(SeedEnv, "12345")
	if got := Seed(t); got != 12345 {
		t.Fatalf("Seed = %d with %s=12345", got, SeedEnv)
	}
	t.Setenv(SeedEnv, "")
	if a, b := Seed(t), Seed(t); a == b {
		t.Fatalf("two fresh seeds are equal: %d", a)
	}
}
