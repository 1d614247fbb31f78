package cli

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"
)

// TestHeapFloor: the floor is --heap-floor-mib MiB unless the user set
// GOGC or GOMEMLIMIT or asked for none, and a command run with it holds
// it, so the collector's goal is at least twice as large.
func TestHeapFloor(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, c := range []struct {
		mib   int
		limit int64
		env   map[string]string
		want  int
	}{
		{128, 0, nil, 128 << 20},
		{0, 0, nil, 0},
		{128, 0, map[string]string{"GOGC": "200"}, 0},
		{128, 0, map[string]string{"GOMEMLIMIT": "1GiB"}, 0},
		// under a cgroup memory limit: a sixteenth of it at most
		{128, 8 << 30, nil, 128 << 20},
		{128, 160 << 20, nil, 10 << 20},
		{128, 160 << 20, map[string]string{"GOMEMLIMIT": "100MiB"}, 0},
	} {
		if got := heapFloorBytes(c.mib, c.limit, env(c.env)); got != c.want {
			t.Errorf("heapFloorBytes(%d, %d, %v) = %d, want %d", c.mib, c.limit, c.env, got, c.want)
		}
	}
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	// another test's command may have set the floor (once a process)
	floorOnce, floor = sync.Once{}, nil
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
