package engine

import (
	"fmt"
	"os"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/incremental"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/internal/statedir"
)

// newPebbleBackend opens a Pebble backend for one operator subtask, in a
// directory of its own under this process's directory in the job's state
// dir (the system's temporary directory when none is given; see
// internal/statedir), removed when the subtask closes. The
// database is a working copy: a restart starts from an empty one and
// restores the checkpoint into it, by key group, or, from an incremental
// checkpoint, from the checkpoint's files (see internal/incremental). The
// memory budget is the operator's, shared evenly by its subtasks.
func newPebbleBackend(st *subtask, n *node, cfg state.Config) (state.Backend, error) {
	base := st.cfg().stateDir
	if base == "" {
		base = os.TempDir()
	}
	root, err := statedir.ProcessDir(base)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, fmt.Sprintf("%s-%d-", checkpoint.SafeName(n.uid), st.index))
	if err != nil {
		return nil, fmt.Errorf("pebble state dir: %w", err)
	}
	be, err := openPebbleBackend(st, n, cfg, dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return be, nil
}

func openPebbleBackend(st *subtask, n *node, cfg state.Config, dir string) (*incremental.Backend, error) {
	r := st.plan.restored
	ds, err := restoredDescs(r, n.uid)
	if err != nil {
		return nil, err
	}
	opts := incremental.Options{Dir: dir, UID: n.uid, Subtask: st.index, Incremental: st.cfg().incremental,
		Changelog: st.cfg().changelog, MaterializeInterval: st.cfg().materializeInterval.Milliseconds(),
		Memory: st.plan.pebbleMemory, MemoryBudget: st.cfg().stateMemory, Descs: ds}
	if r != nil {
		opts.Restore, opts.RestoreID = r.Checkpoint, r.ID
	}
	return incremental.Open(opts, cfg)
}

// pebbleMemory is the memory budget of an attempt's Pebble databases:
// the job's (PebbleState's memoryBudget) for all of them, one per subtask
// of each operator that keeps its state in the backend. nil on the heap.
func (j *Job) pebbleMemory() *pebblestate.Memory {
	if j.cfg.stateBackend != "pebble" {
		return nil
	}
	databases := 0
	for _, n := range j.nodes {
		if n.inBackend(j.cfg.stateBackend) {
			databases += n.parallelism
		}
	}
	return pebblestate.NewMemory(j.cfg.stateMemory, databases)
}

// restoredDescs returns the Pebble databases that operator uid has in the
// restored checkpoint r (none if r is nil or holds its state by key group).
func restoredDescs(r *restoredState, uid string) ([]incremental.Desc, error) {
	if r == nil {
		return nil, nil
	}
	return incremental.Descs(r.Path, uid, r.Ops[uid])
}
