package engine

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/state"
)

// RuntimeContext is given to Opener.Open: it creates keyed state. It is
// valid during Open only, so that every state of an operator is known
// before the first record (a snapshot can then be restored into it); the
// state handles it creates live as long as the operator.
type RuntimeContext[K comparable] struct {
	// Subtask is the index of the subtask being opened, in [0,
	// Parallelism): its state holds the keys of its share of the key
	// groups.
	Subtask int
	// Parallelism is the operator's number of subtasks.
	Parallelism int

	keys    *currentKey[K]
	backend state.Backend
	err     error
	closed  bool
}

// currentKey is the key of the record or timer being processed; state
// handles read it so that Value and Update need no key argument.
type currentKey[K comparable] struct {
	key  K
	hash uint64
}

// void is the namespace of all state a process function creates: it is
// scoped to the key alone.
var void state.VoidNamespace

// StateOption configures one state handle (TTL, TTLUpdateOnRead). It is a
// type of its own, so a state option given to a job or an operator, or the
// other way round, does not compile.
type StateOption interface {
	applyState(*state.Options)
	String() string
}

type stateOption struct {
	name string
	fn   func(*state.Options)
}

func (o stateOption) applyState(c *state.Options) { o.fn(c) }
func (o stateOption) String() string              { return o.name }

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
	return stateOption{fmt.Sprintf("TTL(%v)", d), func(c *state.Options) { c.TTL = d }}
}

// TTLUpdateOnRead makes reads refresh the TTL as writes do, so that a value
// in use stays however old it is. It needs TTL.
func TTLUpdateOnRead() StateOption {
	return stateOption{"TTLUpdateOnRead", func(c *state.Options) { c.TTLUpdateOnRead = true }}
}

// begin checks that state is created during Open and collects its options.
func (rc *RuntimeContext[K]) begin(fn, name string, opts []StateOption) state.Options {
	if rc.closed {
		panic(fmt.Sprintf("weir: %s(%q) called outside Open", fn, name))
	}
	var o state.Options
	for _, opt := range opts {
		opt.applyState(&o)
	}
	return o
}

// check records an error of creating state (which names the state), for
// Open to return.
func (rc *RuntimeContext[K]) check(err error) {
	if err != nil {
		rc.err = errors.Join(rc.err, err)
	}
}

// ValueState is one value per key, scoped to the key of the record being
// processed.
type ValueState[K comparable, V any] struct {
	keys   *currentKey[K]
	st     state.ValueStore[K, state.VoidNamespace, V]
	groups state.KeyGroupRange // for Entries
}

// NewValueState creates a value state named name (unique within the
// operator). Call it from Open.
func NewValueState[V any, K comparable](rc *RuntimeContext[K], name string, opts ...StateOption) *ValueState[K, V] {
	o := rc.begin("NewValueState", name, opts)
	st, err := state.NewValueStore[K, state.VoidNamespace, V](rc.backend, name, o)
	rc.check(err)
	return &ValueState[K, V]{keys: rc.keys, st: st, groups: rc.backend.KeyGroups()}
}

// Value returns the current key's value and whether it is set.
func (s *ValueState[K, V]) Value() (V, bool) { return s.st.Get(s.keys.hash, s.keys.key, void) }

// Update sets the current key's value.
func (s *ValueState[K, V]) Update(v V) { s.st.Put(s.keys.hash, s.keys.key, void, v) }

// Clear removes the current key's value.
func (s *ValueState[K, V]) Clear() { s.st.Delete(s.keys.hash, s.keys.key, void) }

// ListState is a list per key: for what must be kept record by record, such
// as the records of a key buffered until a timer.
type ListState[K comparable, E any] struct {
	keys *currentKey[K]
	st   state.ListStore[K, state.VoidNamespace, E]
}

// NewListState creates a list state named name (unique within the
// operator). Call it from Open.
func NewListState[E any, K comparable](rc *RuntimeContext[K], name string, opts ...StateOption) *ListState[K, E] {
	o := rc.begin("NewListState", name, opts)
	st, err := state.NewListStore[K, state.VoidNamespace, E](rc.backend, name, o)
	rc.check(err)
	return &ListState[K, E]{keys: rc.keys, st: st}
}

// Get returns a copy of the current key's list, nil when it is empty.
func (s *ListState[K, E]) Get() []E {
	return slices.Clone(s.st.Get(s.keys.hash, s.keys.key, void))
}

// All iterates over the current key's list without copying it. Changing the
// list during the iteration does not change what the iteration yields.
func (s *ListState[K, E]) All() iter.Seq[E] {
	l := s.st.Get(s.keys.hash, s.keys.key, void)
	return func(yield func(E) bool) {
		for _, e := range l {
			if !yield(e) {
				return
			}
		}
	}
}

// Add appends e to the current key's list.
func (s *ListState[K, E]) Add(e E) { s.st.Add(s.keys.hash, s.keys.key, void, e) }

// AddAll appends es to the current key's list.
func (s *ListState[K, E]) AddAll(es []E) { s.st.AddAll(s.keys.hash, s.keys.key, void, es) }

// Update replaces the current key's list by (a copy of) es; an empty es
// clears it.
func (s *ListState[K, E]) Update(es []E) { s.st.Update(s.keys.hash, s.keys.key, void, es) }

// Clear removes the current key's list.
func (s *ListState[K, E]) Clear() { s.st.Delete(s.keys.hash, s.keys.key, void) }

// MapState is a map per key: for per-key data that is read and written an
// entry at a time. Map keys must have a stable hash, like stream keys
// (strings, numbers, arrays and structs of them): iteration order then
// depends only on the map's history, so a replay sees the same order.
type MapState[K comparable, MK comparable, MV any] struct {
	keys *currentKey[K]
	st   state.MapStore[K, state.VoidNamespace, MK, MV]
}

// NewMapState creates a map state named name (unique within the operator).
// Call it from Open.
func NewMapState[MK comparable, MV any, K comparable](rc *RuntimeContext[K], name string, opts ...StateOption) *MapState[K, MK, MV] {
	o := rc.begin("NewMapState", name, opts)
	st, err := state.NewMapStore[K, state.VoidNamespace, MK, MV](rc.backend, name, o)
	rc.check(err)
	return &MapState[K, MK, MV]{keys: rc.keys, st: st}
}

// Get returns the value of mk in the current key's map.
func (s *MapState[K, MK, MV]) Get(mk MK) (MV, bool) {
	return s.st.Get(s.keys.hash, s.keys.key, void, mk)
}

// Put sets the value of mk in the current key's map.
func (s *MapState[K, MK, MV]) Put(mk MK, mv MV) { s.st.Put(s.keys.hash, s.keys.key, void, mk, mv) }

// Remove deletes mk from the current key's map.
func (s *MapState[K, MK, MV]) Remove(mk MK) { s.st.Remove(s.keys.hash, s.keys.key, void, mk) }

// Contains reports whether the current key's map has mk.
func (s *MapState[K, MK, MV]) Contains(mk MK) bool {
	return s.st.Contains(s.keys.hash, s.keys.key, void, mk)
}

// All iterates over the current key's map. During the iteration, Put of a
// key already in the map and Remove of the current key are safe; other
// changes may make it skip or repeat entries.
func (s *MapState[K, MK, MV]) All() iter.Seq2[MK, MV] {
	return s.st.All(s.keys.hash, s.keys.key, void)
}

// Len is the number of entries of the current key's map.
func (s *MapState[K, MK, MV]) Len() int { return s.st.Len(s.keys.hash, s.keys.key, void) }

// Clear removes the current key's map.
func (s *MapState[K, MK, MV]) Clear() { s.st.Delete(s.keys.hash, s.keys.key, void) }

// ReducingState folds the values added for a key into one with a reduce
// function: a running result in constant space.
type ReducingState[K comparable, V any] struct {
	keys *currentKey[K]
	st   state.ReducingStore[K, state.VoidNamespace, V]
}

// NewReducingState creates a reducing state named name (unique within the
// operator); reduce must be associative and must not use state. Call it
// from Open.
func NewReducingState[V any, K comparable](rc *RuntimeContext[K], name string, reduce func(a, b V) V, opts ...StateOption) *ReducingState[K, V] {
	o := rc.begin("NewReducingState", name, opts)
	st, err := state.NewReducingStore[K, state.VoidNamespace, V](rc.backend, name, reduce, o)
	rc.check(err)
	return &ReducingState[K, V]{keys: rc.keys, st: st}
}

// Get returns the current key's reduced value and whether anything was
// added.
func (s *ReducingState[K, V]) Get() (V, bool) { return s.st.Get(s.keys.hash, s.keys.key, void) }

// Add reduces v into the current key's value (the first value is kept as
// it is).
func (s *ReducingState[K, V]) Add(v V) { s.st.Add(s.keys.hash, s.keys.key, void, v) }

// Clear removes the current key's value.
func (s *ReducingState[K, V]) Clear() { s.st.Delete(s.keys.hash, s.keys.key, void) }

// AggregatingState aggregates the values added for a key with an
// AggregateFunction, keeping only the accumulator, whose type it hides:
// the aggregates of windows (Count, Sum, Avg, ...) work per key too.
type AggregatingState[K comparable, IN, OUT any] struct {
	keys *currentKey[K]
	st   aggregatingStore[K, IN, OUT]
}

// aggregatingStore is state.AggregatingStore without the accumulator type.
type aggregatingStore[K comparable, IN, OUT any] interface {
	Get(hash uint64, key K, ns state.VoidNamespace) (OUT, bool)
	Add(hash uint64, key K, ns state.VoidNamespace, in IN)
	Delete(hash uint64, key K, ns state.VoidNamespace)
}

// NewAggregatingState creates an aggregating state named name (unique
// within the operator); agg must not use state (Merge is not used). Call it
// from Open.
func NewAggregatingState[IN, ACC, OUT any, K comparable](rc *RuntimeContext[K], name string, agg AggregateFunction[IN, ACC, OUT], opts ...StateOption) *AggregatingState[K, IN, OUT] {
	o := rc.begin("NewAggregatingState", name, opts)
	st, err := state.NewAggregatingStore[K, state.VoidNamespace, IN, ACC, OUT](rc.backend, name, agg, o)
	rc.check(err)
	return &AggregatingState[K, IN, OUT]{keys: rc.keys, st: st}
}

// Get returns the result of the current key's aggregate and whether
// anything was added.
func (s *AggregatingState[K, IN, OUT]) Get() (OUT, bool) {
	return s.st.Get(s.keys.hash, s.keys.key, void)
}

// Add adds in to the current key's aggregate.
func (s *AggregatingState[K, IN, OUT]) Add(in IN) { s.st.Add(s.keys.hash, s.keys.key, void, in) }

// Clear removes the current key's aggregate.
func (s *AggregatingState[K, IN, OUT]) Clear() { s.st.Delete(s.keys.hash, s.keys.key, void) }

// ValuesInPlace reports whether the values of this operator's keyed state
// live in memory as they are (the HeapState backend): a ValueState then
// returns the stored value itself, so a pointer value changed in place
// needs no Update. With PebbleState values are copies and every change
// needs Update. Call it from Open. Operators built on Process (package
// cep) use it to skip a hash lookup per record.
func (rc *RuntimeContext[K]) ValuesInPlace() bool {
	_, ok := rc.backend.(*state.Heap)
	return ok
}
