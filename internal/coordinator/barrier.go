package coordinator

import (
	"context"

	"github.com/weirstream/weir/internal/codec"
)

// Barrier is checkpoint barrier n. It travels in-band: as an exec.Barrier
// message between tasks, and as a barrier call down a chain, after every
// record that belongs to checkpoint n and before every record that does
// not.
type Barrier struct {
	ID    int64
	Final bool // taken after the end of the input: the last checkpoint
	// Stop: a stop-with-savepoint. Sources emit nothing after it; the job
	// ends once the savepoint is complete.
	Stop bool
}

// TaskSnapshot collects one task's part of a checkpoint while its barrier
// passes down the chain; the coordinator has it written out.
type TaskSnapshot struct {
	ID           int64
	Task         string
	Subtask      int
	States       []codec.StateFile
	Committables []Committable
}

// Committable is what a two-phase-commit sink's subtask pre-committed for
// a checkpoint, and the committer that makes it visible once the
// checkpoint is complete.
type Committable struct {
	UID, Name   string
	Parallelism int
	Data        []byte
	Committer   Committer
}

// Committer makes a committable's output visible (weir.Committer).
type Committer interface {
	Commit(ctx context.Context, committable []byte) error
}
