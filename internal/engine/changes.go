package engine

import "cmp"

// The changelog API: Change, Changes, JoinChanges, AggregateChanges and the
// retracting aggregates (MaxRetract, MinRetract, SumRetract, AvgRetract,
// CountRetract). NormalizeChanges and ToTable are in changelog.go.

// Change is one row of a changelog stream: a value and what it does to a
// view of the results (Flink's RowKind): Insert and UpdateAfter add it,
// UpdateBefore and Delete retract it.
type Change[T any] struct {
	Kind  ChangeKind
	Value T
}

// Adds reports whether the change adds its value to the view (Insert or
// UpdateAfter) rather than retracting it.
func (c Change[T]) Adds() bool { return c.Kind == Insert || c.Kind == UpdateAfter }

// Changes turns an append-only stream into a changelog of inserts.
func Changes[T any](s *Stream[T], opts ...OperatorOption) *Stream[Change[T]] {
	return Map(s, func(v T) Change[T] { return Change[T]{Insert, v} }, append([]OperatorOption{Name("Changes")}, opts...)...)
}

// JoinChanges is the regular inner join of two changelog streams: it keeps
// each side as a multiset of values per key, and when a value is added
// (Insert, UpdateAfter) it emits an Insert for every match on the other
// side; when one is retracted (UpdateBefore, Delete) a Delete for every
// match. Applying the output to a view gives the join of the two input
// views at every moment. Retracting a value that is not there is ignored,
// as in Flink. State is kept for ever, as in Join.
func JoinChanges[K, L, R comparable, OUT any](left *KeyedStream[K, Change[L]], right *KeyedStream[K, Change[R]],
	fn func(key K, l L, r R) (OUT, bool), opts ...RetentionOption) *Stream[Change[OUT]] {
	ks := connectTwo(left, right, "JoinChanges")
	rest, ttl := retention(ks.src.job, "JoinChanges", opts)
	return ProcessWith(ks, func() KeyedProcessFunction[K, tagged[Change[L], Change[R]], Change[OUT]] {
		return &changeJoin[K, L, R, OUT]{fn: fn, ttl: ttl}
	}, append([]OperatorOption{Name("JoinChanges")}, rest...)...)
}

type changeJoin[K, L, R comparable, OUT any] struct {
	fn    func(K, L, R) (OUT, bool)
	ttl   []StateOption
	left  *MapState[K, L, int64] // value -> multiplicity
	right *MapState[K, R, int64]
}

func (f *changeJoin[K, L, R, OUT]) Open(rc *RuntimeContext[K]) error {
	f.left = NewMapState[L, int64](rc, "left", f.ttl...)
	f.right = NewMapState[R, int64](rc, "right", f.ttl...)
	return nil
}

// count moves v's multiplicity in s by one and reports whether it changed.
func count[K, V comparable](s *MapState[K, V, int64], v V, add bool) bool {
	n, _ := s.Get(v)
	switch {
	case add:
		s.Put(v, n+1)
	case n == 0:
		return false
	case n == 1:
		s.Remove(v)
	default:
		s.Put(v, n-1)
	}
	return true
}

func (f *changeJoin[K, L, R, OUT]) ProcessElement(ctx *KeyedContext[K, Change[OUT]], in tagged[Change[L], Change[R]]) error {
	key := ctx.Key()
	if !in.IsRight {
		add := in.Left.Adds()
		if !count(f.left, in.Left.Value, add) {
			return nil
		}
		kind := changeOf(add)
		for r, n := range f.right.All() {
			if out, ok := f.fn(key, in.Left.Value, r); ok {
				for range n {
					ctx.Emit(Change[OUT]{kind, out})
				}
			}
		}
		return nil
	}
	add := in.Right.Adds()
	if !count(f.right, in.Right.Value, add) {
		return nil
	}
	kind := changeOf(add)
	for l, n := range f.left.All() {
		if out, ok := f.fn(key, l, in.Right.Value); ok {
			for range n {
				ctx.Emit(Change[OUT]{kind, out})
			}
		}
	}
	return nil
}

func changeOf(add bool) ChangeKind {
	if add {
		return Insert
	}
	return Delete
}

// KeyValue is a key with its value, such as the result of a group
// aggregate.
type KeyValue[K, V any] struct {
	Key   K
	Value V
}

// RetractingAggregateFunction is an aggregate that can also take a value
// back out, for aggregates over changelog streams (Flink's retract method).
type RetractingAggregateFunction[T, ACC, OUT any] interface {
	Create() ACC
	Add(acc ACC, v T) ACC
	Retract(acc ACC, v T) ACC
	Result(acc ACC) OUT
}

// AggregateChanges is a continuously updated aggregate per key over a
// changelog (SQL's GROUP BY without windows, Flink's GroupAggFunction). It
// emits its own changelog: an Insert with the first result of a key, then
// UpdateBefore(old) and UpdateAfter(new) whenever the result changes (not
// when it stays the same), and a Delete when every value of the key has
// been retracted. Retracting from a key with no values is ignored. Results
// carry the event time of the change that caused them. State is kept for
// ever. For an append-only stream, wrap it with Changes.
func AggregateChanges[K comparable, T, ACC any, OUT comparable](ks *KeyedStream[K, Change[T]], agg RetractingAggregateFunction[T, ACC, OUT], opts ...RetentionOption) *Stream[Change[KeyValue[K, OUT]]] {
	rest, ttl := retention(ks.src.job, "AggregateChanges", opts)
	return ProcessWith(ks, func() KeyedProcessFunction[K, Change[T], Change[KeyValue[K, OUT]]] {
		return &groupAgg[K, T, ACC, OUT]{agg: agg, ttl: ttl}
	}, append([]OperatorOption{Name("AggregateChanges")}, rest...)...)
}

// groupAcc is the state of one key of AggregateChanges.
type groupAcc[ACC, OUT any] struct {
	Acc  ACC
	N    int64 // values added minus values retracted
	Last OUT   // the result last emitted
}

type groupAgg[K comparable, T, ACC any, OUT comparable] struct {
	agg RetractingAggregateFunction[T, ACC, OUT]
	ttl []StateOption
	st  *ValueState[K, groupAcc[ACC, OUT]]
}

func (f *groupAgg[K, T, ACC, OUT]) Open(rc *RuntimeContext[K]) error {
	f.st = NewValueState[groupAcc[ACC, OUT]](rc, "group", f.ttl...)
	return nil
}

func (f *groupAgg[K, T, ACC, OUT]) ProcessElement(ctx *KeyedContext[K, Change[KeyValue[K, OUT]]], in Change[T]) error {
	g, ok := f.st.Value()
	if !ok {
		if !in.Adds() {
			return nil
		}
		g.Acc = f.agg.Create()
	}
	key := ctx.Key()
	if in.Adds() {
		g.Acc = f.agg.Add(g.Acc, in.Value)
		g.N++
	} else {
		g.Acc = f.agg.Retract(g.Acc, in.Value)
		g.N--
	}
	if g.N <= 0 {
		ctx.Emit(Change[KeyValue[K, OUT]]{Delete, KeyValue[K, OUT]{key, g.Last}})
		f.st.Clear()
		return nil
	}
	res := f.agg.Result(g.Acc)
	switch {
	case !ok:
		ctx.Emit(Change[KeyValue[K, OUT]]{Insert, KeyValue[K, OUT]{key, res}})
	case res != g.Last:
		ctx.Emit(Change[KeyValue[K, OUT]]{UpdateBefore, KeyValue[K, OUT]{key, g.Last}})
		ctx.Emit(Change[KeyValue[K, OUT]]{UpdateAfter, KeyValue[K, OUT]{key, res}})
	}
	g.Last = res
	f.st.Update(g)
	return nil
}

// ExtremumAcc is the accumulator of MaxRetract and MinRetract: the count of
// every value, and the current extremum.
type ExtremumAcc[V cmp.Ordered] struct {
	Counts map[V]int64
	Best   V
}

type extremumRetract[T any, V cmp.Ordered] struct {
	fn  func(T) V
	max bool
}

// MaxRetract is the largest fn(v) of the values present, for
// AggregateChanges (Flink's MaxWithRetractAggFunction). It keeps a count
// per distinct value, so that retracting the maximum finds the next one.
func MaxRetract[T any, V cmp.Ordered](fn func(T) V) RetractingAggregateFunction[T, ExtremumAcc[V], V] {
	return extremumRetract[T, V]{fn, true}
}

// MinRetract is the smallest fn(v) of the values present, for
// AggregateChanges.
func MinRetract[T any, V cmp.Ordered](fn func(T) V) RetractingAggregateFunction[T, ExtremumAcc[V], V] {
	return extremumRetract[T, V]{fn, false}
}

func (a extremumRetract[T, V]) better(x, y V) bool {
	if a.max {
		return x > y
	}
	return x < y
}

func (a extremumRetract[T, V]) Create() ExtremumAcc[V] { return ExtremumAcc[V]{Counts: map[V]int64{}} }

func (a extremumRetract[T, V]) Add(acc ExtremumAcc[V], v T) ExtremumAcc[V] {
	x := a.fn(v)
	if len(acc.Counts) == 0 || a.better(x, acc.Best) {
		acc.Best = x
	}
	acc.Counts[x]++
	return acc
}

func (a extremumRetract[T, V]) Retract(acc ExtremumAcc[V], v T) ExtremumAcc[V] {
	x := a.fn(v)
	n, ok := acc.Counts[x]
	if !ok {
		return acc
	}
	if n > 1 {
		acc.Counts[x] = n - 1
		return acc
	}
	delete(acc.Counts, x)
	if x == acc.Best {
		first := true
		for y := range acc.Counts {
			if first || a.better(y, acc.Best) {
				acc.Best, first = y, false
			}
		}
	}
	return acc
}

func (a extremumRetract[T, V]) Result(acc ExtremumAcc[V]) V { return acc.Best }

// SumAcc is the accumulator of SumRetract and AvgRetract.
type SumAcc[N Number] struct {
	Sum N
	N   int64
}

type sumRetract[T any, N Number] struct{ fn func(T) N }

// SumRetract is the sum of fn(v) over the values present, for
// AggregateChanges.
func SumRetract[T any, N Number](fn func(T) N) RetractingAggregateFunction[T, SumAcc[N], N] {
	return sumRetract[T, N]{fn}
}

func (a sumRetract[T, N]) Create() SumAcc[N] { return SumAcc[N]{} }
func (a sumRetract[T, N]) Add(acc SumAcc[N], v T) SumAcc[N] {
	acc.Sum += a.fn(v)
	acc.N++
	return acc
}
func (a sumRetract[T, N]) Retract(acc SumAcc[N], v T) SumAcc[N] {
	acc.Sum -= a.fn(v)
	acc.N--
	return acc
}
func (a sumRetract[T, N]) Result(acc SumAcc[N]) N { return acc.Sum }

type avgRetract[T any, N Number] struct{ sumRetract[T, N] }

// AvgRetract is the mean of fn(v) over the values present, in the values'
// own type: for integers the quotient is truncated toward zero, as SQL's
// AVG of an integer column in Flink. Zero values give zero.
func AvgRetract[T any, N Number](fn func(T) N) RetractingAggregateFunction[T, SumAcc[N], N] {
	return avgRetract[T, N]{sumRetract[T, N]{fn}}
}

func (a avgRetract[T, N]) Result(acc SumAcc[N]) N {
	if acc.N == 0 {
		return 0
	}
	return acc.Sum / N(acc.N)
}

type countRetract[T any] struct{}

// CountRetract counts the values present, for AggregateChanges.
func CountRetract[T any]() RetractingAggregateFunction[T, int64, int64] { return countRetract[T]{} }

func (countRetract[T]) Create() int64                { return 0 }
func (countRetract[T]) Add(acc int64, _ T) int64     { return acc + 1 }
func (countRetract[T]) Retract(acc int64, _ T) int64 { return acc - 1 }
func (countRetract[T]) Result(acc int64) int64       { return acc }
