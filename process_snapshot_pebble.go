package weir

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/weirstream/weir/internal/checkpoint"
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
// checkpoint, from the checkpoint's files (see pebble_incremental.go). The
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
	dir, err := os.MkdirTemp(root, fmt.Sprintf("%s-%d-", fileSafe(n.uid), st.index))
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

func openPebbleBackend(st *subtask, n *node, cfg state.Config, dir string) (*pebbleBackend, error) {
	budget := st.cfg().stateMemory
	if budget <= 0 {
		budget = pebblestate.DefaultMemoryBudget
	}
	b := &pebbleBackend{root: dir, snapRoot: filepath.Dir(dir), uid: n.uid, subtask: st.index, incremental: st.cfg().incremental, instance: newInstanceID()}
	dbDir := filepath.Join(dir, "db")
	r := st.plan.restored
	ds, err := incDescs(r, n.uid)
	if err != nil {
		return nil, err
	}
	var same *incDesc
	if len(ds) > 0 {
		if same, err = restorePebble(r.ck, ds, cfg.KeyGroups, dir, dbDir); err != nil {
			return nil, err
		}
		for _, d := range ds {
			if d.Start < cfg.KeyGroups.End && cfg.KeyGroups.Start < d.End {
				b.restored = append(b.restored, d.Stores)
			}
		}
	}
	be, err := pebblestate.Open(pebblestate.Options{Dir: dbDir, MemoryBudget: budget / int64(max(n.parallelism, 1))}, cfg)
	if err != nil {
		return nil, err
	}
	b.Backend = be
	if same != nil {
		// Its SST files are in the store already: the next checkpoint
		// lists them rather than uploads them.
		shared := map[string]checkpoint.FileInfo{}
		for _, f := range same.Files {
			if fi, ok := r.ck.File(f.Ref); ok && f.Shared {
				shared[f.Local] = fi
			}
		}
		b.confirm(r.id, shared)
	}
	return b, nil
}

// checkRestored checks, once Open created the stores, that the state
// restored from files has the types the stores have now.
func (b *pebbleBackend) checkRestored() error {
	for _, lays := range b.restored {
		if err := state.CheckLayouts(b, lays); err != nil {
			return err
		}
	}
	b.restored = nil
	return nil
}
