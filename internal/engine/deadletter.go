package engine

import (
	"fmt"
	"time"
)

// BadRecordPolicy says what a source does with a record it cannot decode:
// Fail (the default), Skip, or DeadLetter. Give it to FromSource with
// OnBadRecord.
type BadRecordPolicy struct {
	kind badKind
	sink Sink[BadRecord]
}

type badKind uint8

const (
	failBad badKind = iota
	skipBad
	sideBad // to the side output (BadRecords), and from there to a sink if one was given
)

var (
	// Fail makes the first malformed record fail the job, with an error
	// naming the source, the split and the record's position. A restart
	// meets the same record again: fix or remove it, or use Skip or
	// DeadLetter.
	Fail = BadRecordPolicy{kind: failBad}
	// Skip drops malformed records and counts them in
	// weir_bad_records_skipped_total.
	Skip = BadRecordPolicy{kind: skipBad}
)

// DeadLetter sends each malformed record, as a BadRecord with its raw bytes,
// error, source, split and position, to sink, and counts it in
// weir_dead_letters_total. The dead letters are a side output of the source
// (see BadRecords): they flow through checkpoints like any stream, so with
// a committing sink (such as connector/file.ExactlyOnce or an exactly-once
// log sink) each dead letter is written exactly once, and with a plain sink
// at least once.
func DeadLetter(sink Sink[BadRecord]) BadRecordPolicy {
	return BadRecordPolicy{kind: sideBad, sink: sink}
}

// BadRecord is a record that a source could not decode: a dead letter.
type BadRecord struct {
	// Source is the name of the source operator, Split the ID of its split.
	Source string
	Split  string
	// Position is where the record is in its split, in the connector's
	// terms ("events.jsonl:17 (byte offset 2310)", "clicks/2@4711").
	Position string
	// Raw is the record's bytes as read.
	Raw []byte
	// Err says why it was rejected.
	Err string
	// Time is the processing time at which the source met it; dead letters
	// carry it as their timestamp too.
	Time time.Time
}

// BadRecordReporter is implemented by split readers that can hand
// malformed records to the job rather than fail. Before the first Read of a
// source with OnBadRecord(Skip) or OnBadRecord(DeadLetter(...)), the job
// calls SetBadRecordHandler; from then on the reader calls h for every
// record it cannot decode, from inside Read, and goes on with the next
// one. raw is only valid during the call. A reader whose handler is not set
// behaves as before (it fails, or whatever its own options say).
type BadRecordReporter interface {
	SetBadRecordHandler(h func(raw []byte, position string, err error))
}

// BadRecords returns the side output of a source's malformed records. Asking
// for it makes the source send malformed records there (OnBadRecord is not
// needed, and a DeadLetter sink receives the same stream).
func BadRecords[T any](s *Stream[T]) *Stream[BadRecord] {
	n := s.node
	j := s.job
	if n.splits == nil {
		j.fail(fmt.Errorf("weir: BadRecords: %q is not a source", n.name))
		return &Stream[BadRecord]{job: j, node: n}
	}
	if n.sideStream != nil {
		return n.sideStream.(*Stream[BadRecord])
	}
	out, bn := newStream[BadRecord](j, "bad-records", config{name: n.name + "-bad-records"})
	bn.sideOf = n
	n.side = bn
	n.sideStream = out
	return out
}
