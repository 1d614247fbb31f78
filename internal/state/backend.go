package state

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"time"
)

// VoidNamespace is the namespace of plain keyed state, which has one value
// per key and no finer scope. It is empty, so it costs nothing in a table
// key and needs no hashing.
type VoidNamespace struct{}

// KeyGroupRange is the half-open range [Start, End) of key groups a backend
// holds: one subtask's share of the key space.
type KeyGroupRange struct{ Start, End int }

// Contains reports whether kg is in the range.
func (r KeyGroupRange) Contains(kg int) bool { return kg >= r.Start && kg < r.End }

// Len is the number of key groups in the range.
func (r KeyGroupRange) Len() int { return r.End - r.Start }

// String prints the range as [Start, End).
func (r KeyGroupRange) String() string { return fmt.Sprintf("[%d, %d)", r.Start, r.End) }

// Config is what every backend needs from the operator that owns it.
// Backends with more settings (a directory, a cache size) take them next to
// a Config.
type Config struct {
	// MaxParallelism is the number of key groups of the job: a key's group
	// is its hash modulo MaxParallelism.
	MaxParallelism int
	// KeyGroups are the key groups this backend holds. Accessing a key
	// outside them is a bug in the caller's routing and panics.
	KeyGroups KeyGroupRange
	// Now returns the processing time in unix ms. Backends read time only
	// through it (TTL), so that a job clock, or a test's fake clock, drives
	// expiry. It may be nil when no store uses TTL.
	Now func() int64
}

func (c *Config) validate() error {
	switch {
	case c.MaxParallelism < 1:
		return fmt.Errorf("state: max parallelism %d: must be at least 1", c.MaxParallelism)
	case c.KeyGroups.Start < 0 || c.KeyGroups.End > c.MaxParallelism || c.KeyGroups.Start > c.KeyGroups.End:
		return fmt.Errorf("state: key groups %v: not within [0, %d)", c.KeyGroups, c.MaxParallelism)
	}
	return nil
}

// Backend holds the keyed state of one operator subtask: its stores and
// timer queues, for the key groups of its range. Stores are created with
// the generic constructors of this package (NewValueStore, ...), which pick
// the backend's implementation: Go interface methods cannot have type
// parameters, so a backend cannot create typed stores itself.
//
// A backend is used by one goroutine, the subtask's.
type Backend interface {
	// Name identifies the implementation ("heap"), for logs and snapshot
	// metadata.
	Name() string
	// MaxParallelism is the number of key groups of the job.
	MaxParallelism() int
	// KeyGroups are the key groups held.
	KeyGroups() KeyGroupRange
	// Stores lists the stores and timer queues in creation order, so that
	// a snapshot can walk them.
	Stores() []Store
	// Close releases the backend's resources; its stores must not be used
	// afterwards.
	Close() error
}

// Kind is the kind of a store, recorded in snapshots so that a restore
// checks it is given the same kind of state under a name.
type Kind uint8

// The kinds of store.
const (
	KindValue Kind = iota + 1
	KindList
	KindMap
	KindReducing
	KindAggregating
	KindTimers
)

// String names the kind, for errors and snapshot listings.
func (k Kind) String() string {
	switch k {
	case KindValue:
		return "value"
	case KindList:
		return "list"
	case KindMap:
		return "map"
	case KindReducing:
		return "reducing"
	case KindAggregating:
		return "aggregating"
	case KindTimers:
		return "timers"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Store is what every store and timer queue has, whatever its types: what
// a backend needs to list it.
type Store interface {
	// Name is unique within the backend.
	Name() string
	Kind() Kind
}

// Options configure one store.
type Options struct {
	// TTL is how long a value lives after it was last written (or read,
	// with TTLUpdateOnRead), in processing time; 0 means forever. It is
	// kept at millisecond precision, rounded up. Expired values are never
	// returned; they are removed when accessed and by an incremental
	// cleanup that examines a few more slots of the store on every write
	// to it (state grows only by writes, so this bounds it).
	// In list and map stores each element or entry has its own expiry,
	// like Flink's.
	TTL time.Duration
	// TTLUpdateOnRead makes reads refresh the TTL too.
	TTLUpdateOnRead bool
}

// NoExpiry is the expiry time of entries of a store without TTL.
const NoExpiry = math.MaxInt64

// cleanupSize is how many table slots one write to a TTL store examines
// for incremental cleanup; at the heap's load factor that is 1 to 2.5
// entries.
const cleanupSize = 5

// Errors of store creation. Every error of a constructor names the state:
// `state "name": ...`.
var (
	// ErrDuplicateName: names identify state in snapshots, so one backend
	// cannot hold two stores of the same name.
	ErrDuplicateName = errors.New("duplicate name")
	// ErrUnsupportedBackend: the backend has no implementation of the store
	// kind asked for.
	ErrUnsupportedBackend = errors.New("unsupported backend")
)

// Entry is one entry of a store as a snapshot sees it: what it takes to put
// it back, possibly in a backend of another key-group range.
type Entry[K, N, V any] struct {
	// Hash is the key's hash: the entry's key group is Hash mod max
	// parallelism.
	Hash uint64
	Key  K
	NS   N
	// Value is the value; for a list store, one element (the elements of
	// a list come in order); for a map store, one map entry.
	Value V
	// Expires is when the entry expires (unix ms), NoExpiry without TTL.
	Expires int64
}

// KV is one entry of a map store's map.
type KV[MK, MV any] struct {
	Key   MK
	Value MV
}

// ValueStore holds one value per key and namespace.
type ValueStore[K, N comparable, V any] interface {
	Store
	// Get returns the value and whether it is set (and not expired).
	Get(hash uint64, key K, ns N) (V, bool)
	// Put sets the value.
	Put(hash uint64, key K, ns N, v V)
	// Delete removes the value.
	Delete(hash uint64, key K, ns N)
	// Entries lists the live entries of key group kg (none if it is not in
	// the backend's range).
	Entries(kg int) iter.Seq[Entry[K, N, V]]
}

// ReducingStore holds one value per key and namespace that Add folds new
// values into with a reduce function.
type ReducingStore[K, N comparable, V any] interface {
	Store
	// Get returns the reduced value and whether there is one.
	Get(hash uint64, key K, ns N) (V, bool)
	// Add reduces v into the value (or sets it, when there is none).
	Add(hash uint64, key K, ns N, v V)
	Delete(hash uint64, key K, ns N)
	Entries(kg int) iter.Seq[Entry[K, N, V]]
}

// Aggregator is the part of an aggregate function that aggregating state
// uses: weir.AggregateFunction satisfies it.
type Aggregator[IN, ACC, OUT any] interface {
	Create() ACC
	Add(acc ACC, in IN) ACC
	Result(acc ACC) OUT
}

// AggregatingStore holds one accumulator per key and namespace.
type AggregatingStore[K, N comparable, IN, ACC, OUT any] interface {
	Store
	// Get returns the aggregate's result and whether anything was added.
	Get(hash uint64, key K, ns N) (OUT, bool)
	// Add adds in to the accumulator, created first if there is none.
	Add(hash uint64, key K, ns N, in IN)
	Delete(hash uint64, key K, ns N)
	// Entries lists the accumulators of key group kg.
	Entries(kg int) iter.Seq[Entry[K, N, ACC]]
}

// ListStore holds a list per key and namespace.
type ListStore[K, N comparable, E any] interface {
	Store
	// Get returns the live elements, nil when there are none. The slice
	// belongs to the store: it is valid until the next change of this
	// key's list and must not be modified.
	Get(hash uint64, key K, ns N) []E
	// Add appends e.
	Add(hash uint64, key K, ns N, e E)
	// AddAll appends es.
	AddAll(hash uint64, key K, ns N, es []E)
	// Update replaces the list by a copy of es; an empty es deletes it.
	Update(hash uint64, key K, ns N, es []E)
	Delete(hash uint64, key K, ns N)
	// Entries lists the live elements of key group kg, a key's elements
	// together and in order.
	Entries(kg int) iter.Seq[Entry[K, N, E]]
}

// MapStore holds a map per key and namespace.
type MapStore[K, N, MK comparable, MV any] interface {
	Store
	Get(hash uint64, key K, ns N, mk MK) (MV, bool)
	Put(hash uint64, key K, ns N, mk MK, mv MV)
	// Remove deletes mk; the map is deleted with its last entry.
	Remove(hash uint64, key K, ns N, mk MK)
	Contains(hash uint64, key K, ns N, mk MK) bool
	// Len is the number of live entries.
	Len(hash uint64, key K, ns N) int
	// All iterates over the live entries. During the iteration, Put of an
	// existing map key and Remove of the current one are safe; other
	// changes may make it skip or repeat entries.
	All(hash uint64, key K, ns N) iter.Seq2[MK, MV]
	// Delete removes the whole map.
	Delete(hash uint64, key K, ns N)
	// Entries lists the live map entries of key group kg, a key's entries
	// together.
	Entries(kg int) iter.Seq[Entry[K, N, KV[MK, MV]]]
}

// Timer is a registered timer.
type Timer[K, N any] struct {
	// TS is when the timer fires (unix ms, event or processing time).
	TS int64
	// Seq is the registration order within the queue: it breaks ties
	// between timers of the same TS, and a restore re-registers timers in
	// Seq order to keep it.
	Seq  uint64
	Hash uint64
	Key  K
	NS   N
}

// TimerQueue holds timers ordered by time, at most one per key, namespace
// and time.
type TimerQueue[K, N comparable] interface {
	Store
	// Register adds a timer; it reports false, and changes nothing, if the
	// same timer is already registered.
	Register(hash uint64, key K, ns N, ts int64) bool
	// Delete removes a timer and reports whether it was registered.
	Delete(hash uint64, key K, ns N, ts int64) bool
	// Peek returns the earliest timer (smallest TS, then smallest Seq).
	Peek() (Timer[K, N], bool)
	// Pop removes and returns the earliest timer.
	Pop() (Timer[K, N], bool)
	// Len is the number of registered timers.
	Len() int
	// KeyGroup lists the timers of key group kg, in no particular order.
	KeyGroup(kg int) iter.Seq[Timer[K, N]]
}

// ttlMillis converts a TTL to milliseconds, rounding up.
func (o Options) ttlMillis() int64 {
	return int64((o.TTL + time.Millisecond - 1) / time.Millisecond)
}

func (o Options) validate(now func() int64) error {
	switch {
	case o.TTL < 0:
		return fmt.Errorf("TTL %v: must not be negative", o.TTL)
	case o.TTLUpdateOnRead && o.TTL == 0:
		return fmt.Errorf("TTL update on read without a TTL")
	case o.TTL > 0 && now == nil:
		return fmt.Errorf("TTL needs a clock (Config.Now)")
	}
	return nil
}

// named prefixes a constructor's error with the state's name.
func named(name string, err *error) {
	if *err != nil {
		*err = fmt.Errorf("state %q: %w", name, *err)
	}
}
