package weir

import (
	"github.com/weirstream/weir/internal/engine"
)

// BadRecordPolicy says what a source does with a record it cannot decode:
// Fail (the default), Skip, or DeadLetter. Give it to FromSource with
// OnBadRecord.
type BadRecordPolicy = engine.BadRecordPolicy

var (
	// Fail makes the first malformed record fail the job, with an error
	// naming the source, the split and the record's position. A restart
	// meets the same record again: fix or remove it, or use Skip or
	// DeadLetter.
	Fail = engine.Fail
	// Skip drops malformed records and counts them in
	// weir_bad_records_skipped_total.
	Skip = engine.Skip
)

// DeadLetter sends each malformed record, as a BadRecord with its raw bytes,
// error, source, split and position, to sink, and counts it in
// weir_dead_letters_total. The dead letters are a side output of the source
// (see BadRecords): they flow through checkpoints like any stream, so with
// a committing sink (such as connector/file.ExactlyOnce or an exactly-once
// log sink) each dead letter is written exactly once, and with a plain sink
// at least once.
func DeadLetter(sink Sink[BadRecord]) BadRecordPolicy {
	return engine.DeadLetter(sink)
}

// BadRecord is a record that a source could not decode: a dead letter.
type BadRecord = engine.BadRecord

// BadRecordReporter is implemented by split readers that can hand
// malformed records to the job rather than fail. Before the first Read of a
// source with OnBadRecord(Skip) or OnBadRecord(DeadLetter(...)), the job
// calls SetBadRecordHandler; from then on the reader calls h for every
// record it cannot decode, from inside Read, and goes on with the next
// one. raw is only valid during the call. A reader whose handler is not set
// behaves as before (it fails, or whatever its own options say).
type BadRecordReporter = engine.BadRecordReporter

// BadRecords returns the side output of a source's malformed records. Asking
// for it makes the source send malformed records there (OnBadRecord is not
// needed, and a DeadLetter sink receives the same stream).
func BadRecords[T any](s *Stream[T]) *Stream[BadRecord] {
	return engine.BadRecords[T](s)
}
