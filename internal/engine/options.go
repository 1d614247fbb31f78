package engine

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/keygroup"
)

// The options are typed by where they may be given, so that a misplaced
// option does not compile (franz-go's Opt, ProducerOpt and ConsumerOpt do the
// same): a JobOption goes to NewJob; an OperatorOption to any operator; a
// WindowOption to Window, Aggregate, Reduce and ProcessWindow; a SourceOption
// to FromSource; a RetentionOption to the operators whose state grows
// without bound. Every OperatorOption is also a WindowOption, SourceOption
// and RetentionOption; an Option (Parallelism) is both a JobOption and an
// OperatorOption. The job options are in job_options.go, the operator,
// source and retention options in operator_options.go, the window options
// in window_options.go.

// JobOption configures a job: it is given to NewJob.
type JobOption interface {
	String() string
	jobOption() option
}

// OperatorOption configures one operator: FromSource, Map, Filter, KeyBy's
// consumers, Process, To, the joins, Window... Every OperatorOption is also
// a WindowOption, a SourceOption and a RetentionOption.
type OperatorOption interface {
	WindowOption
	SourceOption
	RetentionOption
	operatorOption() option
}

// WindowOption configures a window operator: Window, Aggregate, Reduce and
// ProcessWindow take it. AllowedLateness, Trigger, Accumulating and
// Retracting are window options, and so is every OperatorOption.
type WindowOption interface {
	String() string
	windowOption() option
}

// SourceOption configures a source: FromSource takes it. OnBadRecord is a
// source option, and so is every OperatorOption.
type SourceOption interface {
	String() string
	sourceOption() option
}

// RetentionOption configures an operator whose state would otherwise grow
// without bound: Join, JoinChanges, AggregateChanges, NormalizeChanges and
// Fold take it. StateRetention is a retention option, and so is every
// OperatorOption.
type RetentionOption interface {
	String() string
	retentionOption() option
}

// Option is valid both for a job and for an operator: Parallelism, which
// given to NewJob is the default of every operator.
type Option interface {
	JobOption
	OperatorOption
}

// option is what every option carries: its printed form and what it sets.
type option struct {
	name string
	fn   func(*config)
}

func (o option) String() string { return o.name }

// The concrete option kinds; each has the methods of the interfaces it may
// be passed as.
type (
	jobOpt    option
	opOpt     option
	bothOpt   option
	windowOpt option
)

func (o jobOpt) String() string           { return o.name }
func (o jobOpt) jobOption() option        { return option(o) }
func (o opOpt) String() string            { return o.name }
func (o opOpt) operatorOption() option    { return option(o) }
func (o opOpt) windowOption() option      { return option(o) }
func (o opOpt) sourceOption() option      { return option(o) }
func (o opOpt) retentionOption() option   { return option(o) }
func (o bothOpt) String() string          { return o.name }
func (o bothOpt) jobOption() option       { return option(o) }
func (o bothOpt) operatorOption() option  { return option(o) }
func (o bothOpt) windowOption() option    { return option(o) }
func (o bothOpt) sourceOption() option    { return option(o) }
func (o bothOpt) retentionOption() option { return option(o) }
func (o windowOpt) String() string        { return o.name }
func (o windowOpt) windowOption() option  { return option(o) }

// config is the union of job-level and operator-level settings. Operators
// inherit the job's values for the fields they do not set.
type config struct {
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
	// changelog checkpoints of pebble state (StateChangelog), and the
	// time between materializations (0: by size alone)
	changelog           bool
	materializeInterval time.Duration

	// operator
	name string
	uid  string

	// window
	lateness int64 // ms
	trigger  *WindowTrigger
	retract  bool
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
	s := fmt.Sprintf("parallelism=%d max-parallelism=%d batch-size=%d buffer-timeout=%v queue-capacity=%d metrics=%q checkpoint-interval=%v checkpoint-dir=%q",
		c.parallelism, c.maxParallelism, c.batchSize, c.bufferTimeout, c.queueCapacity, c.metricsAddr, c.ckInterval, c.ckDir)
	if c.stateBackend == "pebble" {
		s += fmt.Sprintf(" state-backend=pebble state-dir=%q state-memory=%d incremental=%t changelog=%t", c.stateDir, c.stateMemory, c.incremental, c.changelog)
		if c.changelog {
			s += fmt.Sprintf(" materialize-interval=%v", c.materializeInterval)
		}
	}
	return s
}
