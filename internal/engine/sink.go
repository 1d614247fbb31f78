package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// Sink is an output of a job. Each sink subtask opens its own writer.
type Sink[T any] interface {
	// OpenWriter opens the writer of sink subtask `subtask` of `parallelism`.
	OpenWriter(ctx context.Context, subtask, parallelism int) (SinkWriter[T], error)
}

// SinkWriter writes the records that reach one sink subtask.
type SinkWriter[T any] interface {
	// Write writes records; the slice is only valid during the call.
	Write(ctx context.Context, items []T) error
	// Close flushes and releases the writer. It is called once, at the end
	// of the input or when the job fails.
	Close(ctx context.Context) error
}

// SinkFunc adapts a function to a Sink whose writers call it (from several
// goroutines when the sink's parallelism is above 1).
type SinkFunc[T any] func(ctx context.Context, items []T) error

// OpenWriter implements Sink.
func (f SinkFunc[T]) OpenWriter(context.Context, int, int) (SinkWriter[T], error) {
	return funcWriter[T](f), nil
}

type funcWriter[T any] SinkFunc[T]

func (f funcWriter[T]) Write(ctx context.Context, items []T) error { return f(ctx, items) }
func (f funcWriter[T]) Close(context.Context) error                { return nil }

// To writes s to sink. The sink is chained to its input and runs at its
// parallelism unless Parallelism says otherwise.
func To[T any](s *Stream[T], sink Sink[T], opts ...OperatorOption) {
	cfg := s.job.opConfig(opts)
	n := s.job.addNode(cfg.name, "sink", cfg.parallelism, cfg)
	n.tee = newTee[struct{}]
	n.impl = sink
	if cs, ok := sink.(CommittingSink[T]); ok {
		n.committer = cs.Committer()
	}
	connect(s, n, forward)
	n.build = func(st *subtask, _ any) ([]any, error) {
		w, err := sink.OpenWriter(st.ctx, st.index, n.parallelism)
		if err != nil {
			return nil, err
		}
		op := &sinkOp[T]{w: w, st: st, m: st.metrics(n), info: newOpInfo(st, n), committer: n.committer, lastWM: watermark.Min}
		op.ww, _ = w.(WatermarkWriter)
		if cw, ok := w.(CommittingWriter[T]); ok {
			// The restored checkpoint's output was committed before the
			// tasks started; what else earlier attempts left goes now.
			var id int64
			if r := st.plan.restored; r != nil {
				id = r.ID
			}
			if err := cw.Recover(st.ctx, id); err != nil {
				w.Close(noCtx)
				return nil, fmt.Errorf("recover sink %q: %w", n.name, err)
			}
		}
		st.closers = append(st.closers, op.close)
		return []any{consumer[T](op)}, nil
	}
}

type sinkOp[T any] struct {
	w         SinkWriter[T]
	ww        WatermarkWriter // w, when it takes watermarks
	lastWM    int64           // the last watermark given to ww
	st        *subtask
	m         *metrics.Operator
	info      opInfo
	committer Committer
	closed    bool
}

func (op *sinkOp[T]) push(b *batch[T]) error {
	if len(b.data) > 0 {
		op.m.RecordsIn.Add(int64(len(b.data)))
		if err := op.w.Write(op.st.ctx, b.data); err != nil {
			return err
		}
	}
	if op.ww != nil && b.watermark > op.lastWM {
		op.lastWM = b.watermark
		return op.ww.WriteWatermark(op.st.ctx, time.UnixMilli(b.watermark).UTC())
	}
	return nil
}

// WatermarkWriter is a SinkWriter that is told the watermark (Flink's
// SinkWriter.writeWatermark): WriteWatermark is called, in order with
// Write, each time the sink subtask's watermark advances, before the
// records after it are written; the end of a bounded input gives the
// largest time, time.UnixMilli(math.MaxInt64). A writer uses it to act by
// event time: the filesystem sink commits a partition once the watermark
// has passed its time (Flink's partition-time commit trigger).
type WatermarkWriter interface {
	WriteWatermark(ctx context.Context, watermark time.Time) error
}

// finish closes the writer. Without checkpointing, a two-phase-commit
// sink pre-commits and commits here, once: the end of a bounded input is
// then the only point where its output is known complete.
func (op *sinkOp[T]) finish() error {
	if cw, ok := op.w.(CommittingWriter[T]); ok && op.st.plan.coord == nil {
		data, err := cw.PreCommit(op.st.ctx, 0)
		if err != nil {
			return err
		}
		if err := op.close(); err != nil {
			return err
		}
		if data != nil && op.committer != nil {
			return op.committer.Commit(op.st.ctx, data)
		}
		return nil
	}
	if fw, ok := op.w.(FlushingWriter); ok && op.st.plan.coord == nil {
		// Without checkpoints the end of the input is the one flush point
		// (with them, the final checkpoint's barrier flushed).
		if err := fw.Flush(op.st.ctx, 0); err != nil {
			return err
		}
	}
	return op.close()
}

func (op *sinkOp[T]) close() error {
	if op.closed {
		return nil
	}
	op.closed = true
	return op.w.Close(op.st.ctx)
}

// Collector gathers the records of a stream in memory; see Collect.
type Collector[T any] struct {
	mu    sync.Mutex
	items []T
}

// Collect attaches a sink that keeps every record of s in memory. Items
// returns them once Run has returned (in arrival order per subtask; the
// interleaving of subtasks is not defined).
func Collect[T any](s *Stream[T], opts ...OperatorOption) *Collector[T] {
	c := &Collector[T]{}
	To(s, SinkFunc[T](func(_ context.Context, items []T) error {
		c.mu.Lock()
		c.items = append(c.items, items...)
		c.mu.Unlock()
		return nil
	}), append([]OperatorOption{Name("collect")}, opts...)...)
	return c
}

// Items returns a copy of what arrived so far.
func (c *Collector[T]) Items() []T {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]T(nil), c.items...)
}

// FlushingWriter is a SinkWriter that buffers: Flush is called at every
// checkpoint barrier, before the sink acknowledges the checkpoint, and
// must make everything written so far durable in the external system
// (Flink's SinkWriter.flush). Without checkpointing it is called once, with
// id 0, at the end of a bounded input, before Close; Close itself runs
// after failures too, so it need not flush. A checkpoint then covers the sink's output,
// so that after a restore nothing written before it is lost: at-least-once
// delivery, or effectively once with idempotent writes (an upsert keyed by
// a position). Two-phase-commit writers use PreCommit instead.
type FlushingWriter interface {
	Flush(ctx context.Context, checkpointID int64) error
}

// CommittingSink is a sink with two-phase commit, for exactly-once output:
// what its writers write becomes visible only when the checkpoint that
// covers it has completed (Flink's TwoPhaseCommittingSink).
//
// At each checkpoint barrier the job calls PreCommit on every writer: the
// writer stages what it wrote since the previous barrier (closes a part
// file, flushes a transaction) and returns a committable, a small
// description of the staged output that the job stores in the checkpoint.
// Once the checkpoint is complete (its metadata written), the job calls the
// committer with every committable of that checkpoint. After a crash, the
// job restores the latest complete checkpoint and calls Commit again with
// its committables (Commit must therefore be idempotent), then Recover on
// every new writer so it can discard output that no completed checkpoint
// covers.
//
// Without checkpointing, the job pre-commits and commits once, at the end
// of a bounded input.
type CommittingSink[T any] interface {
	Sink[T]
	// Committer returns the committer of this sink.
	Committer() Committer
}

// CommittingWriter is the writer of a CommittingSink.
type CommittingWriter[T any] interface {
	SinkWriter[T]
	// PreCommit stages everything written since the previous PreCommit as
	// part of checkpoint checkpointID and returns its committable (nil when
	// nothing was written).
	PreCommit(ctx context.Context, checkpointID int64) ([]byte, error)
	// Recover is called once, before the first Write, when the job starts
	// from a checkpoint (restoredID > 0) or from scratch (restoredID == 0):
	// the writer removes output that earlier attempts of this subtask left
	// and that no committable of the restored checkpoint covers.
	Recover(ctx context.Context, restoredID int64) error
}

// Committer makes pre-committed output visible.
type Committer interface {
	// Commit makes the output of one committable visible. It must be
	// idempotent: after a crash the same committable is committed again.
	Commit(ctx context.Context, committable []byte) error
}
