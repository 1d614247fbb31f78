package weir

import (
	"math/rand/v2"
	"time"

	"github.com/weirstream/weir/internal/engine"
)

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
	return engine.Fold[K, E, S](ks, fn, opts...)
}

// GeneratorConfig configures GeneratorSource.
type GeneratorConfig = engine.GeneratorConfig

// GeneratorSource is a deterministic source: record i is gen(i, rng), where
// rng is the split's own seeded generator, drawn in index order. The same
// config gives the same records in the same order per split, at any
// parallelism. Useful for demos, benchmarks and tests.
func GeneratorSource[T any](cfg GeneratorConfig, gen func(i int64, rng *rand.Rand) T) Source[T] {
	return engine.GeneratorSource[T](cfg, gen)
}

// ReplaySafeCommitter is a Committer that can prove that its output stays
// exact when the job restores a checkpoint older than output it already
// committed, and so replays what followed that checkpoint: committing the
// replayed output again leaves the external system as if it had been
// committed once (a committer that upserts by a key the records determine,
// or that recognises every replayed record by a position it stored).
//
// A job refuses to restore such an older checkpoint (after its newest ones
// were damaged, or from an older savepoint) unless every committing sink
// of the job has a ReplaySafeCommitter that says so, or the job has the
// AllowDuplicateOutput option. None of the committing sinks of this module
// is replay safe: the exactly-once file, log, Kafka and PostgreSQL sinks
// name what they commit by checkpoint id and subtask, and the replay
// divides the same records into other checkpoints, so they cannot tell a
// replayed record from a new one.
type ReplaySafeCommitter = engine.ReplaySafeCommitter

// ErrDuplicateOutput is matched (errors.Is) by the *DuplicateOutputError
// with which a job refuses to start.
var (
	ErrDuplicateOutput = engine.ErrDuplicateOutput
)

// DuplicateOutputError is the error with which a job refuses to restore a
// checkpoint (or to start empty) when its sinks already committed the
// output of a later checkpoint or savepoint: the job would replay the
// records after the restored checkpoint and commit their output a second
// time.
type DuplicateOutputError = engine.DuplicateOutputError

// CommittedCheckpoint is a checkpoint or savepoint whose output the sinks
// committed, and, if it is in the checkpoint dir, why it cannot be
// restored.
type CommittedCheckpoint = engine.CommittedCheckpoint

// Source is an input of a job, split into independent splits (partitions,
// files) in the spirit of Flink's FLIP-27: the job enumerates the splits
// once, assigns them to source subtasks (split i to subtask i mod p) and
// opens one reader per split. Watermarks are generated per split and
// combined by minimum, so one slow split holds the watermark back, as it
// must.
type Source[T any] = engine.Source[T]

// Split is one independently readable part of a source.
type Split = engine.Split

// SplitReader reads the records of one split.
type SplitReader[T any] = engine.SplitReader[T]

// SkipCounter is implemented by readers that skip malformed records when
// told to; the job exposes the count as weir_bad_records_skipped_total.
type SkipCounter = engine.SkipCounter

// WatermarkStrategy says where a record's event time comes from and how the
// source derives watermarks from event times.
type WatermarkStrategy[T any] = engine.WatermarkStrategy[T]

// BoundedOutOfOrderness assigns event times with ts and emits, per split,
// the watermark max event time seen - d - 1ms (Flink's definition): events
// may arrive up to d later than a later-stamped event without being late.
func BoundedOutOfOrderness[T any](d time.Duration, ts func(T) time.Time) WatermarkStrategy[T] {
	return engine.BoundedOutOfOrderness[T](d, ts)
}

// MonotonousTimestamps is for sources whose event times never decrease
// within a split: the watermark is the max event time seen - 1ms.
func MonotonousTimestamps[T any](ts func(T) time.Time) WatermarkStrategy[T] {
	return engine.MonotonousTimestamps[T](ts)
}

// BoundedOutOfOrdernessOrBad is BoundedOutOfOrderness with a timestamp
// function that may refuse a record whose time cannot be read: the record
// is then a bad record of its source, under the source's OnBadRecord
// policy (Fail, the default, fails the job with the error and the split;
// Skip counts it; DeadLetter sends it on as a BadRecord holding the
// record as JSON). A refused record does not move the watermark.
func BoundedOutOfOrdernessOrBad[T any](d time.Duration, ts func(T) (time.Time, error)) WatermarkStrategy[T] {
	return engine.BoundedOutOfOrdernessOrBad[T](d, ts)
}

// MonotonousTimestampsOrBad is MonotonousTimestamps with a timestamp
// function that may refuse a record, as BoundedOutOfOrdernessOrBad.
func MonotonousTimestampsOrBad[T any](ts func(T) (time.Time, error)) WatermarkStrategy[T] {
	return engine.MonotonousTimestampsOrBad[T](ts)
}

// NoWatermarks stamps each record with its ingestion time (the wall clock
// when the source read it) and never advances the watermark until the input
// ends: event-time windows then fire only at the end of a bounded input.
func NoWatermarks[T any]() WatermarkStrategy[T] {
	return engine.NoWatermarks[T]()
}

// FromSource adds a source to the job. The source runs at the job's
// parallelism (or Parallelism(n)), capped by its number of splits.
func FromSource[T any](j *Job, name string, src Source[T], ws WatermarkStrategy[T], opts ...SourceOption) *Stream[T] {
	return engine.FromSource[T](j, name, src, ws, opts...)
}

// SliceSource is a bounded source of one split that emits items in order.
func SliceSource[T any](items []T) Source[T] {
	return engine.SliceSource[T](items)
}

// CheckpointedReader is a SplitReader whose position can be saved in a
// checkpoint. Sources used in a checkpointed job must have such readers and
// implement RestorableSource.
type CheckpointedReader[T any] = engine.CheckpointedReader[T]

// CheckpointListener is implemented by split readers that want to know
// when a checkpoint holding their position has completed, as Flink's
// CheckpointListener. position is what the reader's Position returned for
// that checkpoint. The call is made from the reader's task between reads,
// after the checkpoint's metadata is durable; it is a notification only
// (a Kafka source commits offsets to its group for monitoring): a returned
// error is logged and counted, it does not fail the job, and a
// notification may be skipped (a later one covers it).
type CheckpointListener = engine.CheckpointListener

// RestorableSource is a Source whose splits can be reopened where a
// checkpoint left them.
type RestorableSource[T any] = engine.RestorableSource[T]

// ClockCorrected is a timestamp assigner for events that buffer on a device
// (a phone offline for a day) and carry three times: when the event
// happened and when it was sent, both by the device's clock, and when it was
// received, by the server's clock. The device clock may be wrong; receive -
// send estimates its offset (ignoring network delay, which is small next to
// a wrong clock), and the event time is corrected by it:
//
//	event + (received - sent)
//
// Use it as the timestamp function of a watermark strategy:
//
//	weir.BoundedOutOfOrderness(time.Minute, weir.ClockCorrected(
//		func(e Tap) time.Time { return e.DeviceTime },
//		func(e Tap) time.Time { return e.SentAt },
//		func(e Tap) time.Time { return e.ReceivedAt }))
func ClockCorrected[T any](event, sent, received func(T) time.Time) func(T) time.Time {
	return engine.ClockCorrected[T](event, sent, received)
}
