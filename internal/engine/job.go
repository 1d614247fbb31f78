package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/web"
)

// Job is a dataflow graph under construction and, once Run, its execution.
// Build the graph with FromSource and the package functions, then call Run
// once.
type Job struct {
	name    string
	cfg     config
	nodes   []*node
	errs    []error
	metrics *metrics.Registry
	run     runInfo // what the web server shows (web.go)
	// groupRunner runs the job in group mode (AppID): the first source
	// that offers one (group.RunnerSource).
	groupRunner group.Runner
	// groupPar is each node's parallelism as configured (group mode:
	// every local run starts from it).
	groupPar  []int
	groupPart map[*edge]partitioning

	mu struct {
		sync.Mutex
		ran   bool
		coord *coordinator.Coordinator // of the running attempt, if it checkpoints
		// changed is closed (and replaced) when coord changes or Run
		// returns: what Savepoint and Checkpoint wait on (job_running.go).
		changed  chan struct{}
		finished bool                  // Run returned
		restored string                // path of the checkpoint the last attempt restored
		stopped  string                // savepoint of a stop-with-savepoint that ended Run
		dup      *DuplicateOutputError // what AllowDuplicateOutput let through (DuplicateOutput)
	}
}

// NewJob returns an empty job. Options set job-wide defaults (Parallelism,
// BatchSize, BufferTimeout, MetricsAddr, ...).
func NewJob(name string, opts ...JobOption) *Job {
	j := &Job{name: name, cfg: defaultJobConfig(), metrics: metrics.NewRegistry(name)}
	for _, o := range opts {
		o.jobOption().fn(&j.cfg)
	}
	return j
}

// Name is the job's name.
func (j *Job) Name() string { return j.name }

// partitioning is how records of an edge are distributed over the
// subtasks of its consumer.
type partitioning uint8

const (
	forward   partitioning = iota // subtask i to subtask i; chained when possible
	hashed                        // by key group
	rebalance                     // round robin
	broadcast                     // to every subtask
)

func (p partitioning) String() string {
	return [...]string{"forward", "hash", "rebalance", "broadcast"}[p]
}

// node is one operator of the graph. Its typed behaviour is captured in
// closures by the package function that created it, so the graph itself is
// untyped.
type node struct {
	id          int
	name        string
	uid         string
	parallelism int
	inputs      []*edge
	outputs     []*edge

	// build instantiates the operator for one subtask. out is the node's
	// output consumer (a consumer[OUT]); it returns one consumer per input
	// edge (consumer[IN] each). Source nodes set run instead.
	build func(st *subtask, out any) ([]any, error)
	// run is the loop of a source subtask pushing into out.
	run func(st *subtask, out any) error
	// splits enumerates a source's splits before the job starts; the source
	// parallelism is capped by their number.
	splits func(ctx context.Context) (int, error)
	// tee fans the node's output out to several consumers (or none).
	tee func(outs []any) any

	// Windows: the input type (checked by LateEvents) and the side output
	// of late events, a node with no inputs chained to this one.
	lateType   reflect.Type
	side       *node
	sideStream any
	sideOf     *node
	// valuesNeeded, when set, makes a window that reads only keys (Count)
	// ship whole records again: LateEvents calls it (late events carry
	// their values).
	valuesNeeded func()

	// backendState: the operator keeps its keyed state in the job's state
	// backend (Process), so PebbleState moves it out of memory.
	backendState bool
	// stateWindow: a window aggregation that runs on a process function,
	// its state in the backend, when the backend is Pebble
	// (window_state.go); stateErr is why it cannot (its key or
	// accumulator type has no encoding), which fails a job on Pebble.
	stateWindow bool
	stateErr    error

	// committer of a two-phase-commit sink
	committer Committer
	// impl is the Source or Sink of a source or sink node (group mode
	// hands them to its runner).
	impl any
	// splitIDs are a source's splits, as enumerated for the running
	// attempt (group mode: a repartition writer names its upstream tasks
	// by them).
	splitIDs []string
	// exchangeOf is set on the reader node of a repartition topic (group
	// mode, exchange.go).
	exchangeOf *group.Exchange
	// union marks a Union node (group mode cuts a KeyBy behind it, or
	// behind one-input operators after it, on its branches: exchange.go).
	union bool
}

// edge connects two nodes.
type edge struct {
	from, to *node
	index    int // which input of to
	part     partitioning
	chained  bool
	// writer returns, for one subtask of from, the consumer that routes
	// records to the gates of to's subtasks.
	writer func(st *subtask, targets []target) any
	// deliver adapts the typed input consumer in to untyped messages: it
	// pushes a received batch and recycles it.
	deliver func(in any) func(b any) error
	// empty makes a record-less batch carrying only a watermark.
	empty func(wm int64) any
	// exchange rewrites a hash edge to cross processes through a
	// repartition topic (group mode, exchange.go): a writer after each of
	// ups (the sender, or the branches of the union it is), whose sources'
	// splits are the upstream tasks.
	exchange func(x *group.Exchange, ups []exchangeUp)
	// again adds an edge like this one (its element type and
	// partitioning) from another node to another: group mode copies the
	// one-input operators between a Union and a KeyBy onto each branch of
	// the union (exchange.go). Nil on hash edges.
	again func(from, to *node) *edge
}

// target is one receiving gate channel of an edge.
type target struct {
	gate    *exec.Gate
	channel int
}

func (j *Job) addNode(name, kind string, parallelism int, cfg config) *node {
	n := &node{id: len(j.nodes), parallelism: parallelism}
	n.name = cfg.name
	if n.name == "" {
		n.name = name
	}
	if n.name == "" {
		n.name = fmt.Sprintf("%s-%d", kind, n.id)
	}
	n.uid = cfg.uid
	if n.uid == "" {
		n.uid = n.name
	}
	j.nodes = append(j.nodes, n)
	return n
}

func (j *Job) addEdge(from, to *node, part partitioning) *edge {
	e := &edge{from: from, to: to, index: len(to.inputs), part: part}
	from.outputs = append(from.outputs, e)
	to.inputs = append(to.inputs, e)
	return e
}

func (j *Job) fail(err error) { j.errs = append(j.errs, err) }

// opConfig applies operator options on top of the job defaults.
func (j *Job) opConfig(opts []OperatorOption) config {
	c := config{parallelism: 0}
	for _, o := range opts {
		o.operatorOption().fn(&c)
	}
	return c
}

// Run executes the job until its bounded inputs are exhausted, ctx is
// cancelled, or an operator fails. It returns nil when every source ended
// and every sink closed; the error of the first failing operator (a
// *TaskError naming it, to be found with errors.As); or ctx's cause. A Job
// runs once.
func (j *Job) Run(ctx context.Context) error {
	j.mu.Lock()
	if j.mu.ran {
		j.mu.Unlock()
		return errors.New("weir: job already ran")
	}
	j.mu.ran = true
	j.mu.Unlock()
	defer j.runEnded()
	if err := errors.Join(j.errs...); err != nil {
		return err
	}
	if err := j.cfg.validate(); err != nil {
		return err
	}
	if len(j.nodes) == 0 {
		return errors.New("weir: job has no operators")
	}
	j.metrics.Now = j.cfg.clock
	start := time.Now()
	j.noteGraph()
	j.run.start.Store(start.UnixNano())
	j.run.setState(web.StateRunning)
	stopServers, err := j.startServers()
	if err != nil {
		j.run.setState(web.StateFailed)
		return err
	}
	defer stopServers()
	j.cfg.logger.Info("job starting", "job", j.name, "options", j.cfg.String())
	if err := j.checkStateTypes(); err != nil {
		j.run.setState(web.StateFailed)
		return err
	}
	if heap := j.HeapStateOperators(); j.cfg.stateBackend == "pebble" && len(heap) > 0 {
		j.cfg.logger.Warn("PebbleState does not cover these operators: they keep their keyed state in memory",
			"job", j.name, "operators", heap)
	}
	if j.cfg.appID != "" {
		err = j.runGroup(ctx)
	} else {
		err = j.runAttempts(ctx)
	}
	j.run.setState(endState(ctx, err))
	j.cfg.logger.Info("job finished", "job", j.name, "elapsed", time.Since(start), "err", err)
	return err
}

// runAttempts runs the job and, when it checkpoints, restarts it from the
// latest complete checkpoint after a failure, under the restart policy.
func (j *Job) runAttempts(ctx context.Context) error {
	var store *ckstore.Store
	var restored *restoredState
	var err error
	if j.cfg.ckDir != "" {
		if store, err = ckstore.Open(j.ckConfig()); err != nil {
			return err
		}
	}
	if j.cfg.restoreFrom != "" {
		if restored, err = ckstore.LoadSavepoint(j.ckConfig(), store, j.cfg.restoreFrom); err != nil {
			return err
		}
	} else if store != nil {
		if restored, err = store.Latest(); err != nil {
			return err
		}
	}
	pol := j.cfg.restart
	var failures []time.Time
	backoff := pol.InitialBackoff
	for {
		if restored != nil {
			j.cfg.logger.Info("restoring", "checkpoint", restored.ID, "path", restored.Path)
			j.mu.Lock()
			j.mu.restored = restored.Path
			j.mu.Unlock()
			j.metrics.Checkpoints.SetRestored(metrics.RestoreRecord{ID: restored.ID, Path: restored.Path, Time: time.Now()})
		}
		err := j.execute(ctx, store, restored)
		if errors.Is(err, coordinator.ErrStopped) {
			j.cfg.logger.Info("job stopped with a savepoint")
			j.noteStopped(err)
			return nil
		}
		var perm permanent
		if errors.As(err, &perm) {
			if p, ok := err.(permanent); ok {
				return p.error
			}
			return err // wrapped: keep what the wrapping says (task, checkpoint)
		}
		if err == nil || store == nil || ctx.Err() != nil {
			return err
		}
		now := time.Now()
		failures = append(failures, now)
		for len(failures) > 0 && now.Sub(failures[0]) > pol.Interval {
			failures = failures[1:]
		}
		if pol.MaxFailures <= 0 || len(failures) > pol.MaxFailures {
			return fmt.Errorf("weir: job failed %d times within %v, giving up: %w", len(failures), pol.Interval, err)
		}
		j.cfg.logger.Warn("job failed; restarting from the latest checkpoint", "err", err, "backoff", backoff, "failures", len(failures))
		j.metrics.Checkpoints.Restarts.Add(1)
		j.run.setState(web.StateRestarting)
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		j.run.setState(web.StateRunning)
		backoff = min(2*backoff, pol.MaxBackoff)
		latest, lerr := store.Latest()
		if lerr != nil {
			return errors.Join(err, lerr)
		}
		if latest != nil {
			restored = latest
		}
	}
}

// Savepoint takes a savepoint of the running job into path (a directory
// that must not exist) and returns once it is complete. With stop, the job
// then ends: its sources read nothing more, Run returns nil, and the
// savepoint is where a new job (maybe at another parallelism) can resume
// with RestoreFrom. Savepoints need Checkpointing. Called while the job
// starts or restarts, it waits (bounded by ctx) until the job runs.
func (j *Job) Savepoint(ctx context.Context, path string, stop bool) (string, error) {
	if j.cfg.ckDir == "" {
		return "", errors.New("weir: savepoints need Checkpointing")
	}
	c, err := j.runningCoordinator(ctx)
	if err != nil {
		return "", err
	}
	p, _, err := c.Savepoint(ctx, filepath.Clean(path), stop)
	return p, err
}

// HeapStateOperators names the keyed operators of the job whose state
// stays in Go memory, out of the job's state backend. Process keeps its
// state in the backend; so do, on PebbleState, Aggregate and Reduce over
// every window with any trigger (AllowedLateness, Retracting and
// LateEvents included: they run on process functions, window_state.go,
// window_state_trigger.go, window_state_sliding.go), and ProcessWindow,
// CoGroup and WindowJoin over event-time Tumbling, Hopping and Session
// windows with the default trigger (window_state_process.go). The others
// (ProcessWindow with another trigger or over Global windows) are named. A
// job with PebbleState logs them as a warning when it starts; `weir sql`
// prints them when 'state.backend.type' asks for RocksDB.
func (j *Job) HeapStateOperators() []string {
	var out []string
	for _, n := range j.nodes {
		if n.inBackend(j.cfg.stateBackend) {
			continue
		}
		for _, e := range n.inputs {
			if e.part == hashed {
				out = append(out, n.name)
				break
			}
		}
	}
	return out
}

// inBackend reports whether n keeps its keyed state in the state backend
// named backend ("heap", "pebble"; "" is the heap).
func (n *node) inBackend(backend string) bool {
	return n.backendState || n.stateWindow && n.stateErr == nil && backend == "pebble"
}

// checkStateTypes fails a job on Pebble whose window aggregations would
// keep their state there but whose types cannot be encoded: before it
// starts, naming the operator, rather than when a subtask opens.
func (j *Job) checkStateTypes() error {
	if j.cfg.stateBackend != "pebble" {
		return nil
	}
	var errs []error
	for _, n := range j.nodes {
		if n.stateWindow && n.stateErr != nil {
			errs = append(errs, fmt.Errorf("weir: window operator %q cannot keep its state in PebbleState: %w", n.name, n.stateErr))
		}
	}
	return errors.Join(errs...)
}

// StateBackend names the backend the job's keyed state is in: "pebble"
// with PebbleState, "heap" otherwise (HeapState, the default), the last
// of the two options winning. Code that builds operators for the job
// (SQL's planner) reads it to choose operators whose state the backend
// holds.
func (j *Job) StateBackend() string {
	if j.cfg.stateBackend == "pebble" {
		return "pebble"
	}
	return "heap"
}

// RestoredFrom is the checkpoint or savepoint directory the job's last
// attempt started from ("" if it started empty).
func (j *Job) RestoredFrom() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.mu.restored
}

// BatchSize is the job's batch size (the BatchSize option, 1024 by
// default): the most records an operator emits before it pushes them on.
// An operator that reuses the memory of the records it emits once they
// have been pushed (the SQL planner's Calc into a sink that does not keep
// rows) sizes its buffers by it.
func (j *Job) BatchSize() int { return max(1, j.cfg.batchSize) }
