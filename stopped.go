package weir

import "errors"

// stopError ends an attempt stopped with a savepoint; it is errStopped
// with the savepoint's path.
type stopError struct{ path string }

func (e *stopError) Error() string        { return errStopped.Error() + " into " + e.path }
func (e *stopError) Is(target error) bool { return target == errStopped }

func (j *Job) noteStopped(err error) {
	var se *stopError
	if errors.As(err, &se) {
		j.mu.Lock()
		j.mu.stopped = se.path
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
