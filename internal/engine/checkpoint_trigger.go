package engine

import (
	"context"
	"errors"
)

// Checkpoint takes a checkpoint of the running job now (after the one in
// flight, if any) and returns its id once it is complete and its sinks
// have committed, as Flink's manual checkpoint trigger does. Periodic
// checkpoints go on as configured; a test that wants checkpoints at exact
// places of its input sets a long interval and calls Checkpoint instead.
// Called while the job starts or restarts, it waits (bounded by ctx) until
// the job runs. It fails if Run was not called or returned, the checkpoint times out or cannot be
// written, or the input is done (the final checkpoint then covers it).
func (j *Job) Checkpoint(ctx context.Context) (int64, error) {
	if j.cfg.ckDir == "" {
		return 0, errors.New("weir: Checkpoint needs Checkpointing")
	}
	c, err := j.runningCoordinator(ctx)
	if err != nil {
		return 0, err
	}
	_, id, err := c.Savepoint(ctx, "", false)
	return id, err
}
