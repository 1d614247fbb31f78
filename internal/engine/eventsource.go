package engine

import (
	"fmt"
	"time"
)

// Event sourcing keeps the events (what happened) as the source of truth
// and derives state from them: the state of an entity is its events
// integrated over time. In weir the event log is a source (the embedded
// log, Kafka) read from offset 0, Fold integrates it per key, and the
// changelog Fold emits feeds a read model (an upsert sink, a Table, a
// join). Three habits follow:
//
//   - A view is rebuilt, not migrated: to change how state is derived, run
//     the new code over the log from offset 0 with a new UID (no state to
//     restore) and switch readers when it has caught up.
//   - Events are never erased or edited: a mistake is corrected by a
//     compensating event (a refund for a charge, an un-follow for a
//     follow) that fn folds like any other, so every view, old or
//     rebuilt, sees the same history.
//   - fn is deterministic (no clock, no I/O), so that replays agree.

// Fold folds a keyed stream of events into one state per key, the state
// being the events integrated over time (event sourcing's projection,
// Kafka Streams' aggregate of a KStream): for each event, fn gets the
// key's state (empty before its first event, or after fn ended it) and
// returns the new state, or an empty Opt to end the entity. Fold emits the
// changes of the state as a changelog of key/value pairs: an Insert when a
// state begins, UpdateBefore(old) and UpdateAfter(new) after every event
// that keeps it, a Delete(old) when fn ends it. Results carry the event's
// timestamp. Apply the changelog to a table (ToTable, an upsert sink) to
// get the read model.
//
// Events of a key are folded in their arrival order, which is the log's
// order within a partition when the stream is keyed as the log is
// partitioned. An error from fn fails the job, naming the key and the
// event's time; events that may legitimately be refused (a withdrawal
// beyond the balance) should be folded into a state that records the
// refusal, not returned as errors. State is one S per live key, kept for
// ever unless StateRetention bounds it.
func Fold[K comparable, E, S any](ks *KeyedStream[K, E], fn func(key K, state Opt[S], e E) (Opt[S], error), opts ...RetentionOption) *Stream[Change[KeyValue[K, S]]] {
	rest, ttl := retention(ks.src.job, "Fold", opts)
	return ProcessWith(ks, func() KeyedProcessFunction[K, E, Change[KeyValue[K, S]]] {
		return &fold[K, E, S]{fn: fn, ttl: ttl}
	}, append([]OperatorOption{Name("Fold")}, rest...)...)
}

type fold[K comparable, E, S any] struct {
	fn  func(K, Opt[S], E) (Opt[S], error)
	ttl []StateOption
	st  *ValueState[K, S]
}

func (f *fold[K, E, S]) Open(rc *RuntimeContext[K]) error {
	f.st = NewValueState[S](rc, "state", f.ttl...)
	return nil
}

func (f *fold[K, E, S]) ProcessElement(ctx *KeyedContext[K, Change[KeyValue[K, S]]], e E) error {
	key := ctx.Key()
	old, had := f.st.Value()
	next, err := f.fn(key, Opt[S]{old, had}, e)
	if err != nil {
		return fmt.Errorf("weir: Fold: key %v, event at %s: %w", key, ctx.Timestamp().Format(time.RFC3339Nano), err)
	}
	switch {
	case !next.OK && had:
		ctx.Emit(Change[KeyValue[K, S]]{Delete, KeyValue[K, S]{key, old}})
		f.st.Clear()
	case next.OK && !had:
		ctx.Emit(Change[KeyValue[K, S]]{Insert, KeyValue[K, S]{key, next.V}})
		f.st.Update(next.V)
	case next.OK:
		ctx.Emit(Change[KeyValue[K, S]]{UpdateBefore, KeyValue[K, S]{key, old}})
		ctx.Emit(Change[KeyValue[K, S]]{UpdateAfter, KeyValue[K, S]{key, next.V}})
		f.st.Update(next.V)
	}
	return nil
}
