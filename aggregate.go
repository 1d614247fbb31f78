package weir

import (
	"cmp"

	"github.com/weirstream/weir/internal/engine"
)

// AggregateFunction aggregates a window's records incrementally: the window
// keeps one accumulator per key instead of the records themselves. Merge
// combines two accumulators (used when windows merge).
type AggregateFunction[IN, ACC, OUT any] = engine.AggregateFunction[IN, ACC, OUT]

// IdentityResult is an optional interface of an AggregateFunction whose
// Result returns the accumulator it is given, unchanged (ACC and OUT are
// one type). A window firing then copies each accumulator into its result
// without calling Result: a call through the interface with a struct by
// value is a large part of the per-key cost of a firing
// (BenchmarkAlignedFireRows). The marker is ignored when ACC and OUT
// differ.
type IdentityResult = engine.IdentityResult

// AggregateFuncs builds an AggregateFunction from four functions.
type AggregateFuncs[IN, ACC, OUT any] = engine.AggregateFuncs[IN, ACC, OUT]

// Number is a type that Sum and Avg can add.
type Number = engine.Number

// Count counts records.
func Count[T any]() AggregateFunction[T, int64, int64] {
	return engine.Count[T]()
}

// Sum adds fn(record) over the records.
func Sum[T any, N Number](fn func(T) N) AggregateFunction[T, N, N] {
	return engine.Sum[T, N](fn)
}

// Opt is an optional value: the accumulator of Min, Max and Reduce (no
// value before their first record), the missing side of an outer join's
// row, the state of Fold.
type Opt[V any] = engine.Opt[V]

// Some is an Opt holding v.
func Some[T any](v T) Opt[T] {
	return engine.Some[T](v)
}

// None is an empty Opt, such as the missing side of an outer join's row.
func None[T any]() Opt[T] {
	return engine.None[T]()
}

// Min is the smallest fn(record).
func Min[T any, V cmp.Ordered](fn func(T) V) AggregateFunction[T, Opt[V], V] {
	return engine.Min[T, V](fn)
}

// Max is the largest fn(record).
func Max[T any, V cmp.Ordered](fn func(T) V) AggregateFunction[T, Opt[V], V] {
	return engine.Max[T, V](fn)
}

// AvgAcc is the accumulator of Avg.
type AvgAcc = engine.AvgAcc

// Avg is the arithmetic mean of fn(record), as float64.
func Avg[T any, N Number](fn func(T) N) AggregateFunction[T, AvgAcc, float64] {
	return engine.Avg[T, N](fn)
}

// Reduce combines each window's records per key with fn, which must be
// associative.
func Reduce[K comparable, T any](ws *WindowedStream[K, T], fn func(a, b T) T, opts ...WindowOption) *Stream[WindowResult[K, T]] {
	return engine.Reduce[K, T](ws, fn, opts...)
}

// CountDistinct counts the distinct values of fn(record). Its accumulator
// is a set, so its state grows with the number of distinct values.
func CountDistinct[T any, V comparable](fn func(T) V) AggregateFunction[T, map[V]struct{}, int64] {
	return engine.CountDistinct[T, V](fn)
}

// AppendOnlyAccumulator is an optional interface of an AggregateFunction
// whose accumulators hold slices that are only ever appended to: Add,
// Merge and Result never change an element below a slice's length (they
// append, or build a new slice), and nothing else changes them either
// (results are only read downstream). Then a window operator's checkpoint
// copies the accumulators as they are (slice headers, not elements) at the
// barrier and encodes them off the task: what the barrier saw is the
// prefix each header covers, and appends after it write past that prefix.
// Without the interface, an accumulator holding a slice is encoded at the
// barrier, which stops the task for as long as the encoding takes. Slices
// may hold slices, with the same promise for the inner ones; maps and
// pointers still encode at the barrier.
type AppendOnlyAccumulator = engine.AppendOnlyAccumulator
