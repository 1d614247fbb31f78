package weir

import (
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// Windows describes how a keyed stream is cut into windows. Build one with
// Tumbling or Hopping.
//
// A window [start, end) holds events with start <= t < end and fires when
// the watermark reaches end-1 (Flink's window.maxTimestamp()). Window
// boundaries are aligned to the epoch (plus an optional offset), so
// Tumbling(time.Minute) windows start on the minute, as in Flink and Beam.
type Windows = engine.Windows

// Tumbling windows of a fixed size that do not overlap: [k·size, (k+1)·size).
// Flink: TumblingEventTimeWindows; Beam: FixedWindows.
func Tumbling(size time.Duration) Windows {
	return engine.Tumbling(size)
}

// Hopping windows of a fixed size that start every slide; an event belongs
// to ⌈size/slide⌉ windows. Flink: SlidingEventTimeWindows; Beam:
// SlidingWindows.
func Hopping(size, slide time.Duration) Windows {
	return engine.Hopping(size, slide)
}

// Session windows per key: each event opens [t, t+gap); windows of the same
// key that overlap or touch merge, so events up to and including gap apart
// share a session (Flink's merging rule). Aggregates merge their
// accumulators. Flink: EventTimeSessionWindows; Beam: Sessions.
func Session(gap time.Duration) Windows {
	return engine.Session(gap)
}

// Global puts all of a key's events in one window that never ends. It fires
// only by its trigger (CountTrigger, ProcessingTimeTrigger, early firings)
// and at the end of a bounded input. Flink: GlobalWindows; Beam:
// GlobalWindows.
func Global() Windows {
	return engine.Global()
}

// Sliding windows have no fixed edges: for each event at t, the window is
// the same key's events in (t-d, t], and its result is emitted once the
// watermark passes t, as a WindowResult whose End is t and Start is t-d.
// An event later than the watermark is dropped. This is SQL's OVER (RANGE
// BETWEEN d PRECEDING AND CURRENT ROW), Flink's over window; Beam has no
// direct equivalent.
func Sliding(d time.Duration) Windows {
	return engine.Sliding(d)
}

// ChangeKind says what a result row means to a consumer that keeps a view of
// the results, like Flink's RowKind.
type ChangeKind = engine.ChangeKind

const (
	// Insert is a new result.
	Insert = engine.Insert
	// UpdateBefore retracts a result emitted earlier.
	UpdateBefore = engine.UpdateBefore
	// UpdateAfter is the new value of a result emitted earlier.
	UpdateAfter = engine.UpdateAfter
	// Delete removes a result emitted earlier.
	Delete = engine.Delete
)

// WindowResult is the result of one window for one key.
type WindowResult[K comparable, V any] = engine.WindowResult[K, V]

// WindowedStream is a keyed stream cut into windows; aggregate it with
// Aggregate or Reduce.
type WindowedStream[K comparable, T any] = engine.WindowedStream[K, T]

// Window cuts a keyed stream into windows.
func Window[K comparable, T any](ks *KeyedStream[K, T], w Windows, opts ...WindowOption) *WindowedStream[K, T] {
	return engine.Window[K, T](ks, w, opts...)
}

// WindowTrigger says when a window emits its result. Build one with
// EventTimeTrigger, ProcessingTimeTrigger or CountTrigger and pass it to
// Window with the Trigger option.
type WindowTrigger = engine.WindowTrigger

// EventTimeTrigger fires a window when the watermark reaches its end-1 (the
// default). With AllowedLateness, each late event that is still accepted
// fires the window again (Flink's EventTimeTrigger), or, with
// WithLateFirings, the late events are gathered and fired every interval.
func EventTimeTrigger() WindowTrigger {
	return engine.EventTimeTrigger()
}

// ProcessingTimeTrigger fires a window when the processing time (the job's
// clock) reaches the window's end-1, then discards its state: use it with
// NoWatermarks, whose timestamps are ingestion times, for processing-time
// windows. Unlike Flink, windows still pending fire at the end of a bounded
// input.
func ProcessingTimeTrigger() WindowTrigger {
	return engine.ProcessingTimeTrigger()
}

// CountTrigger fires a window every n events added to it. Unlike Flink, a
// window with events not yet fired fires at the end of a bounded input.
func CountTrigger(n int64) WindowTrigger {
	return engine.CountTrigger(n)
}

// WindowInfo is the bounds of a window, for ProcessWindow.
type WindowInfo = engine.WindowInfo

// LateEvent is an event dropped by a windowed operator because every window
// it belongs to had fired and passed its allowed lateness.
type LateEvent[K comparable, T any] = engine.LateEvent[K, T]

// Aggregate aggregates each window per key with agg and emits one
// WindowResult per key and window when the watermark passes the window's
// end. Events that arrive after their window fired are dropped and counted
// in late_records_dropped_total.
//
// On PebbleState, the windows and their timers are keyed state in Pebble
// (see PebbleState); the key and accumulator types (with another trigger
// or Global windows, the result type too; Sliding windows: the input type
// instead of the accumulator's) must then be encodable.
func Aggregate[K comparable, T, ACC, OUT any](ws *WindowedStream[K, T], agg AggregateFunction[T, ACC, OUT], opts ...WindowOption) *Stream[WindowResult[K, OUT]] {
	return engine.Aggregate[K, T, ACC, OUT](ws, agg, opts...)
}

// LateEvents returns the events that the windowed aggregation producing
// results dropped because they were too late (after the window fired and
// its allowed lateness passed), with the window each missed and the
// watermark at its arrival. T is the window's input type, which Go cannot
// infer from results: weir.LateEvents[Click](counts).
func LateEvents[T any, K comparable, V any](results *Stream[WindowResult[K, V]]) *Stream[LateEvent[K, T]] {
	return engine.LateEvents[T, K, V](results)
}

// ProcessWindow calls fn once per window firing with all of the window's
// events (in arrival order) and its bounds; fn emits any number of records.
// It supports every window kind but Sliding, triggers and allowed lateness
// (a late firing calls fn again with all events so far). Prefer Aggregate
// when an incremental aggregate will do: ProcessWindow keeps every event.
func ProcessWindow[K comparable, T, OUT any](ws *WindowedStream[K, T], fn func(key K, w WindowInfo, events []T, emit func(OUT)) error, opts ...WindowOption) *Stream[OUT] {
	return engine.ProcessWindow[K, T, OUT](ws, fn, opts...)
}
