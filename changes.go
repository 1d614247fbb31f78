package weir

import (
	"cmp"

	"github.com/weirstream/weir/internal/engine"
)

// NormalizeChanges turns an upsert stream into a changelog with
// before-images (Flink's ChangelogNormalize): it keeps the latest value of
// every key in keyed state, and for each input
//
//   - Insert or UpdateAfter v (an upsert): an Insert of v when the key has
//     no row, an UpdateBefore of the old row and an UpdateAfter of v when
//     it has one, nothing when v equals the old row;
//   - Delete or UpdateBefore (a tombstone; only the key of its value
//     counts): a Delete of the stored row, nothing when the key has none.
//
// The output is a proper changelog: every retraction retracts exactly the
// row emitted before for its key, so JoinChanges, AggregateChanges and
// upsert sinks can consume it. A changelog that is already proper goes
// through unchanged except that UpdateBefore/UpdateAfter pairs become
// Delete/Insert pairs (the UpdateBefore alone is taken as a tombstone, as
// Flink does). Results carry the input's timestamps. State is one row per
// live key, kept for ever unless StateRetention bounds it (a key then
// restarts with an Insert after d without a change).
func NormalizeChanges[K comparable, V comparable](ks *KeyedStream[K, Change[V]], opts ...RetentionOption) *Stream[Change[V]] {
	return engine.NormalizeChanges[K, V](ks, opts...)
}

// Table is a changelog materialized as a table in keyed state, one row per
// key (Kafka Streams' KTable): ToTable makes one, Changes is its
// changelog. Join a stream against it with TemporalJoin (the row valid at
// the event's time) or TemporalJoinProcTime (the row as it is now), and
// another table with JoinChanges.
type Table[K comparable, V comparable] = engine.Table[K, V]

// ToTable materializes a changelog or upsert stream as a table keyed like
// ks: an operator keeps the current row of every key (as NormalizeChanges,
// whose rules it follows) and emits the table's own changelog, in which
// every update carries its before-image and repeated values are dropped.
// Options are those of NormalizeChanges (Name, UID, Parallelism,
// StateRetention).
func ToTable[K comparable, V comparable](ks *KeyedStream[K, Change[V]], opts ...RetentionOption) *Table[K, V] {
	return engine.ToTable[K, V](ks, opts...)
}

// Change is one row of a changelog stream: a value and what it does to a
// view of the results (Flink's RowKind): Insert and UpdateAfter add it,
// UpdateBefore and Delete retract it.
type Change[T any] = engine.Change[T]

// Changes turns an append-only stream into a changelog of inserts.
func Changes[T any](s *Stream[T], opts ...OperatorOption) *Stream[Change[T]] {
	return engine.Changes[T](s, opts...)
}

// JoinChanges is the regular inner join of two changelog streams: it keeps
// each side as a multiset of values per key, and when a value is added
// (Insert, UpdateAfter) it emits an Insert for every match on the other
// side; when one is retracted (UpdateBefore, Delete) a Delete for every
// match. Applying the output to a view gives the join of the two input
// views at every moment. Retracting a value that is not there is ignored,
// as in Flink. State is kept for ever, as in Join.
func JoinChanges[K, L, R comparable, OUT any](left *KeyedStream[K, Change[L]], right *KeyedStream[K, Change[R]], fn func(key K, l L, r R) (OUT, bool), opts ...RetentionOption) *Stream[Change[OUT]] {
	return engine.JoinChanges[K, L, R, OUT](left, right, fn, opts...)
}

// KeyValue is a key with its value, such as the result of a group
// aggregate.
type KeyValue[K, V any] = engine.KeyValue[K, V]

// RetractingAggregateFunction is an aggregate that can also take a value
// back out, for aggregates over changelog streams (Flink's retract method).
type RetractingAggregateFunction[T, ACC, OUT any] = engine.RetractingAggregateFunction[T, ACC, OUT]

// AggregateChanges is a continuously updated aggregate per key over a
// changelog (SQL's GROUP BY without windows, Flink's GroupAggFunction). It
// emits its own changelog: an Insert with the first result of a key, then
// UpdateBefore(old) and UpdateAfter(new) whenever the result changes (not
// when it stays the same), and a Delete when every value of the key has
// been retracted. Retracting from a key with no values is ignored. Results
// carry the event time of the change that caused them. State is kept for
// ever. For an append-only stream, wrap it with Changes.
func AggregateChanges[K comparable, T, ACC any, OUT comparable](ks *KeyedStream[K, Change[T]], agg RetractingAggregateFunction[T, ACC, OUT], opts ...RetentionOption) *Stream[Change[KeyValue[K, OUT]]] {
	return engine.AggregateChanges[K, T, ACC, OUT](ks, agg, opts...)
}

// ExtremumAcc is the accumulator of MaxRetract and MinRetract: the count of
// every value, and the current extremum.
type ExtremumAcc[V cmp.Ordered] = engine.ExtremumAcc[V]

// MaxRetract is the largest fn(v) of the values present, for
// AggregateChanges (Flink's MaxWithRetractAggFunction). It keeps a count
// per distinct value, so that retracting the maximum finds the next one.
func MaxRetract[T any, V cmp.Ordered](fn func(T) V) RetractingAggregateFunction[T, ExtremumAcc[V], V] {
	return engine.MaxRetract[T, V](fn)
}

// MinRetract is the smallest fn(v) of the values present, for
// AggregateChanges.
func MinRetract[T any, V cmp.Ordered](fn func(T) V) RetractingAggregateFunction[T, ExtremumAcc[V], V] {
	return engine.MinRetract[T, V](fn)
}

// SumAcc is the accumulator of SumRetract and AvgRetract.
type SumAcc[N Number] = engine.SumAcc[N]

// SumRetract is the sum of fn(v) over the values present, for
// AggregateChanges.
func SumRetract[T any, N Number](fn func(T) N) RetractingAggregateFunction[T, SumAcc[N], N] {
	return engine.SumRetract[T, N](fn)
}

// AvgRetract is the mean of fn(v) over the values present, in the values'
// own type: for integers the quotient is truncated toward zero, as SQL's
// AVG of an integer column in Flink. Zero values give zero.
func AvgRetract[T any, N Number](fn func(T) N) RetractingAggregateFunction[T, SumAcc[N], N] {
	return engine.AvgRetract[T, N](fn)
}

// CountRetract counts the values present, for AggregateChanges.
func CountRetract[T any]() RetractingAggregateFunction[T, int64, int64] {
	return engine.CountRetract[T]()
}
