package engine

import (
	"context"
	"fmt"
	"runtime/trace"

	"github.com/weirstream/weir/internal/incremental"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/watermark"
)

// barrier snapshots the process operator: every state store and both timer
// queues, per key group (with TTL expiry times and the timers'
// registration order), and its watermark; then it forwards the barrier.
// Output of earlier records went downstream before the barrier: push and
// onProcessingTime leave no record in the output batch.
func (op *processOp[K, T, OUT]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "process-barrier").End()
	}
	if len(op.ob.data) > 0 {
		if err := op.emit(op.wm); err != nil {
			return err
		}
	}
	op.nowOK = false // expiry is judged at the time of the snapshot
	op.sampleUsage()
	st := op.info.state(op.wm)
	if pb, ok := op.backend.(*incremental.Backend); ok && pb.Incremental() {
		token, err := pb.Snapshot(b.ID, b.Final || b.Stop, b.Savepoint, op.procNow())
		if err != nil {
			return fmt.Errorf("weir: operator %q: checkpoint %d: %w", op.info.name, b.ID, err)
		}
		st.Meta = map[string][]byte{incremental.LocalKey: token}
		s.States = append(s.States, st)
		return forwardBarrier(op.out, b, s)
	}
	st.Groups = map[int][]byte{}
	r := op.backend.KeyGroups()
	for kg := r.Start; kg < r.End; kg++ {
		data, err := state.SnapshotKeyGroup(op.backend, kg)
		if err != nil {
			return fmt.Errorf("weir: operator %q: checkpoint %d: %w", op.info.name, b.ID, err)
		}
		if data != nil {
			st.Groups[kg] = data
		}
	}
	s.States = append(s.States, st)
	return forwardBarrier(op.out, b, s)
}

// restore puts the state of the key groups this subtask owns back into its
// stores (created by Open, matched by name) and timer queues, and restores
// the watermark. A snapshot taken after the end of the input (watermark
// +inf: the final checkpoint of a bounded job) restores with no watermark,
// as Flink's operators do after stop --drain: the new input's watermarks
// take over, and timers registered for it can fire.
func (op *processOp[K, T, OUT]) restore(wm int64, groups [][]byte) error {
	if pb, ok := op.backend.(*incremental.Backend); ok {
		if err := pb.CheckRestored(); err != nil {
			return err
		}
	}
	if err := state.RestoreKeyGroups(op.backend, groups); err != nil {
		return err
	}
	if wm == watermark.Max {
		wm = watermark.Min
	}
	op.wm, op.emitWM, op.sentWM = wm, wm, wm
	return nil
}

// newStateBackend creates the keyed state backend of one operator subtask,
// as the job's options say (HeapState, the default, or PebbleState).
func newStateBackend(st *subtask, n *node, cfg state.Config) (state.Backend, error) {
	switch b := st.cfg().stateBackend; b {
	case "", "heap":
		if ds, err := restoredDescs(st.plan.restored, n.uid); err != nil || len(ds) > 0 {
			if err == nil {
				err = fmt.Errorf("%s holds the state of operator %q as Pebble files (an incremental checkpoint): restore it with PebbleState, or restore a savepoint (which is by key group)", st.plan.restored.Path, n.uid)
			}
			return nil, err
		}
		return state.NewHeap(cfg)
	case "pebble":
		return newPebbleBackend(st, n, cfg)
	default:
		return nil, fmt.Errorf("unknown state backend %q", b)
	}
}
