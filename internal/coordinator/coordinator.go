// Package coordinator is the checkpoint coordinator of one execution
// attempt of a job: it triggers checkpoints at the sources (periodically,
// the first after a random delay as Flink's coordinator does; or asked
// for: savepoints, stop-with-savepoint, Job.Checkpoint),
// collects every task's acknowledgement, has the checkpoint written and
// then its sinks' output committed. It also holds what travels between the
// coordinator and the tasks: the barrier and a task's part of a checkpoint.
//
// Its time comes through Time, so tests drive it by hand (raft's Tick).
package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// Coordinator triggers checkpoints at the sources, collects every task's
// acknowledgement, has the checkpoint written (its metadata last), and then
// tells the sinks to commit. It runs in its own goroutine for one execution
// attempt; at most one checkpoint is in flight.
type Coordinator struct {
	interval time.Duration
	// firstDelay picks when the first periodic checkpoint is due after
	// Run starts (see Config.FirstDelay).
	firstDelay func(interval time.Duration) time.Duration
	// epoch > 0 is microbatch execution: the next checkpoint (the end of
	// the next epoch) is due epoch after the previous one settled, not on a
	// fixed period, because the sources read nothing between an epoch's end
	// and its commit.
	epoch   time.Duration
	timeout time.Duration
	log     *slog.Logger
	metrics *metrics.Checkpoints

	// triggers has one channel per source subtask, by node id.
	triggers map[int][]chan *Barrier
	nsources int
	ntasks   int
	acks     chan *TaskSnapshot
	finished chan struct{}

	nextID int64
	// persist writes a complete checkpoint; commit runs the sinks'
	// committers for it. Both run in the coordinator goroutine, so tasks go
	// on processing while state is written (the asynchronous part).
	persist   func(ctx context.Context, id int64, final bool, snaps []*TaskSnapshot) error
	persistSP func(ctx context.Context, id int64, path string, snaps []*TaskSnapshot) error
	commit    func(ctx context.Context, id int64, snaps []*TaskSnapshot) error

	// requests are savepoints asked for while the job runs.
	requests chan *savepointReq

	// committed is the id of the newest checkpoint or savepoint whose
	// sinks were told to commit; sources poll it to notify their
	// CheckpointListener readers.
	committed atomic.Int64
	// settled wakes sources of microbatch jobs waiting for their epoch.
	settled settleSignal

	// time is where the loop gets its ticks, timeouts and durations: the
	// wall clock in a job, a hand-driven one in tests (raft's Tick), so a
	// test decides when checkpoints start and time out.
	time Time
}

// Time is the coordinator's source of time. A nil field means the wall
// clock's.
type Time struct {
	// Ticks start periodic checkpoints (and, in microbatch mode, each
	// epoch's clock).
	Ticks func(interval time.Duration) (<-chan time.Time, func())
	// After fires once after d: the first periodic checkpoint is due.
	After func(d time.Duration) (<-chan time.Time, func())
	// Timeout fires once when a checkpoint has run for d.
	Timeout func(d time.Duration) (<-chan time.Time, func())
	// Now measures checkpoint durations (metrics and logs only).
	Now func() time.Time
}

func (t *Time) fill() {
	if t.Ticks == nil {
		t.Ticks = func(d time.Duration) (<-chan time.Time, func()) {
			tk := time.NewTicker(d)
			return tk.C, tk.Stop
		}
	}
	if t.Timeout == nil {
		t.Timeout = func(d time.Duration) (<-chan time.Time, func()) {
			tm := time.NewTimer(d)
			return tm.C, func() { tm.Stop() }
		}
	}
	if t.After == nil {
		t.After = func(d time.Duration) (<-chan time.Time, func()) {
			tm := time.NewTimer(d)
			return tm.C, func() { tm.Stop() }
		}
	}
	if t.Now == nil {
		t.Now = time.Now
	}
}

// ErrStopped ends a job stopped with a savepoint; Run returns nil for it.
var ErrStopped = errors.New("weir: job stopped with a savepoint")

// StopError ends an attempt stopped with a savepoint; it is ErrStopped
// with the savepoint's path.
type StopError struct{ Path string }

func (e *StopError) Error() string        { return ErrStopped.Error() + " into " + e.Path }
func (e *StopError) Is(target error) bool { return target == ErrStopped }

// savepointReq asks for a savepoint into path or, with path "", for a
// checkpoint now (Job.Checkpoint).
type savepointReq struct {
	path string
	stop bool
	resp chan savepointResult
}

// what names the request in errors.
func (r *savepointReq) what() string {
	switch {
	case r.path == "":
		return "checkpoint"
	case r.stop:
		return "stop-with-savepoint"
	}
	return "savepoint"
}

type savepointResult struct {
	path string
	id   int64
	err  error
}

// Savepoint asks for a savepoint into path and waits for it: with path
// "", for a checkpoint now (Job.Checkpoint).
func (c *Coordinator) Savepoint(ctx context.Context, path string, stop bool) (string, int64, error) {
	req := &savepointReq{path: path, stop: stop, resp: make(chan savepointResult, 1)}
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return "", 0, context.Cause(ctx)
	}
	select {
	case r := <-req.resp:
		return r.path, r.id, r.err
	case <-ctx.Done():
		return "", 0, context.Cause(ctx)
	}
}

// Ack hands a task's part of a checkpoint to the coordinator.
func (c *Coordinator) Ack(ctx context.Context, s *TaskSnapshot) error {
	select {
	case c.acks <- s:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// SourceFinished tells the coordinator that one source subtask read all
// its input.
func (c *Coordinator) SourceFinished(ctx context.Context) error {
	select {
	case c.finished <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

type inflight struct {
	id      int64
	final   bool
	sp      *savepointReq
	started time.Time
	snaps   []*TaskSnapshot
}

// Run is the coordinator loop. It returns when the final checkpoint has
// been committed (nil), with a *StopError after a stop-with-savepoint, or
// when ctx ends.
func (c *Coordinator) Run(ctx context.Context) error {
	c.time.fill()
	// Periodic checkpoints start after a random delay in [0, interval] and
	// then follow the interval, as Flink's CheckpointCoordinator schedules
	// them (its delay is drawn between the minimum pause, which weir does
	// not have, and the interval). Started on the job's first moment, they
	// would keep one phase against everything else that starts there:
	// event-time windows of a source whose first event is due at the start
	// fire in that phase, and a barrier's copy and the deferred encoding of
	// the window's state would coincide with every firing (Nexmark q5 and
	// q8). A random phase makes that an accident of one
	// run instead of a rule of every run. Microbatch epochs are the unit of
	// recovery and keep their grid: the first ends one epoch after the
	// start.
	var ticks, first <-chan time.Time
	stopTicks, stopFirst := func() {}, func() {}
	if c.epoch > 0 {
		ticks, stopTicks = c.time.Ticks(c.epoch)
	} else {
		first, stopFirst = c.time.After(c.pickFirstDelay())
	}
	defer func() { stopTicks(); stopFirst() }()
	// settle records that checkpoint id ended (committed, failed or
	// aborted) and, in microbatch mode, starts the next epoch's clock: its
	// end is due one epoch from now.
	settle := func(id int64) {
		c.settled.set(id)
		if c.epoch > 0 {
			stopTicks()
			ticks, stopTicks = c.time.Ticks(c.epoch)
		}
	}
	var cur *inflight
	// carry holds the sink output staged by checkpoints that were aborted
	// or failed to persist: the next complete checkpoint commits it, so a
	// failed checkpoint delays output but never loses it.
	var carry []Committable
	var timeout <-chan time.Time
	stopTimer := func() {}
	defer func() { stopTimer() }()
	finished, wantFinal := 0, false
	var queued []*savepointReq
	defer func() {
		for _, r := range queued {
			r.resp <- savepointResult{err: fmt.Errorf("weir: job ended before the %s", r.what())}
		}
		if cur != nil && cur.sp != nil {
			cur.sp.resp <- savepointResult{err: fmt.Errorf("weir: job ended before the %s completed", cur.sp.what())}
		}
	}()
	// begin starts checkpoint cur: a barrier to every source subtask (each
	// trigger channel has room for one, and at most one checkpoint is in
	// flight, so this never blocks) and the timeout.
	begin := func(in *inflight, b *Barrier) {
		cur = in
		for _, chans := range c.triggers {
			for _, ch := range chans {
				ch <- b
			}
		}
		stopTimer()
		timeout, stopTimer = c.time.Timeout(c.timeout)
		c.log.Debug("checkpoint triggered", "id", in.id, "final", in.final, "savepoint", in.sp != nil)
	}
	trigger := func(final bool) {
		c.nextID++
		begin(&inflight{id: c.nextID, final: final, started: c.time.Now()}, &Barrier{ID: c.nextID, Final: final})
	}
	triggerSP := func(req *savepointReq) {
		c.nextID++
		begin(&inflight{id: c.nextID, sp: req, started: c.time.Now()}, &Barrier{ID: c.nextID, Stop: req.stop, Savepoint: true})
	}
	// next starts what waits once no checkpoint is in flight: a queued
	// request, else the final checkpoint if the input is done.
	next := func() {
		if len(queued) > 0 {
			req := queued[0]
			queued = queued[1:]
			triggerSP(req)
		} else if wantFinal {
			trigger(true)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-first:
			// From here on, every interval (a fixed rate, as Flink's timer).
			first, stopFirst = nil, func() {}
			ticks, stopTicks = c.time.Ticks(c.interval)
			if cur == nil && !wantFinal {
				trigger(false)
			}
		case <-ticks:
			if cur == nil && !wantFinal {
				trigger(false)
			}
		case req := <-c.requests:
			switch {
			case wantFinal:
				req.resp <- savepointResult{err: errors.New("weir: the input is done; the job is finishing")}
			case cur == nil:
				triggerSP(req)
			default:
				queued = append(queued, req)
			}
		case <-c.finished:
			finished++
			if finished == c.nsources {
				wantFinal = true
				if cur == nil {
					trigger(true)
				}
			}
		case <-timeout:
			if cur == nil {
				continue
			}
			c.log.Warn("checkpoint aborted: not complete within the timeout", "id", cur.id, "timeout", c.timeout, "acks", len(cur.snaps), "tasks", c.ntasks)
			if cur.sp != nil {
				cur.sp.resp <- savepointResult{err: fmt.Errorf("weir: %s %d not complete within %v", cur.sp.what(), cur.id, c.timeout)}
				if cur.sp.stop {
					return fmt.Errorf("weir: stop-with-savepoint %d not complete within %v", cur.id, c.timeout)
				}
				cur.sp = nil
			}
			c.metrics.Aborted.Add(1)
			c.metrics.Record(metrics.CheckpointRecord{ID: cur.id, Status: metrics.Aborted, Trigger: cur.started, End: c.time.Now()})
			for _, s := range cur.snaps {
				carry = append(carry, s.Committables...)
			}
			// A final checkpoint cannot be dropped: the sources are waiting
			// for it. Its barriers are in flight; a new one would queue
			// behind them, so the job fails and restarts instead.
			if cur.final {
				return fmt.Errorf("weir: final checkpoint %d not complete within %v", cur.id, c.timeout)
			}
			settle(cur.id)
			cur = nil
			timeout = nil
			next()
		case s := <-c.acks:
			if cur == nil || s.ID != cur.id {
				// An aborted checkpoint's late acknowledgement: its state is
				// stale, but its sinks' staged output must not be lost.
				carry = append(carry, s.Committables...)
				continue
			}
			cur.snaps = append(cur.snaps, s)
			if len(cur.snaps) < c.ntasks {
				continue
			}
			done := cur
			cur = nil
			stopTimer()
			timeout = nil
			if len(carry) > 0 {
				done.snaps = append(done.snaps, &TaskSnapshot{ID: done.id, Task: "carried", Committables: carry})
				carry = nil
			}
			start := c.time.Now()
			if sp := done.sp; sp != nil && sp.path != "" {
				if err := c.completeSavepoint(ctx, done); err != nil {
					return err
				}
				if sp.stop {
					return &StopError{Path: sp.path}
				}
				settle(done.id)
				next()
				continue
			}
			// State that operators left to encode (TaskSnapshot.Deferred) is
			// encoded here, off the tasks' goroutines, before it is written.
			err := resolveAll(done.snaps)
			if err == nil {
				err = c.persist(ctx, done.id, done.final, done.snaps)
			}
			if err != nil {
				// A checkpoint that cannot be written is not fatal: the
				// previous one stays the restore point (Flink's tolerable
				// checkpoint failures are 0 by default; we keep going and log).
				c.log.Error("checkpoint failed", "id", done.id, "err", err)
				c.metrics.Failed.Add(1)
				c.metrics.Record(metrics.CheckpointRecord{ID: done.id, Status: metrics.Failed, Trigger: done.started, End: c.time.Now()})
				if done.sp != nil {
					done.sp.resp <- savepointResult{err: fmt.Errorf("weir: checkpoint %d: %w", done.id, err)}
					done.sp = nil
				}
				for _, s := range done.snaps {
					carry = append(carry, s.Committables...)
				}
				if done.final {
					return fmt.Errorf("weir: final checkpoint %d: %w", done.id, err)
				}
				settle(done.id)
				next()
				continue
			}
			c.metrics.Completed.Add(1)
			c.metrics.LastID.Store(done.id)
			end := c.time.Now()
			c.metrics.LastDurationNanos.Store(int64(end.Sub(done.started)))
			c.metrics.LastWriteNanos.Store(int64(end.Sub(start)))
			c.metrics.Record(metrics.CheckpointRecord{ID: done.id, Status: metrics.Completed, Trigger: done.started, End: end})
			c.log.Info("checkpoint complete", "id", done.id, "final", done.final, "duration", end.Sub(done.started))
			if err := c.commit(ctx, done.id, done.snaps); err != nil {
				if done.sp != nil {
					done.sp.resp <- savepointResult{err: err}
					done.sp = nil
				}
				return fmt.Errorf("weir: commit of checkpoint %d: %w", done.id, err)
			}
			c.committed.Store(done.id)
			if done.sp != nil {
				// Job.Checkpoint: complete and committed.
				done.sp.resp <- savepointResult{id: done.id}
				done.sp = nil
			}
			if done.final {
				return nil
			}
			settle(done.id)
			next()
		}
	}
}

// pickFirstDelay is how long after the start the first periodic checkpoint
// is due: Config.FirstDelay's choice, clamped to [0, interval].
func (c *Coordinator) pickFirstDelay() time.Duration {
	pick := c.firstDelay
	if pick == nil {
		pick = RandomFirstDelay
	}
	return min(max(pick(c.interval), 0), c.interval)
}

// RandomFirstDelay is the default Config.FirstDelay: uniform in [0,
// interval].
func RandomFirstDelay(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return rand.N(interval + 1)
}

// completeSavepoint writes a savepoint, commits the sinks' output it covers
// (like a checkpoint), and answers the request. Failing to write it is not
// fatal to the job unless it was a stop.
func (c *Coordinator) completeSavepoint(ctx context.Context, done *inflight) error {
	req := done.sp
	done.sp = nil
	err := resolveAll(done.snaps)
	if err == nil {
		err = c.persistSP(ctx, done.id, req.path, done.snaps)
	}
	if err != nil {
		req.resp <- savepointResult{err: err}
		c.log.Error("savepoint failed", "id", done.id, "path", req.path, "err", err)
		if req.stop {
			return fmt.Errorf("weir: stop-with-savepoint: %w", err)
		}
		return nil
	}
	if err := c.commit(ctx, done.id, done.snaps); err != nil {
		req.resp <- savepointResult{err: err}
		return fmt.Errorf("weir: commit of savepoint %d: %w", done.id, err)
	}
	c.committed.Store(done.id)
	c.metrics.Record(metrics.CheckpointRecord{ID: done.id, Status: metrics.Completed, Savepoint: true, Trigger: done.started, End: c.time.Now()})
	c.log.Info("savepoint complete", "id", done.id, "path", req.path, "stop", req.stop)
	req.resp <- savepointResult{path: req.path, id: done.id}
	return nil
}

// Config is what New needs.
type Config struct {
	// Interval between periodic checkpoints; Timeout aborts one.
	Interval, Timeout time.Duration
	// FirstDelay picks how long after the start of Run the first periodic
	// checkpoint is due, given Interval; the others follow every Interval
	// from it. Nil is RandomFirstDelay, uniform in [0, Interval], as
	// Flink's coordinator draws it; tests and callers who want a fixed
	// phase set their own (the result is clamped to [0, Interval]).
	// Microbatch epochs do not use it.
	FirstDelay func(interval time.Duration) time.Duration
	// Epoch > 0 is microbatch execution: a checkpoint ends each epoch,
	// due Epoch after the previous one settled (Interval is not used).
	Epoch   time.Duration
	Log     *slog.Logger
	Metrics *metrics.Checkpoints
	// Sources is the parallelism of each source, by node id: one trigger
	// channel per source subtask.
	Sources map[int]int
	// Tasks is how many tasks acknowledge each checkpoint.
	Tasks int
	// LastID is the id the next checkpoint follows.
	LastID int64
	// Persist writes a complete checkpoint, PersistSavepoint a savepoint
	// into path; Commit runs the sinks' committers for it. They run in
	// the coordinator goroutine, so tasks go on processing while state is
	// written (the asynchronous part).
	Persist          func(ctx context.Context, id int64, final bool, snaps []*TaskSnapshot) error
	PersistSavepoint func(ctx context.Context, id int64, path string, snaps []*TaskSnapshot) error
	Commit           func(ctx context.Context, id int64, snaps []*TaskSnapshot) error
	// Time is the wall clock's where nil.
	Time Time
}

// New returns the coordinator of one execution attempt; Run runs it.
func New(cfg Config) *Coordinator {
	nsources := 0
	for _, p := range cfg.Sources {
		nsources += p
	}
	c := &Coordinator{
		interval: cfg.Interval, firstDelay: cfg.FirstDelay, epoch: cfg.Epoch, timeout: cfg.Timeout, log: cfg.Log, metrics: cfg.Metrics,
		triggers: map[int][]chan *Barrier{}, nsources: nsources, ntasks: cfg.Tasks,
		acks: make(chan *TaskSnapshot, cfg.Tasks), finished: make(chan struct{}, nsources),
		persist: cfg.Persist, persistSP: cfg.PersistSavepoint, commit: cfg.Commit,
		requests: make(chan *savepointReq), nextID: cfg.LastID, time: cfg.Time,
	}
	for id, p := range cfg.Sources {
		for range p {
			c.triggers[id] = append(c.triggers[id], make(chan *Barrier, 1))
		}
	}
	return c
}

// Trigger is where source subtask i of node id receives barriers.
func (c *Coordinator) Trigger(id, i int) <-chan *Barrier { return c.triggers[id][i] }

// Committed is the id of the newest checkpoint or savepoint whose sinks
// were told to commit.
func (c *Coordinator) Committed() int64 { return c.committed.Load() }

// Settled is the id of the newest checkpoint or savepoint that ended:
// committed, failed to be written, or aborted.
func (c *Coordinator) Settled() int64 {
	c.settled.mu.Lock()
	defer c.settled.mu.Unlock()
	return c.settled.id
}

// WaitSettled waits until checkpoint id has ended (committed, failed or
// aborted; see Settled) or ctx ends. A microbatch source waits here
// between the end of an epoch and the start of the next.
func (c *Coordinator) WaitSettled(ctx context.Context, id int64) error {
	for {
		c.settled.mu.Lock()
		if c.settled.ch == nil {
			c.settled.ch = make(chan struct{})
		}
		got, ch := c.settled.id, c.settled.ch
		c.settled.mu.Unlock()
		if got >= id {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// settleSignal is the newest settled id and a channel that is closed
// (and dropped, for the next waiter to make anew) whenever it grows.
type settleSignal struct {
	mu sync.Mutex
	id int64
	ch chan struct{}
}

func (s *settleSignal) set(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id <= s.id {
		return
	}
	s.id = id
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
