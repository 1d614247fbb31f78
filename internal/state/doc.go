// Package state holds the keyed state and timers of operators, behind a
// backend abstraction.
//
// # Scope
//
// Every value is scoped by (key group, key, namespace, state name), like
// Flink's: the state name picks a store, the key and namespace an entry in
// it, and the key group (the key's hash modulo the max parallelism, see
// package keygroup) is the unit in which state is snapshotted and moved
// between subtasks on rescaling. Plain keyed state uses VoidNamespace; a
// window operator uses the window as namespace. Callers pass the key's hash
// with the key: it was computed once by the partitioner and travels with
// the record, and nothing here hashes a key again.
//
// # Backends and stores
//
// A Backend holds one operator subtask's state for its key-group range.
// Stores are created by generic constructors (NewValueStore, NewListStore,
// NewMapStore, NewReducingStore, NewAggregatingStore, NewTimerQueue) that
// switch on the backend, because Go interface methods cannot have type
// parameters. The store interfaces are typed and backend-neutral:
//
//   - The heap backend (Heap) keeps typed Go values in open-addressing
//     tables, one per key group and store: no serialization, and value,
//     reducing and aggregating accesses do not allocate.
//   - A serializing backend (Pebble, larger than memory) will implement the
//     same interfaces with codecs for K, N and V and keys prefixed by key
//     group, so that a key group is a contiguous key range; the
//     constructors gain a case for it, and nothing above this package
//     changes.
//
// Every store lists its live entries per key group (Entries, or KeyGroup
// for timers), with the key's hash and the expiry time: what a snapshot
// writes and a restore, possibly at another parallelism, puts back. The
// statetest package is a conformance suite that every backend must pass.
//
// # TTL
//
// With Options.TTL, a value expires that long (processing time) after it was
// written, or read too with TTLUpdateOnRead. Expired values are never
// returned. They are removed lazily, when accessed, and by an incremental
// cleanup: every write to a TTL store (a read too, with TTLUpdateOnRead)
// examines a few more slots of it from a cursor that cycles through the
// store. State only grows by writes, so this bounds it; Flink's heap backend
// cleans up the same way, on reads as well, which costs cache misses on
// the hot path for little gain. List elements and map
// entries expire one by one. Time comes only from Config.Now, the job's
// clock: nothing here reads the wall clock.
//
// # Timers
//
// A TimerQueue orders timers by time, then registration order, and holds
// at most one timer per (key, namespace, time). Each timer carries its key's
// hash, hence its key group, and the queue lists the timers of a key group
// for snapshots.
//
// # Concurrency
//
// A backend and its stores belong to one goroutine, the subtask's. Functions
// passed to stores (reduce, aggregate) must not access state.
package state
