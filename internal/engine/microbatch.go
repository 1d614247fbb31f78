package engine

import (
	"context"
	"errors"

	"github.com/weirstream/weir/internal/coordinator"
)

// epochsInMemory lets the coordinator of a microbatch job without
// Checkpointing end epochs: nothing is written, and the sinks' staged
// output is committed at each epoch's end.
func epochsInMemory(cc *coordinator.Config) {
	cc.Persist = func(context.Context, int64, bool, []*coordinator.TaskSnapshot) error { return nil }
	cc.PersistSavepoint = func(context.Context, int64, string, []*coordinator.TaskSnapshot) error {
		return errors.New("weir: savepoints need Checkpointing")
	}
	cc.Commit = func(ctx context.Context, _ int64, snaps []*coordinator.TaskSnapshot) error {
		for _, s := range snaps {
			for _, c := range s.Committables {
				if c.Committer == nil {
					continue
				}
				if err := c.Committer.Commit(ctx, c.Data); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// startEpochs holds the watermark of a microbatch source subtask at the
// combined watermark it starts (or restarts) with.
func (t *sourceTask[T]) startEpochs() {
	t.epochs = t.ck != nil && t.st.cfg().microbatch > 0
	t.epochWM, t.epochIdle = t.comb.Current(), t.comb.AllIdle()
}

// outWM is the watermark the subtask sends: the combined one, or in
// microbatch mode the one held since the epoch began.
func (t *sourceTask[T]) outWM() int64 {
	if t.epochs {
		return t.epochWM
	}
	return t.comb.Current()
}

// outIdle is the idleness the subtask sends, held like the watermark.
func (t *sourceTask[T]) outIdle() bool {
	if t.epochs {
		return t.epochIdle
	}
	return t.comb.AllIdle()
}

// holdWM stamps the k records just read with the epoch's watermark (stamp
// computed the continuous one, record by record).
func (t *sourceTask[T]) holdWM(k int) {
	if !t.epochs {
		return
	}
	wm := t.b.wm[:k]
	for i := range wm {
		wm[i] = t.epochWM
	}
}

// endEpoch follows the barrier that ended an epoch: the watermark moves to
// what the splits' event times so far allow, is sent at once (the task
// does not tick while it waits), and the subtask waits until the epoch's
// checkpoint has settled before it reads the next epoch.
func (t *sourceTask[T]) endEpoch(b *barrierMsg) error {
	if !t.epochs {
		return nil
	}
	t.epochWM, t.epochIdle = t.comb.Current(), t.comb.AllIdle()
	if err := t.emit(0); err != nil {
		return err
	}
	for _, f := range t.st.flushers {
		if err := f.flush(); err != nil {
			return err
		}
	}
	return t.ck.WaitSettled(t.ctx, b.ID)
}
