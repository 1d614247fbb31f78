package weir

import (
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/engine"
)

// JobOption configures a job: NewJob takes it. A misplaced option does not
// compile: operators take OperatorOption, window operators WindowOption.
// Each option prints itself (String) as it was written.
type JobOption = engine.JobOption

// Option is valid both for a job and for an operator: Parallelism, which
// given to NewJob is the default of every operator.
type Option = engine.Option

// MaxParallelism sets the number of key groups (default 128): the upper
// bound for parallelism, fixed for the life of the job's state.
func MaxParallelism(n int) JobOption {
	return engine.MaxParallelism(n)
}

// BatchSize sets how many records a batch on an edge holds at most (default
// 1024).
func BatchSize(n int) JobOption {
	return engine.BatchSize(n)
}

// BufferTimeout bounds how long a record may wait in a partly filled output
// batch before it is sent (default 10ms). Zero sends after every input batch.
func BufferTimeout(d time.Duration) JobOption {
	return engine.BufferTimeout(d)
}

// QueueCapacity sets how many batches an input channel buffers before its
// sender blocks (default 4). This bounds memory and is where backpressure
// starts.
func QueueCapacity(n int) JobOption {
	return engine.QueueCapacity(n)
}

// MetricsAddr serves Prometheus metrics at http://addr/metrics while the job
// runs. An address without a host (":9249") listens on loopback only.
func MetricsAddr(addr string) JobOption {
	return engine.MetricsAddr(addr)
}

// Logger sets the job's logger (default: discard).
func Logger(l *slog.Logger) JobOption {
	return engine.Logger(l)
}

// Clock replaces the wall clock that drives processing time (processing-time
// timers and triggers, state TTL, ingestion timestamps) — for tests.
func Clock(now func() time.Time) JobOption {
	return engine.Clock(now)
}

// Checkpointing takes a checkpoint every interval into dir (one
// subdirectory per checkpoint; the first after a random delay in [0,
// interval], as Flink does, so that checkpoints do not keep one phase
// against the job's windows) and makes the job fault tolerant: after a
// failure it restarts from the latest complete checkpoint (see
// RestartPolicy), and a process started again with the same dir resumes
// from it. Every source must implement RestorableSource.
func Checkpointing(interval time.Duration, dir string) JobOption {
	return engine.Checkpointing(interval, dir)
}

// CheckpointTimeout aborts a checkpoint that has not completed within d
// (default 10 minutes).
func CheckpointTimeout(d time.Duration) JobOption {
	return engine.CheckpointTimeout(d)
}

// RetainCheckpoints keeps the newest n completed checkpoints (default 3).
func RetainCheckpoints(n int) JobOption {
	return engine.RetainCheckpoints(n)
}

// RestoreFrom starts the job from a savepoint or checkpoint directory
// instead of the latest checkpoint of the checkpoint dir. The parallelism
// may differ from the one that took it: keyed state moves by key group.
func RestoreFrom(path string) JobOption {
	return engine.RestoreFrom(path)
}

// AllowNonRestoredState lets a job start from a savepoint that holds state
// of operators the job no longer has (matched by UID); that state is
// dropped. Without it such a restore fails.
func AllowNonRestoredState() JobOption {
	return engine.AllowNonRestoredState()
}

// StartFresh lets a job start empty when its checkpoint dir holds
// checkpoints of which none is usable. Without it the job refuses to start,
// rather than silently reprocess or lose its state.
func StartFresh() JobOption {
	return engine.StartFresh()
}

// AllowDuplicateOutput lets a job restore a checkpoint older than output
// its sinks already committed (its newer checkpoints are damaged, or
// RestoreFrom names an older one), or start empty after such output: the
// records after the restored checkpoint are processed again and their
// output is committed a second time. Without it the job refuses to start,
// with a *DuplicateOutputError naming the checkpoints, unless every
// committing sink is a ReplaySafeCommitter.
func AllowDuplicateOutput() JobOption {
	return engine.AllowDuplicateOutput()
}

// RestartPolicy says how a checkpointed job restarts after a failure:
// exponential backoff from InitialBackoff to MaxBackoff, and at most
// MaxFailures failures within Interval, after which Run fails.
type RestartPolicy = engine.RestartPolicy

// DefaultRestartPolicy: 100ms doubling to 10s, at most 10 failures in 10
// minutes.
func DefaultRestartPolicy() RestartPolicy {
	return engine.DefaultRestartPolicy()
}

// Restarts sets the restart policy of a checkpointed job. MaxFailures 0
// disables restarts.
func Restarts(p RestartPolicy) JobOption {
	return engine.Restarts(p)
}

// HeapState keeps keyed state in memory as Go values (the default): the
// fastest, bounded by memory.
func HeapState() JobOption {
	return engine.HeapState()
}

// PebbleState keeps the keyed state and timers of Process operators and
// of window aggregations (below) in a Pebble LSM under dir, so state can
// be larger than memory; memoryBudget bounds the bytes Pebble keeps in
// memory in the process, for all the job's operators and subtasks
// together (0: 64 MiB): one block cache of three eighths of it that every
// database shares, memtables that add up to half of it, and an eighth for
// the record caches: each database's state entries in memory in front of
// it, written back to it when evicted and at checkpoints (Kafka Streams'
// record cache). Go's heap (the operators' buffers, records in flight)
// comes on top: under a memory limit, set GOMEMLIMIT to what is left.
// Checkpoints copy Pebble state by key group like heap state (see
// IncrementalCheckpoints for SST files instead, StateChangelog for logs of
// the changes).
//
// Besides Process, Aggregate and Reduce over every window (Tumbling,
// Hopping, Session, Global, Sliding) with any trigger (the default
// event-time one, count, processing time, early and late firings,
// purging; AllowedLateness, Retracting and LateEvents included), and
// ProcessWindow, CoGroup and WindowJoin over event-time Tumbling, Hopping
// and Session windows with the default trigger (each window's events as a
// list), keep their windows and timers in Pebble: on PebbleState they run
// on keyed process functions, with the results of the heap's window
// operators (docs/time-and-windows.md, "Window state in Pebble"); their
// key and accumulator types (with another trigger or Global windows, their
// result type too; Sliding windows and ProcessWindow: the input type
// instead of the accumulator's) must then be encodable (no channels,
// functions or interfaces), or Run fails naming the operator. The joins
// other than WindowJoin, AggregateChanges, NormalizeChanges, ToTable,
// Fold and CEP are built on Process and keep their state in the backend
// too. What stays on the heap (ProcessWindow with another trigger or over
// Global windows) Job.HeapStateOperators names, and the job logs it when
// it starts.
func PebbleState(dir string, memoryBudget int64) JobOption {
	return engine.PebbleState(dir, memoryBudget)
}

// IncrementalCheckpoints makes checkpoints of PebbleState state
// incremental, as Flink's `execution.checkpointing.incremental: true` does
// for RocksDB (off by default there and here): each checkpoint uploads only
// the SST files that the previous one did not have, into the checkpoint
// directory's shared/ area, and lists the others again; retention deletes
// a shared file once no retained checkpoint lists it. A restore with the
// same parallelism opens the files directly; at another parallelism, it
// copies each key group's entries out of the old databases. Savepoints stay
// self-contained, by key group. Without PebbleState (heap state) it does
// nothing: there are no files to share.
func IncrementalCheckpoints() JobOption {
	return engine.IncrementalCheckpoints()
}

// StateChangelog makes checkpoints of PebbleState state write the changes
// since the checkpoint before, as Flink's changelog state backend does
// (`state.backend.changelog.enabled: true`): a checkpoint uploads the new
// segment of a log of Pebble's writes and lists the last materialization
// (an incremental checkpoint) and the earlier segments again, so its size
// follows the change, not Pebble's compactions. A checkpoint materializes
// when there is no base yet, when the log passes half of the base, or when
// materializeInterval (0: none; Flink's
// `state.backend.changelog.periodic-materialize.interval`) has passed
// since the base. It implies IncrementalCheckpoints; without PebbleState
// it does nothing. See docs/operations.md.
func StateChangelog(materializeInterval time.Duration) JobOption {
	return engine.StateChangelog(materializeInterval)
}

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
func ControlAddr(addr string) JobOption {
	return engine.ControlAddr(addr)
}

// SavepointDir confines the savepoints asked for through the control
// endpoint to dir (default: DIR/savepoints, DIR being the checkpoint
// directory): a request names a path under it, or an absolute path that
// resolves (symbolic links followed) inside it; ".." is refused. Job.Savepoint,
// called by the program itself, is not confined.
func SavepointDir(dir string) JobOption {
	return engine.SavepointDir(dir)
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
func AppID(id string) JobOption {
	return engine.AppID(id)
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
func WebAddr(addr string) JobOption {
	return engine.WebAddr(addr)
}

// WebTokenFile is where WebAddr's server writes the job's token (mode
// 0600, replaced at every start, removed when the job ends). Default: the
// checkpoint directory's control.token (the file `weir savepoint` reads),
// else web.token in the state directory (PebbleState); a job with neither
// must name one.
func WebTokenFile(path string) JobOption {
	return engine.WebTokenFile(path)
}

// Microbatch runs the job in epochs of d of processing time (Spark
// Structured Streaming's micro-batches) instead of record at a time; 0 is
// continuous execution (the default).
//
// Every source subtask reads for d, then ends the epoch with a checkpoint
// barrier and reads nothing more until that checkpoint has settled
// (committed, or failed or timed out, when its output is carried to the
// next): an epoch flows through the whole graph as one unit, and its
// state and sink output commit at its end. The next epoch starts when the
// previous one has committed, so an epoch is d of reading plus the time to
// drain and commit it; the epoch is the unit of recovery. With
// Checkpointing, each epoch's end is a checkpoint in its dir (the
// interval is not used: the epochs set the pace); without, the epochs
// commit sink output in memory and a failure fails the job.
//
// The watermark moves only between epochs (Spark's rule): a source
// subtask stamps every record of epoch k+1, and sends downstream, the
// watermark computed from the largest event times it read up to the end of
// epoch k; it sends the new value right after epoch k's barrier, so no
// operator sees it advance inside an epoch (barrier alignment holds back
// the inputs that are ahead). Results in event time equal continuous
// execution's when the disorder stays within the watermark's bound. With
// more disorder, fewer events are late than in continuous mode: an event
// is late only against the watermark of the previous epoch's end, not
// against one raised by earlier events of its own epoch (docs/microbatch.md).
// Like Checkpointing, it needs sources that implement RestorableSource.
func Microbatch(d time.Duration) JobOption {
	return engine.Microbatch(d)
}
