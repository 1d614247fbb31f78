package weir

import (
	"context"
	"io"

	"github.com/weirstream/weir/internal/engine"
)

// TaskError is how Run reports a failed operator: its name, the subtask,
// and the cause (an operator's error, or a panic with its stack).
type TaskError = engine.TaskError

// Permanent marks err as a failure that no restart can fix: a sink's
// committer that finds its output lost or overwritten, a configuration
// that cannot work. A job whose operator, source, sink or committer
// returns it (wrapped or not) fails at once, without going through the
// restart policy. Permanent(nil) is nil.
func Permanent(err error) error {
	return engine.Permanent(err)
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent (or is one of the job's own permanent failures).
func IsPermanent(err error) bool {
	return engine.IsPermanent(err)
}

// Job is a dataflow graph under construction and, once Run, its execution.
// Build the graph with FromSource and the package functions, then call Run
// once.
type Job = engine.Job

// NewJob returns an empty job. Options set job-wide defaults (Parallelism,
// BatchSize, BufferTimeout, MetricsAddr, ...).
func NewJob(name string, opts ...JobOption) *Job {
	return engine.NewJob(name, opts...)
}

// Metrics is a copy of a job's metrics taken at one moment (Job.Metrics):
// plain values that the caller may keep or change without touching the
// job's own counters.
type Metrics = engine.Metrics

// CheckpointMetrics are the job's checkpoint metrics.
type CheckpointMetrics = engine.CheckpointMetrics

// OperatorMetrics are the metrics of one operator subtask.
type OperatorMetrics = engine.OperatorMetrics

// Main runs job as the program's main function: it reads the operational
// flags every job needs from the command line, runs the job until it ends
// or the process gets SIGINT or SIGTERM, and exits (1 on failure).
//
//	--parallelism N            default parallelism
//	--checkpoint-dir DIR       checkpoint into DIR (and resume from it)
//	--checkpoint-interval D    time between checkpoints (default 10s)
//	--restore-from PATH        start from a savepoint or checkpoint
//	--allow-non-restored-state drop restored state of removed operators
//	--start-fresh              start empty if no checkpoint is usable
//	--allow-duplicates         restore behind committed output (duplicates it)
//	--metrics-addr ADDR        serve Prometheus metrics (loopback unless a host is given)
//	--control-addr ADDR        serve the control endpoint (for `weir savepoint`; needs --checkpoint-dir)
//	--savepoint-dir DIR        where that endpoint's savepoints go (default DIR/savepoints)
//	--web-addr ADDR            serve the web dashboard and REST API (loopback unless a host is given)
//	--web-token-file PATH      where its token goes (default DIR/control.token)
//	--log-level LEVEL          debug, info, warn or error (default info)
//	--app-id ID                group mode (AppID): the processes with this id share the Kafka input
func Main(job *Job) {
	engine.Main(job)
}

// MainArgs is Main with explicit arguments and log output, for tests and
// programs with flags of their own (pass what they did not parse).
func MainArgs(ctx context.Context, job *Job, args []string, logOut io.Writer) error {
	return engine.MainArgs(ctx, job, args, logOut)
}
