// Package hooks holds what the root package offers only to weir's own
// programs and tests (the CLI, the crash-test jobs): a checkpoint hook and
// a describer of operator state. Package weir sets the functions in its
// init, so they are there whenever weir is linked in, and the root API
// does not export them.
//
// The package imports nothing from this module.
package hooks

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
