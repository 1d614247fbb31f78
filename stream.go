package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// FilterWatermarkWith is Filter with a function per subtask (newFn is
// called once per subtask when the job starts, so the function may keep
// state of its own without locks) that is also given each record's event
// time and the watermark the operator had received before the record, both
// in Unix milliseconds (math.MinInt64 before the first watermark).
//
// The function's state is not checkpointed: after a restore it starts
// empty, so it must only be a hint that makes the filter drop records it
// can prove useless, never something results depend on. The SQL planner
// uses it to drop, before a join's state, rows that provably can never
// join (sql/planner/join_maxprune.go): the watermark tells it which rows an
// event-time window downstream of the same source has certainly counted.
func FilterWatermarkWith[T any](s *Stream[T], newFn func() func(v T, ts, wm int64) bool, opts ...Option) *Stream[T] {
	return engine.FilterWatermarkWith[T](s, newFn, opts...)
}

// Microbatch runs the job in epochs of d of processing time (Spark
// Structured Streaming's micro-batches) instead of record at a time; 0 is
// continuous execution (the default).
//
// Every source subtask reads for d, then ends the epoch with a checkpoint
// barrier and reads nothing more until that checkpoint has settled
// (committed, or failed or timed out, when its output is carried to the
// next): an epoch flows through the whole graph as one unit, and its
// state and sink output commit at its end. The next epoch starts when the
// previous one has committed, so an epoch is d of reading plus the time to
// drain and commit it; the epoch is the unit of recovery. With
// Checkpointing, each epoch's end is a checkpoint in its dir (the
// interval is not used: the epochs set the pace); without, the epochs
// commit sink output in memory and a failure fails the job.
//
// The watermark moves only between epochs (Spark's rule): a source
// subtask stamps every record of epoch k+1, and sends downstream, the
// watermark computed from the largest event times it read up to the end of
// epoch k; it sends the new value right after epoch k's barrier, so no
// operator sees it advance inside an epoch (barrier alignment holds back
// the inputs that are ahead). Results in event time equal continuous
// execution's when the disorder stays within the watermark's bound. With
// more disorder, fewer events are late than in continuous mode: an event
// is late only against the watermark of the previous epoch's end, not
// against one raised by earlier events of its own epoch (docs/microbatch.md).
// Like Checkpointing, it needs sources that implement RestorableSource.
func Microbatch(d time.Duration) Option {
	return engine.Microbatch(d)
}

// Stream is a stream of records of type T in a job under construction.
type Stream[T any] = engine.Stream[T]

// KeyedStream is a stream partitioned by a key: every record with the same
// key goes to the same subtask of the next operator, which keeps state per
// key. Build one with KeyBy.
type KeyedStream[K comparable, T any] = engine.KeyedStream[K, T]

// Map applies fn to every record. It is chained to its input (same
// goroutine, plain function calls) unless Parallelism gives it another
// parallelism.
func Map[T, U any](s *Stream[T], fn func(T) U, opts ...Option) *Stream[U] {
	return engine.Map[T, U](s, fn, opts...)
}

// Filter keeps the records for which fn returns true.
func Filter[T any](s *Stream[T], fn func(T) bool, opts ...Option) *Stream[T] {
	return engine.Filter[T](s, fn, opts...)
}

// FlatMap calls fn for every record; fn emits zero or more records through
// emit. Emitted records keep the input record's timestamp.
func FlatMap[T, U any](s *Stream[T], fn func(v T, emit func(U)), opts ...Option) *Stream[U] {
	return engine.FlatMap[T, U](s, fn, opts...)
}

// KeyBy partitions s by key. It is not an operator of its own: the next
// operator (Window, Process) receives its input over a hash-partitioned edge,
// by key group (see package keygroup). K must be a type with a stable hash:
// strings, numbers, and arrays and structs of them.
func KeyBy[T any, K comparable](s *Stream[T], key func(T) K) *KeyedStream[K, T] {
	return engine.KeyBy[T, K](s, key)
}

// Rebalance distributes records round robin over the next operator's
// subtasks (which run at the job's parallelism unless told otherwise).
func Rebalance[T any](s *Stream[T], opts ...Option) *Stream[T] {
	return engine.Rebalance[T](s, opts...)
}

// Broadcast sends every record to every subtask of the next operator.
func Broadcast[T any](s *Stream[T], opts ...Option) *Stream[T] {
	return engine.Broadcast[T](s, opts...)
}

// Union merges streams of the same type into one. The result's watermark is
// the minimum of the inputs' watermarks.
func Union[T any](s *Stream[T], others ...*Stream[T]) *Stream[T] {
	return engine.Union[T](s, others...)
}

// FlatMapWith is FlatMap with a function per subtask: newFn is called once
// for each subtask when the job starts, so the function it returns may keep
// state of its own (a buffer it reuses) without locks, as ProcessWith does
// for keyed functions. The state is not checkpointed.
func FlatMapWith[T, U any](s *Stream[T], newFn func() func(v T, emit func(U)), opts ...Option) *Stream[U] {
	return engine.FlatMapWith[T, U](s, newFn, opts...)
}
