package engine

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/keygroup"
)

// Option configures a job (NewJob) or one operator (FromSource, Map, KeyBy,
// Window, ...). Options that make no sense where they are given make Run fail
// with an error naming them, rather than being ignored.
type Option interface {
	apply(*config)
	String() string
}

type scope uint8

const (
	scopeJob scope = 1 << iota
	scopeOp
	scopeWindow // options of Window, Aggregate, Reduce, ProcessWindow
)

type option struct {
	name  string
	scope scope
	fn    func(*config)
}

func (o option) apply(c *config) {
	c.used = append(c.used, o)
	o.fn(c)
}
func (o option) String() string { return o.name }

// config is the union of job-level and operator-level settings. Operators
// inherit the job's values for the fields they do not set.
type config struct {
	used []option

	// job and operator
	parallelism int

	// job
	maxParallelism int
	batchSize      int
	bufferTimeout  time.Duration
	queueCapacity  int
	metricsAddr    string
	controlAddr    string
	webAddr        string
	webTokenFile   string
	savepointDir   string
	logger         *slog.Logger
	clock          func() time.Time
	microbatch     time.Duration // > 0: epochs of this length (microbatch.go)

	// checkpoints
	ckInterval   time.Duration
	ckDir        string
	ckTimeout    time.Duration
	ckRetain     int
	restoreFrom  string
	allowNonRest bool
	startFresh   bool
	allowDup     bool
	restart      RestartPolicy
	appID        string                            // group mode (group.go)
	ckHook       func(ckstore.Stage, int64)        // CheckpointHook, for crash tests
	ckTime       coordinator.Time                  // the coordinator's clock: the wall clock's unless a test sets it
	ckFirst      func(time.Duration) time.Duration // when the first periodic checkpoint is due (nil: random, coordinator.RandomFirstDelay); FirstCheckpointAfter

	// keyed state backend: "heap" (default) or "pebble" in stateDir
	stateBackend string
	stateDir     string
	stateMemory  int64 // bytes of memory budget for the pebble backend (block cache + memtables); 0: default
	incremental  bool  // incremental checkpoints of pebble state

	// operator
	name string
	uid  string

	// window
	lateness int64 // ms
	trigger  *WindowTrigger
	retract  bool
}

func (c *config) check(where string, allowed scope) error {
	var bad []string
	for _, o := range c.used {
		if o.scope&allowed == 0 {
			bad = append(bad, o.name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("weir: %s: option(s) %s not valid here", where, strings.Join(bad, ", "))
	}
	return nil
}

func defaultJobConfig() config {
	return config{
		parallelism:    1,
		maxParallelism: keygroup.DefaultMaxParallelism,
		batchSize:      1024,
		bufferTimeout:  10 * time.Millisecond,
		queueCapacity:  4,
		ckTimeout:      10 * time.Minute,
		ckRetain:       3,
		restart:        DefaultRestartPolicy(),
	}
}

// validate checks a job configuration and fills defaults.
func (c *config) validate() error {
	switch {
	case c.parallelism < 1:
		return fmt.Errorf("weir: parallelism %d: must be at least 1", c.parallelism)
	case c.maxParallelism < 1 || c.maxParallelism > 1<<15:
		return fmt.Errorf("weir: max parallelism %d: must be in [1, 32768]", c.maxParallelism)
	case c.parallelism > c.maxParallelism:
		return fmt.Errorf("weir: parallelism %d exceeds max parallelism %d", c.parallelism, c.maxParallelism)
	case c.batchSize < 1:
		return fmt.Errorf("weir: batch size %d: must be at least 1", c.batchSize)
	case c.bufferTimeout < 0:
		return fmt.Errorf("weir: buffer timeout %v: must not be negative", c.bufferTimeout)
	case c.queueCapacity < 1:
		return fmt.Errorf("weir: queue capacity %d: must be at least 1", c.queueCapacity)
	case c.ckDir != "" && c.ckInterval <= 0:
		return fmt.Errorf("weir: checkpoint interval %v: must be positive", c.ckInterval)
	case c.ckRetain < 1:
		return fmt.Errorf("weir: retain %d checkpoints: must be at least 1", c.ckRetain)
	case c.ckTimeout <= 0:
		return fmt.Errorf("weir: checkpoint timeout %v: must be positive", c.ckTimeout)
	case c.microbatch < 0:
		return fmt.Errorf("weir: microbatch %v: must not be negative (0: continuous)", c.microbatch)
	}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.clock == nil {
		c.clock = time.Now
	}
	return nil
}

// String prints the effective job options.
func (c *config) String() string {
	return fmt.Sprintf("parallelism=%d max-parallelism=%d batch-size=%d buffer-timeout=%v queue-capacity=%d metrics=%q checkpoint-interval=%v checkpoint-dir=%q",
		c.parallelism, c.maxParallelism, c.batchSize, c.bufferTimeout, c.queueCapacity, c.metricsAddr, c.ckInterval, c.ckDir)
}

// Parallelism sets how many subtasks run an operator; given to NewJob it is
// the default for every operator. Stateless operators chained to their
// input run at their input's parallelism unless told otherwise.
func Parallelism(n int) Option {
	return option{fmt.Sprintf("Parallelism(%d)", n), scopeJob | scopeOp, func(c *config) { c.parallelism = n }}
}

// MaxParallelism sets the number of key groups (default 128): the upper
// bound for parallelism, fixed for the life of the job's state.
func MaxParallelism(n int) Option {
	return option{fmt.Sprintf("MaxParallelism(%d)", n), scopeJob, func(c *config) { c.maxParallelism = n }}
}

// BatchSize sets how many records a batch on an edge holds at most (default
// 1024).
func BatchSize(n int) Option {
	return option{fmt.Sprintf("BatchSize(%d)", n), scopeJob, func(c *config) { c.batchSize = n }}
}

// BufferTimeout bounds how long a record may wait in a partly filled output
// batch before it is sent (default 10ms). Zero sends after every input batch.
func BufferTimeout(d time.Duration) Option {
	return option{fmt.Sprintf("BufferTimeout(%v)", d), scopeJob, func(c *config) { c.bufferTimeout = d }}
}

// QueueCapacity sets how many batches an input channel buffers before its
// sender blocks (default 4). This bounds memory and is where backpressure
// starts.
func QueueCapacity(n int) Option {
	return option{fmt.Sprintf("QueueCapacity(%d)", n), scopeJob, func(c *config) { c.queueCapacity = n }}
}

// MetricsAddr serves Prometheus metrics at http://addr/metrics while the job
// runs. An address without a host (":9249") listens on loopback only.
func MetricsAddr(addr string) Option {
	return option{fmt.Sprintf("MetricsAddr(%q)", addr), scopeJob, func(c *config) { c.metricsAddr = addr }}
}

// Logger sets the job's logger (default: discard).
func Logger(l *slog.Logger) Option {
	return option{"Logger", scopeJob, func(c *config) { c.logger = l }}
}

// Name names an operator in metrics, logs and errors.
func Name(name string) Option {
	return option{fmt.Sprintf("Name(%q)", name), scopeOp, func(c *config) { c.name = name }}
}

// UID gives an operator a stable identity that savepoints use to map state
// to operators across code changes. It defaults to the operator's name.
func UID(uid string) Option {
	return option{fmt.Sprintf("UID(%q)", uid), scopeOp, func(c *config) { c.uid = uid }}
}

// Clock replaces the wall clock that drives processing time (processing-time
// timers and triggers, state TTL, ingestion timestamps) — for tests.
func Clock(now func() time.Time) Option {
	return option{"Clock", scopeJob, func(c *config) { c.clock = now }}
}

// AllowedLateness keeps a window's state for d after it fired (by the
// watermark): events that arrive in that time are still added and cause a
// corrected result (a late firing); only events later than that are dropped
// (and counted, and sent to LateEvents). Flink's allowedLateness.
func AllowedLateness(d time.Duration) Option {
	return option{fmt.Sprintf("AllowedLateness(%v)", d), scopeWindow, func(c *config) { c.lateness = d.Milliseconds() }}
}

// Trigger sets when a window emits its result (default: EventTimeTrigger).
func Trigger(t WindowTrigger) Option {
	return option{"Trigger(" + t.String() + ")", scopeWindow, func(c *config) { c.trigger = &t }}
}

// Accumulating makes every firing of a window after the first emit the
// window's new value as UpdateAfter (the default): a consumer keeping the
// latest value per window stays right.
func Accumulating() Option {
	return option{"Accumulating()", scopeWindow, func(c *config) { c.retract = false }}
}

// Retracting makes every firing of a window after the first emit
// UpdateBefore with the previous value, then UpdateAfter with the new one,
// so that a downstream sum (adding UpdateAfter and Insert, subtracting
// UpdateBefore and Delete) stays exact.
func Retracting() Option {
	return option{"Retracting()", scopeWindow, func(c *config) { c.retract = true }}
}

// Checkpointing takes a checkpoint every interval into dir (one
// subdirectory per checkpoint; the first after a random delay in [0,
// interval], as Flink does, so that checkpoints do not keep one phase
// against the job's windows) and makes the job fault tolerant: after a
// failure it restarts from the latest complete checkpoint (see
// RestartPolicy), and a process started again with the same dir resumes
// from it. Every source must implement RestorableSource.
func Checkpointing(interval time.Duration, dir string) Option {
	return option{fmt.Sprintf("Checkpointing(%v, %q)", interval, dir), scopeJob, func(c *config) {
		c.ckInterval, c.ckDir = interval, dir
	}}
}

// CheckpointTimeout aborts a checkpoint that has not completed within d
// (default 10 minutes).
func CheckpointTimeout(d time.Duration) Option {
	return option{fmt.Sprintf("CheckpointTimeout(%v)", d), scopeJob, func(c *config) { c.ckTimeout = d }}
}

// RetainCheckpoints keeps the newest n completed checkpoints (default 3).
func RetainCheckpoints(n int) Option {
	return option{fmt.Sprintf("RetainCheckpoints(%d)", n), scopeJob, func(c *config) { c.ckRetain = n }}
}

// RestoreFrom starts the job from a savepoint or checkpoint directory
// instead of the latest checkpoint of the checkpoint dir. The parallelism
// may differ from the one that took it: keyed state moves by key group.
func RestoreFrom(path string) Option {
	return option{fmt.Sprintf("RestoreFrom(%q)", path), scopeJob, func(c *config) { c.restoreFrom = path }}
}

// AllowNonRestoredState lets a job start from a savepoint that holds state
// of operators the job no longer has (matched by UID); that state is
// dropped. Without it such a restore fails.
func AllowNonRestoredState() Option {
	return option{"AllowNonRestoredState()", scopeJob, func(c *config) { c.allowNonRest = true }}
}

// StartFresh lets a job start empty when its checkpoint dir holds
// checkpoints of which none is usable. Without it the job refuses to start,
// rather than silently reprocess or lose its state.
func StartFresh() Option {
	return option{"StartFresh()", scopeJob, func(c *config) { c.startFresh = true }}
}

// AllowDuplicateOutput lets a job restore a checkpoint older than output
// its sinks already committed (its newer checkpoints are damaged, or
// RestoreFrom names an older one), or start empty after such output: the
// records after the restored checkpoint are processed again and their
// output is committed a second time. Without it the job refuses to start,
// with a *DuplicateOutputError naming the checkpoints, unless every
// committing sink is a ReplaySafeCommitter.
func AllowDuplicateOutput() Option {
	return option{"AllowDuplicateOutput()", scopeJob, func(c *config) { c.allowDup = true }}
}

// RestartPolicy says how a checkpointed job restarts after a failure:
// exponential backoff from InitialBackoff to MaxBackoff, and at most
// MaxFailures failures within Interval, after which Run fails.
type RestartPolicy struct {
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	MaxFailures    int
	Interval       time.Duration
}

// DefaultRestartPolicy: 100ms doubling to 10s, at most 10 failures in 10
// minutes.
func DefaultRestartPolicy() RestartPolicy {
	return RestartPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second, MaxFailures: 10, Interval: 10 * time.Minute}
}

// Restarts sets the restart policy of a checkpointed job. MaxFailures 0
// disables restarts.
func Restarts(p RestartPolicy) Option {
	return option{fmt.Sprintf("Restarts(%+v)", p), scopeJob, func(c *config) { c.restart = p }}
}

// HeapState keeps keyed state in memory as Go values (the default): the
// fastest, bounded by memory.
func HeapState() Option {
	return option{"HeapState()", scopeJob, func(c *config) { c.stateBackend = "heap" }}
}

// PebbleState keeps the keyed state and timers of Process operators in a
// Pebble LSM under dir, so state can be larger than memory; memoryBudget
// bounds the bytes each operator's Pebble keeps in memory (0: a default).
// Checkpoints copy Pebble state by key group like heap state (not yet
// incrementally); window operators keep their state on the heap.
func PebbleState(dir string, memoryBudget int64) Option {
	return option{fmt.Sprintf("PebbleState(%q, %d)", dir, memoryBudget), scopeJob, func(c *config) {
		c.stateBackend, c.stateDir, c.stateMemory = "pebble", dir, memoryBudget
	}}
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
func IncrementalCheckpoints() Option {
	return option{"IncrementalCheckpoints()", scopeJob, func(c *config) { c.incremental = true }}
}
