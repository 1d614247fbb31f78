package weir

import (
	"context"
	"io"

	"github.com/weirstream/weir/internal/engine"
)

// ControlAddr serves the job's control endpoint on addr while it runs
// (loopback unless addr names a host; ":0" picks a free port):
// POST /v1/savepoint {"path": NAME, "stop": false} takes a savepoint into
// NAME under the savepoint directory (see SavepointDir and Job.Savepoint),
// GET /v1/status describes the job. It needs Checkpointing: the endpoint
// writes its address (control.addr) and a new random token (control.token,
// mode 0600) to the checkpoint directory, and answers only requests that
// carry the token as "Authorization: Bearer TOKEN", with no foreign Origin
// and a Host naming the bound address. `weir savepoint --checkpoint-dir
// DIR` reads both files.
func ControlAddr(addr string) Option {
	return engine.ControlAddr(addr)
}

// SavepointDir confines the savepoints asked for through the control
// endpoint to dir (default: DIR/savepoints, DIR being the checkpoint
// directory): a request names a path under it, or an absolute path that
// resolves (symbolic links followed) inside it; ".." is refused. Job.Savepoint,
// called by the program itself, is not confined.
func SavepointDir(dir string) Option {
	return engine.SavepointDir(dir)
}

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

// AppID runs the job in group mode: every process started with the same
// application id (and the same job) joins one Kafka consumer group named
// by it, the partitions of the job's Kafka input topics are assigned
// across the processes, and each process runs the job over the partitions
// it owns, committing its output and input offsets in one Kafka
// transaction per commit interval (the checkpoint interval, 100ms by
// default). The job's sources must be Kafka sources, and the Kafka
// connector (github.com/weirstream/weir/connector/kafka) runs it.
//
// A KeyBy crosses processes through the repartition topic
// "<app id>-<keyed operator's uid>-repartition", which the connector
// creates (kafka.RepartitionPartitions sets its partitions N; key group kg
// goes to partition kg*N/max-parallelism), written in the same
// transactions and read read_committed, with watermarks carried as
// markers per input partition. The keyed operator's state moves with the
// repartition partitions: each process owns the key groups of the
// partitions it is assigned, writes their changed snapshots at every
// commit to the compacted topic "<app id>-<uid>-changelog" (N partitions,
// the same mapping) in the same transaction, and restores them from it
// whenever its local job starts. The KeyBy must follow Kafka sources
// through one-to-one operators and unions: behind unions (nested, with
// one-input operators between them and the KeyBy) it is cut on the
// unions' branches, each writing into the one topic, the operators after
// a union copied onto each branch; so a join (every two-input keyed
// operator keys the union of its tagged inputs) gets one repartition
// topic, named by the join's uid, into which both sides write. A KeyBy
// may also follow a keyed operator (a chain of KeyBys): its own
// repartition topic, whose upstream tasks are the partitions of the
// first stage's topic. Rebalance, Broadcast and LateEvents before a
// KeyBy are refused. See docs/scale-out.md for the
// model, its guarantees and its limits.
func AppID(id string) Option {
	return engine.AppID(id)
}

// Job is a dataflow graph under construction and, once Run, its execution.
// Build the graph with FromSource and the package functions, then call Run
// once.
type Job = engine.Job

// NewJob returns an empty job. Options set job-wide defaults (Parallelism,
// BatchSize, BufferTimeout, MetricsAddr, ...).
func NewJob(name string, opts ...Option) *Job {
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

// WebAddr serves the job's web dashboard at / and its REST API under /v1/
// on addr while the job runs (loopback unless addr names a host: ":8081"
// listens on 127.0.0.1:8081; ":0" picks a free port). Everything but the
// login link needs the job's token, a new random one per run written to
// the token file (see WebTokenFile) and logged by its path, never by its
// value: scripts send it as "Authorization: Bearer TOKEN", a browser opens
// /login?token=TOKEN once and gets a cookie. The API:
//
//	GET  /v1/job          the job graph, per-operator counters, rates, backpressure, watermarks
//	GET  /v1/checkpoints  checkpoint history and the latest restore
//	POST /v1/savepoints   take a savepoint into the savepoint directory (SavepointDir)
//	POST /v1/stop         take a savepoint, then stop the job
//
// The control endpoint (ControlAddr) is served by the same server: with
// both, the server listens on both addresses.
func WebAddr(addr string) Option {
	return engine.WebAddr(addr)
}

// WebTokenFile is where WebAddr's server writes the job's token (mode
// 0600, replaced at every start, removed when the job ends). Default: the
// checkpoint directory's control.token (the file `weir savepoint` reads),
// else web.token in the state directory (PebbleState); a job with neither
// must name one.
func WebTokenFile(path string) Option {
	return engine.WebTokenFile(path)
}
