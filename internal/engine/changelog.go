package engine

// Tables from changelogs. A table is a changelog read as the state it
// builds: one row per key, the latest value. Two shapes of input reach
// weir: upsert streams (each record is the key's new value, or a
// tombstone), as Kafka's compacted topics and upsert sinks carry them, and
// full changelogs with before-images (Debezium, AggregateChanges). The
// operators here turn the first into the second (Flink's
// ChangelogNormalize) and keep the table in keyed state (Kafka Streams'
// KTable).

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
	rest, ttl := retention(ks.src.job, "NormalizeChanges", opts)
	return ProcessWith(ks, func() KeyedProcessFunction[K, Change[V], Change[V]] {
		return &normalize[K, V]{ttl: ttl}
	}, append([]OperatorOption{Name("NormalizeChanges")}, rest...)...)
}

type normalize[K comparable, V comparable] struct {
	ttl []StateOption
	row *ValueState[K, V]
}

func (f *normalize[K, V]) Open(rc *RuntimeContext[K]) error {
	f.row = NewValueState[V](rc, "row", f.ttl...)
	return nil
}

func (f *normalize[K, V]) ProcessElement(ctx *KeyedContext[K, Change[V]], in Change[V]) error {
	old, ok := f.row.Value()
	if !in.Adds() {
		if ok {
			ctx.Emit(Change[V]{Delete, old})
			f.row.Clear()
		}
		return nil
	}
	switch {
	case !ok:
		ctx.Emit(Change[V]{Insert, in.Value})
	case old == in.Value:
		return nil
	default:
		ctx.Emit(Change[V]{UpdateBefore, old})
		ctx.Emit(Change[V]{UpdateAfter, in.Value})
	}
	f.row.Update(in.Value)
	return nil
}

// Table is a changelog materialized as a table in keyed state, one row per
// key (Kafka Streams' KTable): ToTable makes one, Changes is its
// changelog. Join a stream against it with TemporalJoin (the row valid at
// the event's time) or TemporalJoinProcTime (the row as it is now), and
// another table with JoinChanges.
type Table[K comparable, V comparable] struct {
	changes *KeyedStream[K, Change[V]]
}

// ToTable materializes a changelog or upsert stream as a table keyed like
// ks: an operator keeps the current row of every key (as NormalizeChanges,
// whose rules it follows) and emits the table's own changelog, in which
// every update carries its before-image and repeated values are dropped.
// Options are those of NormalizeChanges (Name, UID, Parallelism,
// StateRetention).
func ToTable[K comparable, V comparable](ks *KeyedStream[K, Change[V]], opts ...RetentionOption) *Table[K, V] {
	s := NormalizeChanges(ks, append([]RetentionOption{Name("ToTable")}, opts...)...)
	return &Table[K, V]{changes: &KeyedStream[K, Change[V]]{src: s, key: ks.key, hash: ks.hash}}
}

// Changes is the table's changelog, keyed by the table's key: Insert for a
// new row, UpdateBefore(old) then UpdateAfter(new) for a changed one,
// Delete(old) for a removed one.
func (t *Table[K, V]) Changes() *KeyedStream[K, Change[V]] { return t.changes }

// Rows is the table's changelog as key/value pairs, for sinks that write a
// table by key (an upsert sink applies Insert and UpdateAfter as upserts
// and Delete as a delete of the key, and may ignore UpdateBefore).
func (t *Table[K, V]) Rows(opts ...OperatorOption) *Stream[Change[KeyValue[K, V]]] {
	key := t.changes.key
	return Map(t.changes.src, func(c Change[V]) Change[KeyValue[K, V]] {
		return Change[KeyValue[K, V]]{c.Kind, KeyValue[K, V]{key(c), c.Value}}
	}, append([]OperatorOption{Name("TableRows")}, opts...)...)
}
