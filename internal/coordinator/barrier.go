package coordinator

import (
	"context"
	"fmt"

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
	// Savepoint: the barrier is a savepoint's (Stop or not).
	Savepoint bool
}

// TaskSnapshot collects one task's part of a checkpoint while its barrier
// passes down the chain; the coordinator has it written out.
type TaskSnapshot struct {
	ID           int64
	Task         string
	Subtask      int
	States       []codec.StateFile
	Committables []Committable
	// Deferred are state files that operators left to encode off their
	// task's goroutine: at the barrier they copied their state (cheap), and
	// each function encodes such a copy. The coordinator runs them before
	// writing the checkpoint (Resolve), so a large heap state does not stop
	// the pipeline while it is encoded.
	Deferred []func() (codec.StateFile, error)
}

// Resolve runs the deferred encodings and appends their state files to
// States.
func (s *TaskSnapshot) Resolve() error {
	for _, f := range s.Deferred {
		st, err := f()
		if err != nil {
			return fmt.Errorf("%s (subtask %d): %w", s.Task, s.Subtask, err)
		}
		s.States = append(s.States, st)
	}
	s.Deferred = nil
	return nil
}

// resolveAll resolves every task's deferred state files.
func resolveAll(snaps []*TaskSnapshot) error {
	for _, s := range snaps {
		if err := s.Resolve(); err != nil {
			return err
		}
	}
	return nil
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
