package weir

import (
	"context"
	"errors"
)

// Checkpoint takes a checkpoint of the running job now (after the one in
// flight, if any) and returns its id once it is complete and its sinks
// have committed, as Flink's manual checkpoint trigger does. Periodic
// checkpoints go on as configured; a test that wants checkpoints at exact
// places of its input sets a long interval and calls Checkpoint instead.
// It fails if the job is not running, the checkpoint times out or cannot be
// written, or the input is done (the final checkpoint then covers it).
func (j *Job) Checkpoint(ctx context.Context) (int64, error) {
	if j.cfg.ckDir == "" {
		return 0, errors.New("weir: Checkpoint needs Checkpointing")
	}
	j.mu.Lock()
	c := j.mu.coord
	j.mu.Unlock()
	if c == nil {
		return 0, errors.New("weir: the job is not running")
	}
	_, id, err := c.savepoint(ctx, "", false)
	return id, err
}
