package weir

import (
	"github.com/weirstream/weir/internal/exec"
)

// TaskError is how Run reports a failed operator: its name, the subtask,
// and the cause (an operator's error, or a panic with its stack).
type TaskError = exec.TaskError
