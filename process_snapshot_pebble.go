package weir

import (
	"fmt"
	"os"

	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
)

// newPebbleBackend opens a Pebble backend for one operator subtask, in a
// directory of its own under the job's state dir (the system's temporary
// directory when none is given), removed when the subtask closes. The
// database is a working copy: a restart starts from an empty one and
// restores the checkpoint into it. The memory budget is the operator's,
// shared evenly by its subtasks.
func newPebbleBackend(st *subtask, n *node, cfg state.Config) (state.Backend, error) {
	root := st.cfg().stateDir
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("pebble state dir: %w", err)
	}
	dir, err := os.MkdirTemp(root, fmt.Sprintf("%s-%d-", fileSafe(n.uid), st.index))
	if err != nil {
		return nil, fmt.Errorf("pebble state dir: %w", err)
	}
	budget := st.cfg().stateMemory
	if budget <= 0 {
		budget = pebblestate.DefaultMemoryBudget
	}
	be, err := pebblestate.Open(pebblestate.Options{Dir: dir, MemoryBudget: budget / int64(max(n.parallelism, 1)), RemoveOnClose: true}, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return be, nil
}
