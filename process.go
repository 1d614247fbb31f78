package weir

import (
	"github.com/weirstream/weir/internal/engine"
)

// KeyedProcessFunction handles the records of a keyed stream one at a time,
// with keyed state (NewValueState, NewListState, NewMapState,
// NewReducingState, NewAggregatingState) and timers in event time and in
// processing time. It may also implement Opener (to create its state) and
// TimerHandler (to be called back by its timers).
//
// One instance serves every key of a subtask: keep per-key data in state
// handles, not in plain fields. With parallelism above 1, each subtask uses
// the same instance, so implement Opener to create state per subtask: Open
// is called once per subtask with that subtask's RuntimeContext, and the
// instance must not share mutable fields across subtasks (use ProcessWith
// to get a fresh instance per subtask).
type KeyedProcessFunction[K comparable, IN, OUT any] = engine.KeyedProcessFunction[K, IN, OUT]

// Opener is implemented by process functions that create state. State is
// created in Open, once per subtask, and not while records flow, so that
// the set of states of an operator is fixed: a snapshot can then be
// restored into it. Creating two states of the same name makes Open fail.
type Opener[K comparable] = engine.Opener[K]

// TimerHandler is implemented by process functions that use timers.
// OnTimer runs with ctx's key set to the timer's key; ctx.TimeDomain tells
// whether an event-time or a processing-time timer fired.
type TimerHandler[K comparable, OUT any] = engine.TimerHandler[K, OUT]

// ProcessFunc adapts a function to a stateless KeyedProcessFunction.
type ProcessFunc[K comparable, IN, OUT any] = engine.ProcessFunc[K, IN, OUT]

// Process runs a process function over a keyed stream. The function is
// shared by all subtasks; see ProcessWith for one instance per subtask.
//
// Timers: an event-time timer fires once the watermark reaches its time; at
// the end of a bounded input (the final, maximal watermark) every pending
// event-time timer fires. A processing-time timer fires once the job's
// clock reaches its time, checked after every input batch and while the
// task waits for input; at the end of input pending processing-time timers
// are dropped without firing, as in Flink, since the input they were
// waiting for will never come.
//
// Checkpoints: the function's state, with TTL expiry times, its timers of
// both domains, in registration order, and the watermark are snapshotted
// per key group, so that a restore may run at another parallelism. A
// restore puts each state back into the state of the same name created by
// Open (state in the snapshot that Open does not create fails the
// restore). State lives in the job's state backend: HeapState (default)
// or PebbleState.
func Process[K comparable, T, OUT any](ks *KeyedStream[K, T], fn KeyedProcessFunction[K, T, OUT], opts ...OperatorOption) *Stream[OUT] {
	return engine.Process[K, T, OUT](ks, fn, opts...)
}

// ProcessWith is Process with a factory called once per subtask, so that a
// function keeping state handles in its fields gets one instance per
// subtask.
func ProcessWith[K comparable, T, OUT any](ks *KeyedStream[K, T], newFn func() KeyedProcessFunction[K, T, OUT], opts ...OperatorOption) *Stream[OUT] {
	return engine.ProcessWith[K, T, OUT](ks, newFn, opts...)
}

// TimeDomain is the clock a timer runs on.
type TimeDomain = engine.TimeDomain

const (
	// EventTime timers fire when the watermark reaches their time.
	EventTime = engine.EventTime
	// ProcessingTime timers fire when the job's clock reaches their time.
	ProcessingTime = engine.ProcessingTime
)

// KeyedContext is what a process function sees of the record or timer being
// processed.
type KeyedContext[K comparable, OUT any] = engine.KeyedContext[K, OUT]

// WatermarkHandler is implemented by process functions that act when the
// watermark advances rather than through a timer per key: an operator that
// keeps its own index of which keys have work at which time (package cep
// sweeps the keys whose buffered events the watermark passed) saves the
// timer queue's per-key registration, deduplication and heap. OnWatermark
// runs after the event-time timers due at wm have fired, with no current
// key: it returns to a key with KeyedContext.SetKey. Records it emits
// carry the previous watermark, as those of timers do.
//
// An index kept this way is not in checkpoints: rebuild it from keyed
// state (ValueState.Entries) after a restore.
type WatermarkHandler[K comparable, OUT any] = engine.WatermarkHandler[K, OUT]

// BatchEndHandler is implemented by process functions that work on the
// records of an input batch together: EndBatch runs after each input
// batch, before its watermark advances and before a checkpoint barrier,
// with no current key (SetKey returns to one). A mini-batch aggregation
// buffers a batch's records per key and emits one change per key.
type BatchEndHandler[K comparable, OUT any] = engine.BatchEndHandler[K, OUT]

// KeyRef is a key with its hash, as the operator received it: what it
// takes to return to the key later (KeyedContext.SetKey) without hashing
// it again.
type KeyRef[K comparable] = engine.KeyRef[K]
