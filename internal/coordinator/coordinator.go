package weir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// coordinator triggers checkpoints at the sources, collects every task's
// acknowledgement, has the checkpoint written (its metadata last), and then
// tells the sinks to commit. It runs in its own goroutine for one execution
// attempt; at most one checkpoint is in flight.
type coordinator struct {
	interval time.Duration
	timeout  time.Duration
	log      *slog.Logger
	metrics  *ckMetrics

	// triggers has one channel per source subtask, by node id.
	triggers map[int][]chan *barrierMsg
	nsources int
	ntasks   int
	acks     chan *taskSnapshot
	finished chan struct{}

	nextID int64
	// persist writes a complete checkpoint; commit runs the sinks'
	// committers for it. Both run in the coordinator goroutine, so tasks go
	// on processing while state is written (the asynchronous part).
	persist   func(ctx context.Context, id int64, final bool, snaps []*taskSnapshot) error
	persistSP func(ctx context.Context, id int64, path string, snaps []*taskSnapshot) error
	commit    func(ctx context.Context, id int64, snaps []*taskSnapshot) error

	// requests are savepoints asked for while the job runs.
	requests chan *savepointReq

	// committed is the id of the newest checkpoint or savepoint whose
	// sinks were told to commit; sources poll it to notify their
	// CheckpointListener readers.
	committed atomic.Int64

	// time is where the loop gets its ticks, timeouts and durations: the
	// wall clock in a job, a hand-driven one in tests (raft's Tick), so a
	// test decides when checkpoints start and time out.
	time ckTime
}

// ckTime is the coordinator's source of time. A nil field means the wall
// clock's.
type ckTime struct {
	// ticks start periodic checkpoints.
	ticks func(interval time.Duration) (<-chan time.Time, func())
	// timeout fires once when a checkpoint has run for d.
	timeout func(d time.Duration) (<-chan time.Time, func())
	// now measures checkpoint durations (metrics and logs only).
	now func() time.Time
}

func (t *ckTime) fill() {
	if t.ticks == nil {
		t.ticks = func(d time.Duration) (<-chan time.Time, func()) {
			tk := time.NewTicker(d)
			return tk.C, tk.Stop
		}
	}
	if t.timeout == nil {
		t.timeout = func(d time.Duration) (<-chan time.Time, func()) {
			tm := time.NewTimer(d)
			return tm.C, func() { tm.Stop() }
		}
	}
	if t.now == nil {
		t.now = time.Now
	}
}

// errStopped ends a job stopped with a savepoint; Run returns nil for it.
var errStopped = errors.New("weir: job stopped with a savepoint")

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

// savepoint asks for a savepoint into path and waits for it.
func (c *coordinator) savepoint(ctx context.Context, path string, stop bool) (string, int64, error) {
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

// ckMetrics are the job-level checkpoint metrics.
type ckMetrics = metrics.Checkpoints

// ack hands a task's part of a checkpoint to the coordinator.
func (c *coordinator) ack(ctx context.Context, s *taskSnapshot) error {
	select {
	case c.acks <- s:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// sourceFinished tells the coordinator that one source subtask read all
// its input.
func (c *coordinator) sourceFinished(ctx context.Context) error {
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
	snaps   []*taskSnapshot
}

// run is the coordinator loop. It returns when the final checkpoint has
// been committed (nil) or when ctx ends.
func (c *coordinator) run(ctx context.Context) error {
	c.time.fill()
	ticks, stopTicks := c.time.ticks(c.interval)
	defer stopTicks()
	var cur *inflight
	// carry holds the sink output staged by checkpoints that were aborted
	// or failed to persist: the next complete checkpoint commits it, so a
	// failed checkpoint delays output but never loses it.
	var carry []pendingCommit
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
	begin := func(in *inflight, b *barrierMsg) {
		cur = in
		for _, chans := range c.triggers {
			for _, ch := range chans {
				ch <- b
			}
		}
		stopTimer()
		timeout, stopTimer = c.time.timeout(c.timeout)
		c.log.Debug("checkpoint triggered", "id", in.id, "final", in.final, "savepoint", in.sp != nil)
	}
	trigger := func(final bool) {
		c.nextID++
		begin(&inflight{id: c.nextID, final: final, started: c.time.now()}, &barrierMsg{id: c.nextID, final: final})
	}
	triggerSP := func(req *savepointReq) {
		c.nextID++
		begin(&inflight{id: c.nextID, sp: req, started: c.time.now()}, &barrierMsg{id: c.nextID, stop: req.stop})
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
			for _, s := range cur.snaps {
				carry = append(carry, s.committables...)
			}
			// A final checkpoint cannot be dropped: the sources are waiting
			// for it. Its barriers are in flight; a new one would queue
			// behind them, so the job fails and restarts instead.
			if cur.final {
				return fmt.Errorf("weir: final checkpoint %d not complete within %v", cur.id, c.timeout)
			}
			cur = nil
			timeout = nil
			next()
		case s := <-c.acks:
			if cur == nil || s.id != cur.id {
				// An aborted checkpoint's late acknowledgement: its state is
				// stale, but its sinks' staged output must not be lost.
				carry = append(carry, s.committables...)
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
				done.snaps = append(done.snaps, &taskSnapshot{id: done.id, task: "carried", committables: carry})
				carry = nil
			}
			start := c.time.now()
			if sp := done.sp; sp != nil && sp.path != "" {
				if err := c.completeSavepoint(ctx, done); err != nil {
					return err
				}
				if sp.stop {
					return &stopError{path: sp.path}
				}
				next()
				continue
			}
			if err := c.persist(ctx, done.id, done.final, done.snaps); err != nil {
				// A checkpoint that cannot be written is not fatal: the
				// previous one stays the restore point (Flink's tolerable
				// checkpoint failures are 0 by default; we keep going and log).
				c.log.Error("checkpoint failed", "id", done.id, "err", err)
				c.metrics.Failed.Add(1)
				if done.sp != nil {
					done.sp.resp <- savepointResult{err: fmt.Errorf("weir: checkpoint %d: %w", done.id, err)}
					done.sp = nil
				}
				for _, s := range done.snaps {
					carry = append(carry, s.committables...)
				}
				if done.final {
					return fmt.Errorf("weir: final checkpoint %d: %w", done.id, err)
				}
				next()
				continue
			}
			c.metrics.Completed.Add(1)
			c.metrics.LastID.Store(done.id)
			end := c.time.now()
			c.metrics.LastDurationNanos.Store(int64(end.Sub(done.started)))
			c.metrics.LastWriteNanos.Store(int64(end.Sub(start)))
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
			next()
		}
	}
}

// completeSavepoint writes a savepoint, commits the sinks' output it covers
// (like a checkpoint), and answers the request. Failing to write it is not
// fatal to the job unless it was a stop.
func (c *coordinator) completeSavepoint(ctx context.Context, done *inflight) error {
	req := done.sp
	done.sp = nil
	err := c.persistSP(ctx, done.id, req.path, done.snaps)
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
	c.log.Info("savepoint complete", "id", done.id, "path", req.path, "stop", req.stop)
	req.resp <- savepointResult{path: req.path, id: done.id}
	return nil
}
