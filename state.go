package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// RuntimeContext is given to Opener.Open: it creates keyed state. It is
// valid during Open only, so that every state of an operator is known
// before the first record (a snapshot can then be restored into it); the
// state handles it creates live as long as the operator.
type RuntimeContext[K comparable] = engine.RuntimeContext[K]

// StateOption configures one state handle (TTL, TTLUpdateOnRead). It is a
// type of its own, so a state option given to a job or an operator, or the
// other way round, does not compile.
type StateOption = engine.StateOption

// TTL makes values expire d after they were last written, in processing
// time (the job's Clock), as Flink's StateTtlConfig does: an expired value
// is never returned, and it is removed when accessed or, for keys that are
// no longer accessed, by an incremental cleanup that examines a few more
// entries on every write of the state. Elements of a ListState and entries
// of a MapState expire one by one. Precision is a millisecond.
//
// TTL bounds the state of keys that go quiet without a timer per key.
// Because it runs on processing time, results that depend on it are not
// reproducible by replaying the input.
func TTL(d time.Duration) StateOption {
	return engine.TTL(d)
}

// TTLUpdateOnRead makes reads refresh the TTL as writes do, so that a value
// in use stays however old it is. It needs TTL.
func TTLUpdateOnRead() StateOption {
	return engine.TTLUpdateOnRead()
}

// ValueState is one value per key, scoped to the key of the record being
// processed.
type ValueState[K comparable, V any] = engine.ValueState[K, V]

// NewValueState creates a value state named name (unique within the
// operator). Call it from Open.
func NewValueState[V any, K comparable](rc *RuntimeContext[K], name string, opts ...StateOption) *ValueState[K, V] {
	return engine.NewValueState[V, K](rc, name, opts...)
}

// ListState is a list per key: for what must be kept record by record, such
// as the records of a key buffered until a timer.
type ListState[K comparable, E any] = engine.ListState[K, E]

// NewListState creates a list state named name (unique within the
// operator). Call it from Open.
func NewListState[E any, K comparable](rc *RuntimeContext[K], name string, opts ...StateOption) *ListState[K, E] {
	return engine.NewListState[E, K](rc, name, opts...)
}

// MapState is a map per key: for per-key data that is read and written an
// entry at a time. Map keys must have a stable hash, like stream keys
// (strings, numbers, arrays and structs of them): iteration order then
// depends only on the map's history, so a replay sees the same order.
type MapState[K comparable, MK comparable, MV any] = engine.MapState[K, MK, MV]

// NewMapState creates a map state named name (unique within the operator).
// Call it from Open.
func NewMapState[MK comparable, MV any, K comparable](rc *RuntimeContext[K], name string, opts ...StateOption) *MapState[K, MK, MV] {
	return engine.NewMapState[MK, MV, K](rc, name, opts...)
}

// ReducingState folds the values added for a key into one with a reduce
// function: a running result in constant space.
type ReducingState[K comparable, V any] = engine.ReducingState[K, V]

// NewReducingState creates a reducing state named name (unique within the
// operator); reduce must be associative and must not use state. Call it
// from Open.
func NewReducingState[V any, K comparable](rc *RuntimeContext[K], name string, reduce func(a, b V) V, opts ...StateOption) *ReducingState[K, V] {
	return engine.NewReducingState[V, K](rc, name, reduce, opts...)
}

// AggregatingState aggregates the values added for a key with an
// AggregateFunction, keeping only the accumulator, whose type it hides:
// the aggregates of windows (Count, Sum, Avg, ...) work per key too.
type AggregatingState[K comparable, IN, OUT any] = engine.AggregatingState[K, IN, OUT]

// NewAggregatingState creates an aggregating state named name (unique
// within the operator); agg must not use state (Merge is not used). Call it
// from Open.
func NewAggregatingState[IN, ACC, OUT any, K comparable](rc *RuntimeContext[K], name string, agg AggregateFunction[IN, ACC, OUT], opts ...StateOption) *AggregatingState[K, IN, OUT] {
	return engine.NewAggregatingState[IN, ACC, OUT, K](rc, name, agg, opts...)
}
