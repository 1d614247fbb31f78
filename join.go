package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// CoGroup cuts both keyed streams into the same windows and calls fn once
// per key and window that has events on either side, with the events of
// each side in arrival order (Flink's coGroup). A side without events in
// the window gets an empty slice, so outer joins are built with CoGroup.
// Options are those of Window (AllowedLateness, Trigger) and of any
// operator (Name, UID, Parallelism); events late for every window they
// belong to are dropped and counted, as in a windowed aggregate. fn may
// keep the slices it is given and append to them; a kept slice may keep
// alive memory that other calls' slices were cut from (up to 16 KiB).
func CoGroup[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], w Windows, fn func(key K, win WindowInfo, l []L, r []R, emit func(OUT)) error, opts ...WindowOption) *Stream[OUT] {
	return engine.CoGroup[K, L, R, OUT](left, right, w, fn, opts...)
}

// WindowJoin is the inner join of two keyed streams over windows (Flink's
// DataStream join ... window ... apply): fn is called for every pair of a
// left and a right event with the same key in the same window. A pair in
// several hopping windows is joined once per window. Results carry the
// window's last millisecond as their timestamp.
func WindowJoin[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], w Windows, fn func(key K, win WindowInfo, l L, r R) OUT, opts ...WindowOption) *Stream[OUT] {
	return engine.WindowJoin[K, L, R, OUT](left, right, w, fn, opts...)
}

// IntervalJoin joins each left event at time t with every right event of
// the same key whose time lies in [t+lower, t+upper], bounds included
// (Flink's intervalJoin ... between(lower, upper)). lower must not exceed
// upper; both may be negative. A pair is emitted once, when its second
// event arrives, stamped with the later of the two times.
//
// Events are buffered in keyed state until the watermark passes the last
// time they can still match, then removed by an event-time timer. An event
// below the watermark when it arrives is late: it is dropped and counted
// (weir_late_records_dropped_total), as in Flink. weir removes a left event
// only once the watermark is beyond t+upper (Flink removes it at t+upper,
// which can miss a right event at exactly t+upper that is not late).
func IntervalJoin[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], lower, upper time.Duration, fn func(key K, l L, r R) OUT, opts ...OperatorOption) *Stream[OUT] {
	return engine.IntervalJoin[K, L, R, OUT](left, right, lower, upper, fn, opts...)
}

// Join is the regular inner join of two keyed streams (a SQL join on the
// key without time bounds): every left and right event with the same key
// for which pred returns true yields fn's result once, when the later of
// the two arrives, stamped with the later of their event times. Both sides
// are kept in keyed state for ever (Flink's default without a state TTL)
// unless StateRetention bounds them, so use it where keys are bounded or
// the job is bounded; WindowJoin and IntervalJoin bound their state by
// event time. The output is append-only; for
// inputs with retractions use JoinChanges.
func Join[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], fn func(key K, l L, r R) (OUT, bool), opts ...RetentionOption) *Stream[OUT] {
	return engine.Join[K, L, R, OUT](left, right, fn, opts...)
}

// JoinWith is Join with a function made once per parallel subtask by
// newFn (as MapWith and FlatMapWith), so that it may keep memory of its
// own between calls, such as a buffer it reuses.
func JoinWith[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], newFn func() func(key K, l L, r R) (OUT, bool), opts ...RetentionOption) *Stream[OUT] {
	return engine.JoinWith[K, L, R, OUT](left, right, newFn, opts...)
}

// OuterJoinKind says which sides of an outer join keep their events that
// found no partner.
type OuterJoinKind = engine.OuterJoinKind

const (
	// LeftOuter keeps left events without a partner (SQL's LEFT OUTER JOIN).
	LeftOuter = engine.LeftOuter
	// RightOuter keeps right events without a partner.
	RightOuter = engine.RightOuter
	// FullOuter keeps the events of both sides without a partner.
	FullOuter = engine.FullOuter
)

// OuterIntervalJoin is IntervalJoin that also keeps the events that found
// no partner (SQL's LEFT, RIGHT and FULL OUTER interval joins, Flink's
// TimeIntervalJoin). Pairs are emitted as IntervalJoin emits them, with
// both sides set. An event of a kept side that has joined nothing by the
// time no partner can come any more is emitted once with the other side
// empty: a left event at t when the watermark passes t+upper, a right
// event at t when it passes t-lower. The row carries that last time a
// partner could have had (for a left event, the later of t and t+upper),
// so it is not late for the windows downstream.
//
// State and lateness are as in IntervalJoin: events stay in keyed state,
// with a flag saying whether they have joined, until an event-time timer
// removes them; an event below the watermark when it arrives is dropped
// and counted in weir_late_records_dropped_total (Flink's SQL join emits a
// late event of an outer side at once with the other side empty instead).
func OuterIntervalJoin[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], lower, upper time.Duration, kind OuterJoinKind, fn func(key K, l Opt[L], r Opt[R]) OUT, opts ...OperatorOption) *Stream[OUT] {
	return engine.OuterIntervalJoin[K, L, R, OUT](left, right, lower, upper, kind, fn, opts...)
}

// TemporalJoin joins each probe event with the version of its key's row
// that was valid at the probe's event time (Flink's event-time temporal
// join, `JOIN versions FOR SYSTEM_TIME AS OF probe.t`): versions is the
// changelog of a table whose rows are identified by the key, stamped with
// the event time at which each change took effect. The version valid at t
// is the value of the latest change at or before t: an Insert or
// UpdateAfter sets it, a Delete or UpdateBefore ends it. fn gets the
// probe and that version, or an empty Opt when there was none (the
// probe is always emitted, as SQL's LEFT JOIN of a temporal table; filter
// afterwards for the inner join). Changes of one key at the same time
// count in their arrival order, so an UpdateBefore/UpdateAfter pair
// leaves the new value.
//
// A probe waits in keyed state until the watermark (the smaller of both
// inputs') passes its time, so that every version at or before it has
// arrived; the result then does not depend on how the two inputs
// interleave. Results carry the probe's time. A probe below the
// watermark when it arrives is late: it is dropped and counted in
// weir_late_records_dropped_total. Versions are kept until the watermark
// makes them useless: of the versions at or before the watermark, only
// the one still valid stays, and none when that is a deletion, so state
// is the table's current rows plus what changed within the watermark's
// lag. A late version (below the watermark) still counts for the probes
// not yet joined.
func TemporalJoin[K comparable, L, R, OUT any](probe *KeyedStream[K, L], versions *KeyedStream[K, Change[R]], fn func(key K, l L, r Opt[R]) OUT, opts ...OperatorOption) *Stream[OUT] {
	return engine.TemporalJoin[K, L, R, OUT](probe, versions, fn, opts...)
}

// TemporalJoinProcTime joins each probe event with the current version of
// its key's row when the probe arrives (Flink's processing-time temporal
// join, `FOR SYSTEM_TIME AS OF PROCTIME()`; Kafka Streams' KStream-KTable
// join): for streams without meaningful event time, or where "the table
// as it is now" is the intended answer. versions is applied as it
// arrives, one row per key (an Insert or UpdateAfter sets it, a Delete or
// UpdateBefore clears it), and only the current row is kept. fn gets an
// empty Opt when the key has no row. Results carry the probe's time and
// depend on how the two inputs interleave: a replay may join differently.
func TemporalJoinProcTime[K comparable, L, R, OUT any](probe *KeyedStream[K, L], versions *KeyedStream[K, Change[R]], fn func(key K, l L, r Opt[R]) OUT, opts ...OperatorOption) *Stream[OUT] {
	return engine.TemporalJoinProcTime[K, L, R, OUT](probe, versions, fn, opts...)
}
