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
//   - The serializing backend (Serial) keeps entries as bytes in an
//     ordered key-value store (KVStore), with keys prefixed by key group
//     and state id, so that a key group is a contiguous key range, and
//     keys, namespaces and values encoded by codecs (codec.go). Package
//     pebblestate puts it over a Pebble database: state larger than
//     memory.
//
// Every store lists its live entries per key group (Entries, or KeyGroup
// for timers), with the key's hash and the expiry time. SnapshotKeyGroup
// encodes a key group of every store of a backend, and RestoreKeyGroups
// puts key groups back, into a backend of any kind and key-group range
// (snapshot.go describes the format): what checkpoints write and a
// restore, possibly at another parallelism, reads. The statetest package
// is a conformance suite that every backend must pass, snapshot round
// trips included.
//
// # Codecs
//
// Keys (stream keys, namespaces, map keys: types with a stable hash) encode
// canonically and prefix-free, integers as fixed-width big-endian (sign
// bit flipped) and strings as a 4-byte length and their bytes. Values may
// be any type but interfaces, channels and functions, unexported fields
// included; a type with encoding.BinaryMarshaler uses it. Snapshots record
// the layout of each store's encoding and a restore refuses another
// layout (the types changed).
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
