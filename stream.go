package weir

import (
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
func FilterWatermarkWith[T any](s *Stream[T], newFn func() func(v T, ts, wm int64) bool, opts ...OperatorOption) *Stream[T] {
	return engine.FilterWatermarkWith[T](s, newFn, opts...)
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
func Map[T, U any](s *Stream[T], fn func(T) U, opts ...OperatorOption) *Stream[U] {
	return engine.Map[T, U](s, fn, opts...)
}

// Filter keeps the records for which fn returns true.
func Filter[T any](s *Stream[T], fn func(T) bool, opts ...OperatorOption) *Stream[T] {
	return engine.Filter[T](s, fn, opts...)
}

// FlatMap calls fn for every record; fn emits zero or more records through
// emit. Emitted records keep the input record's timestamp.
func FlatMap[T, U any](s *Stream[T], fn func(v T, emit func(U)), opts ...OperatorOption) *Stream[U] {
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
func Rebalance[T any](s *Stream[T], opts ...OperatorOption) *Stream[T] {
	return engine.Rebalance[T](s, opts...)
}

// Broadcast sends every record to every subtask of the next operator.
func Broadcast[T any](s *Stream[T], opts ...OperatorOption) *Stream[T] {
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
func FlatMapWith[T, U any](s *Stream[T], newFn func() func(v T, emit func(U)), opts ...OperatorOption) *Stream[U] {
	return engine.FlatMapWith[T, U](s, newFn, opts...)
}

// FlatMapWatermarkWith is FlatMapWith whose function is also given the
// watermark the operator had received before each record, in Unix
// milliseconds (math.MinInt64 before the first): SQL's
// CURRENT_WATERMARK, a filter of late records.
func FlatMapWatermarkWith[T, U any](s *Stream[T], newFn func() func(v T, wm int64, emit func(U)), opts ...OperatorOption) *Stream[U] {
	return engine.FlatMapWatermarkWith[T, U](s, newFn, opts...)
}

// FlatMapCloseWith is FlatMapWith whose function per subtask comes with a
// close, called once the input has ended (after its last record, before
// the end goes on downstream): a function that holds a connection (SQL's
// lookup join, a client per subtask) closes it there. An error of close
// fails the job. It is not called when the job fails or is cancelled.
func FlatMapCloseWith[T, U any](s *Stream[T], newFn func() (fn func(v T, emit func(U)), close func() error), opts ...OperatorOption) *Stream[U] {
	return engine.FlatMapCloseWith[T, U](s, newFn, opts...)
}

// FlatMapFlushWith is FlatMapWith whose function per subtask comes with a
// flush, called after the records of each input batch, before the batch's
// watermark goes on and before any checkpoint barrier after it: a function
// that gathers a batch's records (SQL's local pre-aggregation) emits them
// there, so what it holds is never part of a checkpoint.
func FlatMapFlushWith[T, U any](s *Stream[T], newFn func() (fn func(v T, emit func(U)), flush func(emit func(U))), opts ...OperatorOption) *Stream[U] {
	return engine.FlatMapFlushWith[T, U](s, newFn, opts...)
}
