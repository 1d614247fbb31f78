package weir

import (
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// Option configures a job (NewJob) or one operator (FromSource, Map, KeyBy,
// Window, ...). Options that make no sense where they are given make Run fail
// with an error naming them, rather than being ignored.
type Option = engine.Option

// Parallelism sets how many subtasks run an operator; given to NewJob it is
// the default for every operator. Stateless operators chained to their
// input run at their input's parallelism unless told otherwise.
func Parallelism(n int) Option {
	return engine.Parallelism(n)
}

// MaxParallelism sets the number of key groups (default 128): the upper
// bound for parallelism, fixed for the life of the job's state.
func MaxParallelism(n int) Option {
	return engine.MaxParallelism(n)
}

// BatchSize sets how many records a batch on an edge holds at most (default
// 1024).
func BatchSize(n int) Option {
	return engine.BatchSize(n)
}

// BufferTimeout bounds how long a record may wait in a partly filled output
// batch before it is sent (default 10ms). Zero sends after every input batch.
func BufferTimeout(d time.Duration) Option {
	return engine.BufferTimeout(d)
}

// QueueCapacity sets how many batches an input channel buffers before its
// sender blocks (default 4). This bounds memory and is where backpressure
// starts.
func QueueCapacity(n int) Option {
	return engine.QueueCapacity(n)
}

// MetricsAddr serves Prometheus metrics at http://addr/metrics while the job
// runs. An address without a host (":9249") listens on loopback only.
func MetricsAddr(addr string) Option {
	return engine.MetricsAddr(addr)
}

// Logger sets the job's logger (default: discard).
func Logger(l *slog.Logger) Option {
	return engine.Logger(l)
}

// Name names an operator in metrics, logs and errors.
func Name(name string) Option {
	return engine.Name(name)
}

// UID gives an operator a stable identity that savepoints use to map state
// to operators across code changes. It defaults to the operator's name.
func UID(uid string) Option {
	return engine.UID(uid)
}

// Clock replaces the wall clock that drives processing time (processing-time
// timers and triggers, state TTL, ingestion timestamps) — for tests.
func Clock(now func() time.Time) Option {
	return engine.Clock(now)
}

// AllowedLateness keeps a window's state for d after it fired (by the
// watermark): events that arrive in that time are still added and cause a
// corrected result (a late firing); only events later than that are dropped
// (and counted, and sent to LateEvents). Flink's allowedLateness.
func AllowedLateness(d time.Duration) Option {
	return engine.AllowedLateness(d)
}

// Trigger sets when a window emits its result (default: EventTimeTrigger).
func Trigger(t WindowTrigger) Option {
	return engine.Trigger(t)
}

// Accumulating makes every firing of a window after the first emit the
// window's new value as UpdateAfter (the default): a consumer keeping the
// latest value per window stays right.
func Accumulating() Option {
	return engine.Accumulating()
}

// Retracting makes every firing of a window after the first emit
// UpdateBefore with the previous value, then UpdateAfter with the new one,
// so that a downstream sum (adding UpdateAfter and Insert, subtracting
// UpdateBefore and Delete) stays exact.
func Retracting() Option {
	return engine.Retracting()
}

// Checkpointing takes a checkpoint every interval into dir (one
// subdirectory per checkpoint; the first after a random delay in [0,
// interval], as Flink does, so that checkpoints do not keep one phase
// against the job's windows) and makes the job fault tolerant: after a
// failure it restarts from the latest complete checkpoint (see
// RestartPolicy), and a process started again with the same dir resumes
// from it. Every source must implement RestorableSource.
func Checkpointing(interval time.Duration, dir string) Option {
	return engine.Checkpointing(interval, dir)
}

// CheckpointTimeout aborts a checkpoint that has not completed within d
// (default 10 minutes).
func CheckpointTimeout(d time.Duration) Option {
	return engine.CheckpointTimeout(d)
}

// RetainCheckpoints keeps the newest n completed checkpoints (default 3).
func RetainCheckpoints(n int) Option {
	return engine.RetainCheckpoints(n)
}

// RestoreFrom starts the job from a savepoint or checkpoint directory
// instead of the latest checkpoint of the checkpoint dir. The parallelism
// may differ from the one that took it: keyed state moves by key group.
func RestoreFrom(path string) Option {
	return engine.RestoreFrom(path)
}

// AllowNonRestoredState lets a job start from a savepoint that holds state
// of operators the job no longer has (matched by UID); that state is
// dropped. Without it such a restore fails.
func AllowNonRestoredState() Option {
	return engine.AllowNonRestoredState()
}

// StartFresh lets a job start empty when its checkpoint dir holds
// checkpoints of which none is usable. Without it the job refuses to start,
// rather than silently reprocess or lose its state.
func StartFresh() Option {
	return engine.StartFresh()
}

// AllowDuplicateOutput lets a job restore a checkpoint older than output
// its sinks already committed (its newer checkpoints are damaged, or
// RestoreFrom names an older one), or start empty after such output: the
// records after the restored checkpoint are processed again and their
// output is committed a second time. Without it the job refuses to start,
// with a *DuplicateOutputError naming the checkpoints, unless every
// committing sink is a ReplaySafeCommitter.
func AllowDuplicateOutput() Option {
	return engine.AllowDuplicateOutput()
}

// RestartPolicy says how a checkpointed job restarts after a failure:
// exponential backoff from InitialBackoff to MaxBackoff, and at most
// MaxFailures failures within Interval, after which Run fails.
type RestartPolicy = engine.RestartPolicy

// DefaultRestartPolicy: 100ms doubling to 10s, at most 10 failures in 10
// minutes.
func DefaultRestartPolicy() RestartPolicy {
	return engine.DefaultRestartPolicy()
}

// Restarts sets the restart policy of a checkpointed job. MaxFailures 0
// disables restarts.
func Restarts(p RestartPolicy) Option {
	return engine.Restarts(p)
}

// HeapState keeps keyed state in memory as Go values (the default): the
// fastest, bounded by memory.
func HeapState() Option {
	return engine.HeapState()
}

// PebbleState keeps the keyed state and timers of Process operators in a
// Pebble LSM under dir, so state can be larger than memory; memoryBudget
// bounds the bytes each operator's Pebble keeps in memory (0: a default).
// Checkpoints copy Pebble state by key group like heap state (not yet
// incrementally); window operators keep their state on the heap.
func PebbleState(dir string, memoryBudget int64) Option {
	return engine.PebbleState(dir, memoryBudget)
}

// IncrementalCheckpoints makes checkpoints of PebbleState state
// incremental, as Flink's `execution.checkpointing.incremental: true` does
// for RocksDB (off by default there and here): each checkpoint uploads only
// the SST files that the previous one did not have, into the checkpoint
// directory's shared/ area, and lists the others again; retention deletes
// a shared file once no retained checkpoint lists it. A restore with the
// same parallelism opens the files directly; at another parallelism, it
// copies each key group's entries out of the old databases. Savepoints stay
// self-contained, by key group. Without PebbleState (heap state) it does
// nothing: there are no files to share.
func IncrementalCheckpoints() Option {
	return engine.IncrementalCheckpoints()
}
