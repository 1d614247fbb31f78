package state_test

import (
	"testing"

	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/statetest"
)

func TestHeapConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T, cfg state.Config) state.Backend {
		h, err := state.NewHeap(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return h
	})
}
