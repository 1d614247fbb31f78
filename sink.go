package weir

import (
	"github.com/weirstream/weir/internal/engine"
)

// Sink is an output of a job. Each sink subtask opens its own writer.
type Sink[T any] = engine.Sink[T]

// SinkWriter writes the records that reach one sink subtask.
type SinkWriter[T any] = engine.SinkWriter[T]

// SinkFunc adapts a function to a Sink whose writers call it (from several
// goroutines when the sink's parallelism is above 1).
type SinkFunc[T any] = engine.SinkFunc[T]

// To writes s to sink. The sink is chained to its input and runs at its
// parallelism unless Parallelism says otherwise.
func To[T any](s *Stream[T], sink Sink[T], opts ...OperatorOption) {
	engine.To[T](s, sink, opts...)
}

// Collector gathers the records of a stream in memory; see Collect.
type Collector[T any] = engine.Collector[T]

// Collect attaches a sink that keeps every record of s in memory. Items
// returns them once Run has returned (in arrival order per subtask; the
// interleaving of subtasks is not defined).
func Collect[T any](s *Stream[T], opts ...OperatorOption) *Collector[T] {
	return engine.Collect[T](s, opts...)
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
type FlushingWriter = engine.FlushingWriter

// WatermarkWriter is a SinkWriter that is told the watermark (Flink's
// SinkWriter.writeWatermark): WriteWatermark is called, in order with
// Write, each time the sink subtask's watermark advances; the end of a
// bounded input gives time.UnixMilli(math.MaxInt64). The exactly-once
// file sink's partition-time commit (file.PartitionTime) uses it.
type WatermarkWriter = engine.WatermarkWriter

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
type CommittingSink[T any] = engine.CommittingSink[T]

// CommittingWriter is the writer of a CommittingSink.
type CommittingWriter[T any] = engine.CommittingWriter[T]

// Committer makes pre-committed output visible.
type Committer = engine.Committer
