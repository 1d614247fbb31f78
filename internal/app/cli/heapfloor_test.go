package cli

import (
	"bytes"
	"context"
	"runtime"
	"testing"
)

// TestHeapFloor: the floor is --heap-floor-mib MiB unless the user set
// GOGC or GOMEMLIMIT or asked for none, and a command run with it holds
// it, so the collector's goal is at least twice as large.
func TestHeapFloor(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		mib  int
		env  map[string]string
		want int
	}{
		{128, nil, 128 << 20},
		{0, nil, 0},
		{128, map[string]string{"GOGC": "200"}, 0},
		{128, map[string]string{"GOMEMLIMIT": "1GiB"}, 0},
	} {
		if got := heapFloorBytes(c.mib, env(c.env)); got != c.want {
			t.Errorf("heapFloorBytes(%d, %v) = %d, want %d", c.mib, c.env, got, c.want)
		}
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	var out, errOut bytes.Buffer
	// a command that runs (--help runs no hooks); its result does not
	// matter here
	Run(context.Background(), []string{"--heap-floor-mib", "64", "checkpoints", "list", t.TempDir()}, &out, &errOut)
	if len(floor) != 64<<20 {
		t.Fatalf("floor of %d bytes after --heap-floor-mib 64", len(floor))
	}
	runtime.GC() // the goal is set at the end of a cycle
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.NextGC < 128<<20 {
		t.Fatalf("next GC at %d bytes, want at least twice the floor", m.NextGC)
	}
}
