package engine

import (
	"errors"

	"github.com/weirstream/weir/internal/coordinator"
)

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
