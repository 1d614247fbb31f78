package engine

import (
	"cmp"
	"reflect"
	"unsafe"
)

// AggregateFunction aggregates a window's records incrementally: the window
// keeps one accumulator per key instead of the records themselves. Merge
// combines two accumulators (used when windows merge).
type AggregateFunction[IN, ACC, OUT any] interface {
	Create() ACC
	Add(acc ACC, in IN) ACC
	Merge(a, b ACC) ACC
	Result(acc ACC) OUT
}

// IdentityResult is an optional interface of an AggregateFunction whose
// Result returns the accumulator it is given, unchanged (ACC and OUT are
// one type). A window firing then copies each accumulator into its result
// without calling Result: a call through the interface with a struct by
// value is a large part of the per-key cost of a firing
// (BenchmarkAlignedFireRows). The marker is ignored when ACC and OUT
// differ.
type IdentityResult interface {
	// IdentityResult marks the promise; it is never called.
	IdentityResult()
}

// identityResult reports whether agg's Result may be skipped: it says
// IdentityResult and its accumulators are its results.
func identityResult[ACC, OUT any](agg any) bool {
	_, ok := agg.(IdentityResult)
	return ok && reflect.TypeFor[ACC]() == reflect.TypeFor[OUT]()
}

// resultOf is agg's result for the accumulator at acc: a copy of it when
// ident (identityResult), else Result's. The window operators' firings
// call it for every key.
func resultOf[T, ACC, OUT any](agg AggregateFunction[T, ACC, OUT], ident bool, acc *ACC) OUT {
	if ident {
		return *(*OUT)(unsafe.Pointer(acc))
	}
	return agg.Result(*acc)
}

// AggregateFuncs builds an AggregateFunction from four functions.
type AggregateFuncs[IN, ACC, OUT any] struct {
	CreateFn func() ACC
	AddFn    func(ACC, IN) ACC
	MergeFn  func(ACC, ACC) ACC
	ResultFn func(ACC) OUT
}

func (f AggregateFuncs[IN, ACC, OUT]) Create() ACC {
	if f.CreateFn == nil {
		var zero ACC
		return zero
	}
	return f.CreateFn()
}
func (f AggregateFuncs[IN, ACC, OUT]) Add(a ACC, in IN) ACC { return f.AddFn(a, in) }
func (f AggregateFuncs[IN, ACC, OUT]) Merge(a, b ACC) ACC   { return f.MergeFn(a, b) }
func (f AggregateFuncs[IN, ACC, OUT]) Result(a ACC) OUT     { return f.ResultFn(a) }

// Number is a type that Sum and Avg can add.
type Number interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

type countAgg[T any] struct{}

// Count counts records.
func Count[T any]() AggregateFunction[T, int64, int64] { return countAgg[T]{} }

func (countAgg[T]) Create() int64          { return 0 }
func (countAgg[T]) Add(a int64, _ T) int64 { return a + 1 }
func (countAgg[T]) Merge(a, b int64) int64 { return a + b }
func (countAgg[T]) Result(a int64) int64   { return a }
func (countAgg[T]) IdentityResult()        {}

type sumAgg[T any, N Number] struct{ fn func(T) N }

// Sum adds fn(record) over the records.
func Sum[T any, N Number](fn func(T) N) AggregateFunction[T, N, N] { return sumAgg[T, N]{fn} }

func (s sumAgg[T, N]) Create() N       { return 0 }
func (s sumAgg[T, N]) Add(a N, in T) N { return a + s.fn(in) }
func (s sumAgg[T, N]) Merge(a, b N) N  { return a + b }
func (s sumAgg[T, N]) Result(a N) N    { return a }
func (s sumAgg[T, N]) IdentityResult() {}

// Opt is an optional value: the accumulator of Min, Max and Reduce (no
// value before their first record), the missing side of an outer join's
// row, the state of Fold.
type Opt[V any] struct {
	V  V
	OK bool
}

// Some is an Opt holding v.
func Some[T any](v T) Opt[T] { return Opt[T]{V: v, OK: true} }

// None is an empty Opt, such as the missing side of an outer join's row.
func None[T any]() Opt[T] { return Opt[T]{} }

// Get returns the value and whether there is one, for `if v, ok :=
// o.Get(); ok` (the zero value when there is none).
func (o Opt[V]) Get() (V, bool) { return o.V, o.OK }

type extremumAgg[T any, V cmp.Ordered] struct {
	fn  func(T) V
	max bool
}

// Min is the smallest fn(record).
func Min[T any, V cmp.Ordered](fn func(T) V) AggregateFunction[T, Opt[V], V] {
	return extremumAgg[T, V]{fn: fn}
}

// Max is the largest fn(record).
func Max[T any, V cmp.Ordered](fn func(T) V) AggregateFunction[T, Opt[V], V] {
	return extremumAgg[T, V]{fn: fn, max: true}
}

func (e extremumAgg[T, V]) Create() Opt[V] { return Opt[V]{} }
func (e extremumAgg[T, V]) Add(a Opt[V], in T) Opt[V] {
	return e.Merge(a, Opt[V]{e.fn(in), true})
}
func (e extremumAgg[T, V]) Merge(a, b Opt[V]) Opt[V] {
	switch {
	case !a.OK:
		return b
	case !b.OK:
		return a
	case e.max == (b.V > a.V):
		return b
	}
	return a
}
func (e extremumAgg[T, V]) Result(a Opt[V]) V { return a.V }

// AvgAcc is the accumulator of Avg.
type AvgAcc struct {
	Sum   float64
	Count int64
}

type avgAgg[T any, N Number] struct{ fn func(T) N }

// Avg is the arithmetic mean of fn(record), as float64.
func Avg[T any, N Number](fn func(T) N) AggregateFunction[T, AvgAcc, float64] {
	return avgAgg[T, N]{fn}
}

func (a avgAgg[T, N]) Create() AvgAcc { return AvgAcc{} }
func (a avgAgg[T, N]) Add(acc AvgAcc, in T) AvgAcc {
	return AvgAcc{acc.Sum + float64(a.fn(in)), acc.Count + 1}
}
func (a avgAgg[T, N]) Merge(x, y AvgAcc) AvgAcc { return AvgAcc{x.Sum + y.Sum, x.Count + y.Count} }
func (a avgAgg[T, N]) Result(acc AvgAcc) float64 {
	if acc.Count == 0 {
		return 0
	}
	return acc.Sum / float64(acc.Count)
}

type reduceAgg[T any] struct{ fn func(a, b T) T }

func (r reduceAgg[T]) Create() Opt[T] { return Opt[T]{} }
func (r reduceAgg[T]) Add(a Opt[T], in T) Opt[T] {
	if !a.OK {
		return Opt[T]{in, true}
	}
	return Opt[T]{r.fn(a.V, in), true}
}
func (r reduceAgg[T]) Merge(a, b Opt[T]) Opt[T] {
	switch {
	case !a.OK:
		return b
	case !b.OK:
		return a
	}
	return Opt[T]{r.fn(a.V, b.V), true}
}
func (r reduceAgg[T]) Result(a Opt[T]) T { return a.V }

// Reduce combines each window's records per key with fn, which must be
// associative.
func Reduce[K comparable, T any](ws *WindowedStream[K, T], fn func(a, b T) T, opts ...WindowOption) *Stream[WindowResult[K, T]] {
	return Aggregate(ws, AggregateFunction[T, Opt[T], T](reduceAgg[T]{fn}), opts...)
}

type countDistinctAgg[T any, V comparable] struct{ fn func(T) V }

// CountDistinct counts the distinct values of fn(record). Its accumulator
// is a set, so its state grows with the number of distinct values.
func CountDistinct[T any, V comparable](fn func(T) V) AggregateFunction[T, map[V]struct{}, int64] {
	return countDistinctAgg[T, V]{fn}
}

func (c countDistinctAgg[T, V]) Create() map[V]struct{} { return map[V]struct{}{} }
func (c countDistinctAgg[T, V]) Add(a map[V]struct{}, in T) map[V]struct{} {
	if a == nil {
		a = map[V]struct{}{}
	}
	a[c.fn(in)] = struct{}{}
	return a
}
func (c countDistinctAgg[T, V]) Merge(a, b map[V]struct{}) map[V]struct{} {
	m := make(map[V]struct{}, len(a)+len(b))
	for k := range a {
		m[k] = struct{}{}
	}
	for k := range b {
		m[k] = struct{}{}
	}
	return m
}
func (c countDistinctAgg[T, V]) Result(a map[V]struct{}) int64 { return int64(len(a)) }
