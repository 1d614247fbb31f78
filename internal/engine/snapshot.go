package engine

import (
	"fmt"

	"context"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/incremental"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/watermark"
)

// opInfo identifies an operator subtask in a snapshot.
type opInfo struct {
	uid, name            string
	subtask, parallelism int
	maxP                 uint64
}

func newOpInfo(st *subtask, n *node) opInfo {
	return opInfo{uid: n.uid, name: n.name, subtask: st.index, parallelism: n.parallelism, maxP: uint64(st.cfg().maxParallelism)}
}

func (i opInfo) state(wm int64) opState {
	return opState{UID: i.uid, Name: i.name, Subtask: i.subtask, Parallelism: i.parallelism, Watermark: wm}
}

// addKeyedState adds a keyed operator's snapshot to s: the key groups g
// encoded, with the operator's watermark. The window operators share it;
// each has its barrier and restore next to it.
func addKeyedState[E any](s *taskSnapshot, info opInfo, wm int64, g *codec.GroupWriter[E]) error {
	groups, err := g.Finish()
	if err != nil {
		return fmt.Errorf("weir: snapshot of %s: %w", info.name, err)
	}
	st := info.state(wm)
	st.Groups = groups
	s.States = append(s.States, st)
	return nil
}

// restoredState is the checkpoint or savepoint a job restores from
// (internal/ckstore loads it).
type restoredState = ckstore.Restored

// keyed returns what subtask st of node n restores: the encoded entries of
// every key group it owns, from whichever old subtasks had them, and the
// watermark to start from (the minimum of theirs: exact when parallelism
// did not change, conservative otherwise).
func (st *subtask) restoreKeyed(n *node) (wm int64, groups [][]byte, ok bool) {
	r := st.plan.restored
	if r == nil {
		return watermark.Min, nil, false
	}
	old, found := r.Ops[n.uid]
	if !found {
		return watermark.Min, nil, false
	}
	maxP := st.cfg().maxParallelism
	lo, hi := keygroup.Range(st.index, n.parallelism, maxP)
	wm = watermark.Max
	for _, s := range old {
		contributes := false
		for kg, data := range s.Groups {
			if kg >= lo && kg < hi {
				groups = append(groups, data)
				contributes = true
			}
		}
		// Incremental Pebble state: the key groups with entries are
		// listed with the database's files, which the backend restored.
		if data, ok := s.Meta[incremental.MetaKey]; ok {
			var d incremental.Desc
			if decode(data, &d) == nil {
				for _, kg := range d.NonEmpty {
					contributes = contributes || kg >= lo && kg < hi
				}
			}
		}
		// An old subtask with no state in our range still bounds the
		// watermark when the parallelism is unchanged (it is us).
		if contributes || (s.Subtask == st.index && s.Parallelism == n.parallelism) {
			wm = min(wm, s.Watermark)
		}
	}
	if wm == watermark.Max {
		wm = watermark.Min
		for _, s := range old {
			wm = max(wm, s.Watermark)
		}
	}
	if wm == watermark.Max {
		// Taken after the end of the input (a final checkpoint): new input
		// starts a new stream of time, as after Flink's stop --drain.
		wm = watermark.Min
	}
	return wm, groups, true
}

// restoreMeta returns the merged non-keyed state of node n (for sources:
// split positions by split ID) and the minimum watermark.
func (st *subtask) restoreMeta(n *node) (map[string][]byte, bool) {
	r := st.plan.restored
	if r == nil {
		return nil, false
	}
	old, found := r.Ops[n.uid]
	if !found {
		return nil, false
	}
	out := map[string][]byte{}
	for _, s := range old {
		for k, v := range s.Meta {
			out[k] = v
		}
	}
	return out, true
}

// reuse is s emptied for the next entry of a snapshot, or nil when g keeps
// the entries it is given (gob), which must then not share slices.
func reuse[E any, S ~[]X, X any](g *codec.GroupWriter[E], s S) S {
	if g.Keeps() {
		return nil
	}
	return s[:0]
}

// encode and decode are the state codec of operator metadata and state
// files (internal/codec: gob, so user types need exported fields or a
// GobEncoder/BinaryMarshaler, and state files in their binary format).
func encode(v any) ([]byte, error) { return codec.Marshal(v) }

func decode(data []byte, v any) error { return codec.Unmarshal(data, v) }

// noCtx is for Close calls that must run even though the job's context is
// cancelled.
var noCtx = context.Background()
