package engine

import (
	"errors"

	"github.com/weirstream/weir/internal/exec"
)

// TaskError is how Run reports a failed operator: its name, the subtask,
// and the cause (an operator's error, or a panic with its stack).
type TaskError = exec.TaskError

// Permanent marks err as a failure that no restart can fix: a sink's
// committer that finds its output lost or overwritten, a configuration
// that cannot work. A job whose operator, source, sink or committer
// returns it (wrapped or not) fails at once, without going through the
// restart policy. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanent{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent (or is one of the job's own permanent failures).
func IsPermanent(err error) bool {
	var p permanent
	return errors.As(err, &p)
}
