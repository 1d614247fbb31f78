package engine

import (
	"context"
	"errors"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/coordinator"
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

// ckConfig is what the checkpoint store needs of the job.
func (j *Job) ckConfig() ckstore.Config {
	cfg := ckstore.Config{
		Dir: j.cfg.ckDir, Retain: j.cfg.ckRetain, Logger: j.cfg.logger, Hook: j.cfg.ckHook,
		Job: j.name, MaxParallelism: j.cfg.maxParallelism, Options: j.cfg.String(), Metrics: &j.metrics.Checkpoints,
		RestoreFrom: j.cfg.restoreFrom, StartFresh: j.cfg.startFresh, CheckReplay: j.checkReplay,
	}
	return cfg
}

func (j *Job) noteStopped(err error) {
	var se *coordinator.StopError
	if errors.As(err, &se) {
		j.mu.Lock()
		j.mu.stopped = se.Path
		j.mu.Unlock()
	}
}

// StoppedWithSavepoint returns the savepoint directory of the
// stop-with-savepoint that ended Run, or "" if Run ended otherwise. Run
// returns nil in both cases; a caller that reports on the input (how much
// was read, what is missing) asks this first: a stopped job did not read
// all of it.
func (j *Job) StoppedWithSavepoint() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.stopped
}
