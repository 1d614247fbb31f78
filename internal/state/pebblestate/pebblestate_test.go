package pebblestate_test

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/internal/state/statetest"
)

func TestPebbleConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T, cfg state.Config) state.Backend {
		b, err := pebblestate.Open(pebblestate.Options{Dir: "db", FS: vfs.NewMem(), MemoryBudget: 4 << 20}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

// On disk too, with the directory removed on close.
func TestPebbleConformanceOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	statetest.Run(t, func(t *testing.T, cfg state.Config) state.Backend {
		b, err := pebblestate.Open(pebblestate.Options{Dir: t.TempDir() + "/db", RemoveOnClose: true, MemoryBudget: 4 << 20}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}
