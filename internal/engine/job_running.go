package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/weirstream/weir/internal/coordinator"
)

// Between Run's start and its tasks running (opening the checkpoint
// directory, restoring, compiling), and between the attempts of a
// restarting job, there is no coordinator to take a savepoint. A request
// then (a `weir savepoint` issued right after the job started) waits for
// the next one rather than failing with "not running".

// setCoordinator records the running attempt's coordinator (nil when the
// attempt ended) and wakes those waiting for it.
func (j *Job) setCoordinator(c *coordinator.Coordinator) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.coord = c
	j.notifyLocked()
}

// runEnded marks Run as returned: waiting requests fail.
func (j *Job) runEnded() {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.mu.finished = true
	j.notifyLocked()
}

func (j *Job) notifyLocked() {
	if j.mu.changed != nil {
		close(j.mu.changed)
	}
	j.mu.changed = make(chan struct{})
}

// runningCoordinator returns the coordinator of the running attempt,
// waiting for one while the job starts or restarts, until ctx ends. It
// fails at once if Run was not called or has returned.
func (j *Job) runningCoordinator(ctx context.Context) (*coordinator.Coordinator, error) {
	logged := false
	for {
		j.mu.Lock()
		c, starting := j.mu.coord, j.mu.ran && !j.mu.finished
		if j.mu.changed == nil {
			j.mu.changed = make(chan struct{})
		}
		changed := j.mu.changed
		j.mu.Unlock()
		if c != nil {
			return c, nil
		}
		if !starting {
			return nil, errors.New("weir: the job is not running")
		}
		if !logged {
			j.cfg.logger.Debug("request waits for the job to run")
			logged = true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("weir: the job is not running yet (starting or restarting): %w", context.Cause(ctx))
		}
	}
}
