package weir

import (
	"context"
	"fmt"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/exec"
)

// barrierMsg is checkpoint barrier n. It travels in-band: as an
// exec.Barrier message between tasks, and as a barrier call down a chain,
// after every record that belongs to checkpoint n and before every record
// that does not.
type barrierMsg struct {
	id    int64
	final bool // taken after the end of the input: the last checkpoint
	// stop: a stop-with-savepoint. Sources emit nothing after it; the job
	// ends once the savepoint is complete.
	stop bool
}

// taskSnapshot collects one task's part of a checkpoint while its barrier
// passes down the chain; the coordinator writes it out.
type taskSnapshot struct {
	id           int64
	task         string
	subtask      int
	states       []opState
	committables []pendingCommit
}

// opState is the state of one operator subtask: the content of a state
// file (its format is internal/codec's).
type opState = codec.StateFile

type pendingCommit struct {
	uid, name   string
	parallelism int
	data        []byte
	committer   Committer
}

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
func (op *unionOp[T]) barrier(b *barrierMsg, s *taskSnapshot) error {
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
			if err := fw.Flush(op.st.ctx, b.id); err != nil {
				return fmt.Errorf("flush for checkpoint %d: %w", b.id, err)
			}
		}
		return nil
	}
	data, err := cw.PreCommit(op.st.ctx, b.id)
	if err != nil {
		return fmt.Errorf("pre-commit of checkpoint %d: %w", b.id, err)
	}
	if data != nil {
		s.committables = append(s.committables, pendingCommit{uid: op.info.uid, name: op.info.name, parallelism: op.info.parallelism, data: data, committer: op.committer})
	}
	return nil
}

// encode and decode are the state codec of operator metadata and state
// files (internal/codec: gob, so user types need exported fields or a
// GobEncoder/BinaryMarshaler, and state files in their binary format).
func encode(v any) ([]byte, error) { return codec.Marshal(v) }

func decode(data []byte, v any) error { return codec.Unmarshal(data, v) }

// noCtx is for Close calls that must run even though the job's context is
// cancelled.
var noCtx = context.Background()
