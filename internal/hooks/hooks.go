// Package hooks holds what the root package offers only to weir's own
// programs and tests (the CLI, the crash-test jobs): a checkpoint hook and
// a describer of operator state, and the runner of jobs in group mode
// (set by the Kafka connector). Package weir sets the functions in its
// init, so they are there whenever weir is linked in, and the root API
// does not export them.
//
// The package imports nothing from this module.
package hooks

import (
	"context"
	"log/slog"
	"time"
)

// Stage names a point in the completion of a checkpoint.
type Stage string

// The stages a checkpoint hook reports, in order.
const (
	// StageStateFile: one more state file is written (reported per file):
	// the checkpoint is half written.
	StageStateFile Stage = "state-file"
	// StageFilesWritten: every state file is written; the metadata is not,
	// so the checkpoint is not complete yet.
	StageFilesWritten Stage = "files-written"
	// StageComplete: the metadata is written; sinks have pre-committed but
	// not committed.
	StageComplete Stage = "complete"
	// StageCommitted: the sinks committed the checkpoint's output.
	StageCommitted Stage = "committed"
)

// CheckpointHook returns a weir.Option (assert it: this package cannot
// name the type) that calls fn at each stage of every checkpoint, from the
// coordinator's goroutine. It exists for crash tests (kill the process
// between pre-commit and commit); fn must be quick.
var CheckpointHook func(fn func(stage Stage, id int64)) any

// DescribeOperatorState describes the non-keyed part of one state file of
// a checkpoint, for `weir checkpoints inspect`: for a source, each split's
// position and watermark. It returns nil for data it cannot read.
var DescribeOperatorState func(data []byte) []string

// GroupJob is a job run in group mode (weir.AppID): one job over several
// processes that share its Kafka input through a consumer group named by
// AppID (docs/scale-out.md). The root package describes the job; the
// Kafka connector runs it.
type GroupJob struct {
	AppID string
	// Sources and Sinks are the job's weir.Source and weir.Sink values, in
	// the order they were added.
	Sources []any
	Sinks   []any
	// Interval is the commit interval: a checkpoint of the local job, and
	// a Kafka transaction, per interval.
	Interval time.Duration
	Logger   *slog.Logger
	// Status, if set, is told what the process owns (group_status.go).
	Status GroupStatus
	// RunLocal runs the job once in this process, from empty state (the
	// runner puts in ctx what its sources and sinks read), taking a
	// checkpoint every Interval into a temporary directory. It returns
	// when the job ends, fails or ctx ends.
	RunLocal func(ctx context.Context) error
}

// GroupRun runs a job in group mode. The Kafka connector sets it in its
// init (as database/sql drivers register); it is nil when the connector is
// not linked in.
var GroupRun func(ctx context.Context, g GroupJob) error
