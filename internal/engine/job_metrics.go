package engine

import (
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// Metrics is a copy of a job's metrics taken at one moment (Job.Metrics):
// plain values that the caller may keep or change without touching the
// job's own counters.
type Metrics struct {
	Job         string
	Checkpoints CheckpointMetrics
	// Operators holds one entry per operator subtask that has run, sorted
	// by operator name, then subtask.
	Operators []OperatorMetrics
}

// CheckpointMetrics are the job's checkpoint metrics.
type CheckpointMetrics struct {
	Completed int64
	Failed    int64
	// Aborted counts checkpoints aborted by the timeout.
	Aborted int64
	// LastID is the id of the last completed checkpoint.
	LastID int64
	// LastDuration is trigger to completion of the last checkpoint.
	LastDuration time.Duration
	// LastWrite is the time spent writing its files and metadata.
	LastWrite time.Duration
	// LastSizeBytes is the size of its files.
	LastSizeBytes int64
	// Alignment adds up the time tasks held input channels back while
	// aligning barriers.
	Alignment time.Duration
	// Restarts counts restarts from a checkpoint after a failure.
	Restarts int64
	// RestoredKeyGroups and RestoredBytes add up the keyed state restored
	// from changelog topics in group mode (weir.AppID; docs/scale-out.md).
	RestoredKeyGroups int64
	RestoredBytes     int64
}

// OperatorMetrics are the metrics of one operator subtask.
type OperatorMetrics struct {
	Name    string
	Subtask int

	RecordsIn   int64
	RecordsOut  int64
	LateDropped int64
	// BadRecordsSkipped counts malformed input records skipped by a source.
	BadRecordsSkipped int64
	// DeadLetters counts malformed input records sent to a dead-letter sink.
	DeadLetters int64
	// NotifyErrors counts failed checkpoint-complete notifications.
	NotifyErrors int64
	// Watermark is the operator's input watermark (ms): math.MinInt64
	// before the first, math.MaxInt64 after the last.
	Watermark int64
	// Backpressure is the time spent blocked sending to a full queue.
	Backpressure time.Duration
	// StateKeys and StateBytes are the subtask's keyed state on the heap at
	// its last sample (keys, estimated bytes; docs/performance.md),
	// StatePeakKeys and StatePeakBytes the sample with the most keys.
	// Operators built on Process report them (every SQL operator that
	// keeps keyed state); the others report zero.
	StateKeys, StateBytes         int64
	StatePeakKeys, StatePeakBytes int64
}

// Metrics returns a copy of the job's metrics (records in and out,
// watermarks, late records dropped, per operator and subtask; checkpoints).
// It may be called while the job runs; each call copies anew.
func (j *Job) Metrics() *Metrics {
	r := j.metrics
	c := &r.Checkpoints
	m := &Metrics{Job: r.Job, Checkpoints: CheckpointMetrics{
		Completed:     c.Completed.Load(),
		Failed:        c.Failed.Load(),
		Aborted:       c.Aborted.Load(),
		LastID:        c.LastID.Load(),
		LastDuration:  time.Duration(c.LastDurationNanos.Load()),
		LastWrite:     time.Duration(c.LastWriteNanos.Load()),
		LastSizeBytes: c.LastSizeBytes.Load(),
		Alignment:     time.Duration(c.AlignmentNanos.Load()),
		Restarts:      c.Restarts.Load(),

		RestoredKeyGroups: c.RestoredKeyGroups.Load(),
		RestoredBytes:     c.RestoredBytes.Load(),
	}}
	ops := r.Snapshot()
	m.Operators = make([]OperatorMetrics, len(ops))
	for i, o := range ops {
		m.Operators[i] = copyOperator(o)
	}
	return m
}

func copyOperator(o *metrics.Operator) OperatorMetrics {
	return OperatorMetrics{
		Name:              o.Name,
		Subtask:           o.Subtask,
		RecordsIn:         o.RecordsIn.Load(),
		RecordsOut:        o.RecordsOut.Load(),
		LateDropped:       o.LateDropped.Load(),
		BadRecordsSkipped: o.BadRecordsSkipped.Load(),
		DeadLetters:       o.DeadLetters.Load(),
		NotifyErrors:      o.NotifyErrors.Load(),
		Watermark:         o.Watermark.Load(),
		Backpressure:      time.Duration(o.BackpressureNanos.Load()),
		StateKeys:         o.StateKeys.Load(),
		StateBytes:        o.StateBytes.Load(),
		StatePeakKeys:     o.StatePeakKeys.Load(),
		StatePeakBytes:    o.StatePeakBytes.Load(),
	}
}

// Sum adds f over every operator subtask.
func (m *Metrics) Sum(f func(*OperatorMetrics) int64) int64 {
	var n int64
	for i := range m.Operators {
		n += f(&m.Operators[i])
	}
	return n
}
