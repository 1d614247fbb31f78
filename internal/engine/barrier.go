package engine

import (
	"fmt"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/exec"
)

// The barrier and a task's part of a checkpoint are the coordinator's
// (internal/coordinator); these names keep the operators' code short.
type (
	barrierMsg    = coordinator.Barrier
	taskSnapshot  = coordinator.TaskSnapshot
	pendingCommit = coordinator.Committable
)

// opState is the state of one operator subtask: the content of a state
// file (its format is internal/codec's).
type opState = codec.StateFile

// barrierer is implemented by every operator that can take part in a
// checkpoint: it snapshots its state into snap (the synchronous part: a
// copy into memory) and forwards the barrier downstream.
type barrierer interface {
	barrier(b *barrierMsg, snap *taskSnapshot) error
}

// forwardBarrier passes a barrier to the next operator of a chain.
func forwardBarrier(out any, b *barrierMsg, snap *taskSnapshot) error {
	bb, ok := out.(barrierer)
	if !ok {
		return fmt.Errorf("weir: operator %T does not support checkpoints", out)
	}
	return bb.barrier(b, snap)
}

func (op *mapOp[T, U]) barrier(b *barrierMsg, s *taskSnapshot) error {
	return forwardBarrier(op.out, b, s)
}
func (op *filterOp[T]) barrier(b *barrierMsg, s *taskSnapshot) error {
	return forwardBarrier(op.out, b, s)
}
func (op *flatMapOp[T, U]) barrier(b *barrierMsg, s *taskSnapshot) error {
	return forwardBarrier(op.out, b, s)
}

func (t *tee[T]) barrier(b *barrierMsg, s *taskSnapshot) error {
	for _, o := range t.outs {
		if err := forwardBarrier(o, b, s); err != nil {
			return err
		}
	}
	return nil
}

// barrier flushes what is buffered, then sends the barrier on every
// channel: downstream, everything before it belongs to the checkpoint.
func (o *outBuffers[E]) barrier(b *barrierMsg) error {
	if err := o.flush(); err != nil {
		return err
	}
	for _, t := range o.targets {
		if _, err := t.gate.Send(t.channel, exec.Message{Kind: exec.Barrier, Batch: b}); err != nil {
			return err
		}
	}
	return nil
}

func (w *hashWriter[K, T]) barrier(b *barrierMsg, _ *taskSnapshot) error { return w.out.barrier(b) }
func (w *plainWriter[T]) barrier(b *barrierMsg, _ *taskSnapshot) error   { return w.out.barrier(b) }

// barrier pre-commits a two-phase-commit sink's writer; other sinks have
// nothing to save (their output is at-least-once).
func (op *sinkOp[T]) barrier(b *barrierMsg, s *taskSnapshot) error {
	cw, ok := op.w.(CommittingWriter[T])
	if !ok {
		if fw, ok := op.w.(FlushingWriter); ok {
			if err := fw.Flush(op.st.ctx, b.ID); err != nil {
				return fmt.Errorf("flush for checkpoint %d: %w", b.ID, err)
			}
		}
		return nil
	}
	data, err := cw.PreCommit(op.st.ctx, b.ID)
	if err != nil {
		return fmt.Errorf("pre-commit of checkpoint %d: %w", b.ID, err)
	}
	if data != nil {
		s.Committables = append(s.Committables, pendingCommit{UID: op.info.uid, Name: op.info.name, Parallelism: op.info.parallelism, Data: data, Committer: op.committer})
	}
	return nil
}
