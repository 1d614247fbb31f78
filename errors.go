package weir

import (
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/internal/metrics"
)

// TaskError is how Run reports a failed operator: its name, the subtask,
// and the cause (an operator's error, or a panic with its stack).
type TaskError = exec.TaskError

// ErrCancelled is returned by blocking runtime operations once a job is
// being torn down.
var ErrCancelled = exec.ErrCancelled

// OperatorMetrics are the live metrics of one operator subtask.
type OperatorMetrics = metrics.Operator
