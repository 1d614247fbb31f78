package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/ckstore"
	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/state/pebblestate"
	"github.com/weirstream/weir/internal/watermark"
)

// plan is the compiled job: parallelism resolved, chains formed, gates made.
type plan struct {
	job   *Job
	gates [][]*exec.Gate // per node, per subtask; nil for chained nodes
	// channel index of each (input edge, sending subtask) in the gate
	base map[*edge]int
	// restored is the state the job starts from (nil: from scratch)
	restored *restoredState
	// coord is the checkpoint coordinator (nil: checkpointing is off)
	coord *coordinator.Coordinator
	// pebbleMemory is the memory budget the attempt's Pebble databases
	// share (nil: heap state)
	pebbleMemory *pebblestate.Memory
}

// subtask is the per-goroutine context handed to operators as they are
// built: which subtask they are, where to register things the task loop must
// drive (flushing of output buffers, closing of sinks).
type subtask struct {
	plan     *plan
	ctx      context.Context
	index    int
	flushers []flusher
	timers   []procTimers
	closers  []func() error
	timeout  int64 // buffer timeout, ns
}

// procTimers is an operator with processing-time timers: the task loop
// calls onProcessingTime from the task's goroutine once the wall clock
// reaches nextProcessingTime. Operators never read the clock themselves.
type procTimers interface {
	// nextProcessingTime is the earliest pending timer (unix ms), or
	// watermark.Max when there is none.
	nextProcessingTime() int64
	// onProcessingTime fires the timers due at now (unix ms).
	onProcessingTime(now int64) error
}

// flusher is an output buffer that the task loop flushes when the buffer
// timeout expires.
type flusher interface {
	// pendingSince is when the oldest unsent record or watermark was added
	// (unix ns), or 0 when nothing is pending.
	pendingSince() int64
	flush() error
}

func (st *subtask) cfg() *config { return &st.plan.job.cfg }

// now is the processing time in unix ms, from the job's clock.
func (st *subtask) now() int64 { return st.cfg().clock().UnixMilli() }

func (st *subtask) metrics(n *node) *metrics.Operator {
	return st.plan.job.metrics.Operator(n.name, st.index)
}

// busy reports whether the task loop must look at the clock after every
// batch: to flush output buffers or fire processing-time timers.
func (st *subtask) busy() bool { return len(st.flushers) > 0 || len(st.timers) > 0 }

// tick fires due processing-time timers and flushes every buffer whose
// oldest content waited the buffer timeout. now is unix ns.
func (st *subtask) tick(now int64) error {
	if len(st.timers) > 0 {
		ms := st.now()
		for _, t := range st.timers {
			if t.nextProcessingTime() <= ms {
				if err := t.onProcessingTime(ms); err != nil {
					return err
				}
			}
		}
	}
	for _, f := range st.flushers {
		if ps := f.pendingSince(); ps != 0 && now-ps >= st.timeout {
			if err := f.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushPending sends what every output buffer of the task holds, whatever
// its age: an operator about to work for long without output (the sliced
// window's merge) lets the results and watermark it produced go first.
func (st *subtask) flushPending() error {
	for _, f := range st.flushers {
		if f.pendingSince() != 0 {
			if err := f.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// wait is how long the task may block on input before a flush or a timer is
// due; <= 0 means nothing is pending.
func (st *subtask) wait(now int64) time.Duration {
	var w int64 = -1
	for _, t := range st.timers {
		if next := t.nextProcessingTime(); next != watermark.Max {
			// Capped so that a clock that jumps (a test's, or NTP) is noticed.
			// A timer already due (watermark.Min: work to go on with at
			// once) waits the least.
			d := int64(1000)
			if ms := st.now(); next > ms {
				d = min(max((next-ms)*1e6, 1000), int64(50*time.Millisecond))
			}
			if w < 0 || d < w {
				w = d
			}
		}
	}
	for _, f := range st.flushers {
		if ps := f.pendingSince(); ps != 0 {
			d := max(ps+st.timeout-now, 1000) // at least 1µs: a zero timeout would block forever
			if w < 0 || d < w {
				w = d
			}
		}
	}
	return time.Duration(w)
}

func (st *subtask) close() error {
	var errs []error
	for i := len(st.closers) - 1; i >= 0; i-- {
		errs = append(errs, st.closers[i]())
	}
	st.closers = nil
	return errors.Join(errs...)
}

// compile resolves parallelism, chains and gates.
func (j *Job) compile(ctx context.Context) (*plan, error) {
	p := &plan{job: j, gates: make([][]*exec.Gate, len(j.nodes)), base: map[*edge]int{}}
	// Nodes are created after their inputs, so index order is topological.
	for _, n := range j.nodes {
		if n.splits != nil {
			k, err := n.splits(ctx)
			if err != nil {
				return nil, fmt.Errorf("weir: source %q: %w", n.name, err)
			}
			if n.parallelism == 0 {
				n.parallelism = j.cfg.parallelism
			}
			// Subtasks beyond the number of splits would have nothing to read.
			n.parallelism = max(1, min(n.parallelism, k))
			continue
		}
		if n.sideOf != nil {
			n.parallelism = n.sideOf.parallelism // a side output runs in its operator's task
		}
		if n.parallelism == 0 {
			if len(n.inputs) > 0 && n.inputs[0].part == forward {
				n.parallelism = n.inputs[0].from.parallelism
			} else {
				n.parallelism = j.cfg.parallelism
			}
		}
		if n.parallelism > j.cfg.maxParallelism {
			return nil, fmt.Errorf("weir: operator %q: parallelism %d exceeds max parallelism %d", n.name, n.parallelism, j.cfg.maxParallelism)
		}
		for _, e := range n.inputs {
			if e.part == forward && e.from.parallelism != n.parallelism {
				e.part = rebalance // like Flink: forward needs equal parallelism
			}
			e.chained = e.part == forward && len(n.inputs) == 1
		}
	}
	for _, n := range j.nodes {
		chans := 0
		for _, e := range n.inputs {
			if e.chained {
				continue
			}
			p.base[e] = chans
			if e.part == forward {
				chans++
			} else {
				chans += e.from.parallelism
			}
		}
		if chans == 0 {
			continue
		}
		for i := 0; i < n.parallelism; i++ {
			p.gates[n.id] = append(p.gates[n.id], exec.NewGate(chans, j.cfg.queueCapacity, ctx.Done()))
		}
	}
	return p, nil
}

// targets lists the gate channels that subtask i of e.from sends to.
func (p *plan) targets(e *edge, i int) []target {
	gs := p.gates[e.to.id]
	if e.part == forward {
		return []target{{gs[i], p.base[e]}}
	}
	out := make([]target, len(gs))
	for k, g := range gs {
		out[k] = target{g, p.base[e] + i}
	}
	return out
}

// instantiate builds node n and everything chained after it for subtask st
// and returns n's input consumers.
func (p *plan) instantiate(n *node, st *subtask) ([]any, error) {
	out, err := p.output(n, st)
	if err != nil {
		return nil, err
	}
	if n.build == nil {
		return nil, fmt.Errorf("weir: operator %q cannot be built", n.name)
	}
	return n.build(st, out)
}

// output builds n's output consumer: chained successors and network writers.
func (p *plan) output(n *node, st *subtask) (any, error) {
	var outs []any
	for _, e := range n.outputs {
		if e.chained {
			ins, err := p.instantiate(e.to, st)
			if err != nil {
				return nil, err
			}
			outs = append(outs, ins[0])
			continue
		}
		outs = append(outs, e.writer(st, p.targets(e, st.index)))
	}
	return n.tee(outs), nil
}

// execute runs one attempt of the job, from restored state if given.
func (j *Job) execute(parent context.Context, ckpt *ckstore.Store, restored *restoredState) error {
	g := exec.NewGroup(parent)
	ctx := g.Context()
	p, err := j.compile(ctx)
	if err != nil {
		g.Wait()
		return permanent{err}
	}
	j.noteGraph() // parallelism and edges as resolved, for the web server
	p.restored = restored
	if p.pebbleMemory = j.pebbleMemory(); p.pebbleMemory != nil {
		// after g.Wait below: every database is closed by then (each
		// keeps the cache until it closes anyway)
		defer p.pebbleMemory.Close()
	}
	if restored != nil {
		if err := p.checkRestore(ctx, ckpt); err != nil {
			g.Wait()
			if _, ok := err.(transient); ok && !IsPermanent(err) {
				return err
			}
			return permanent{err}
		}
	}
	var heads []*node
	ntasks, nsources := 0, 0
	for _, n := range j.nodes {
		head := n.run != nil
		for _, e := range n.inputs {
			head = head || !e.chained
		}
		if head {
			heads = append(heads, n)
			ntasks += n.parallelism
			if n.run != nil {
				nsources += n.parallelism
			}
		}
	}
	if ckpt != nil || j.cfg.microbatch > 0 {
		sources := map[int]int{}
		for _, n := range heads {
			if n.run != nil {
				sources[n.id] = n.parallelism
			}
		}
		var last int64
		if restored != nil {
			last = restored.ID
		}
		// Ids keep growing past every checkpoint in the directory, even
		// unusable ones and those newer than the one restored.
		cc := coordinator.Config{
			Interval: j.cfg.ckInterval, FirstDelay: j.cfg.ckFirst, Epoch: j.cfg.microbatch, Timeout: j.cfg.ckTimeout, Log: j.cfg.logger, Metrics: &j.metrics.Checkpoints,
			Sources: sources, Tasks: ntasks, LastID: last, Time: j.cfg.ckTime,
		}
		if ckpt != nil {
			if next, err := ckpt.Checkpoints().NextID(); err == nil {
				last = max(last, next-1)
			}
			cc.LastID, cc.Persist, cc.PersistSavepoint, cc.Commit = last, ckpt.Persist, ckpt.PersistSavepoint, ckpt.Commit
		} else {
			epochsInMemory(&cc)
		}
		c := coordinator.New(cc)
		p.coord = c
		j.setCoordinator(c)
		defer j.setCoordinator(nil)
		g.Go("checkpoint-coordinator", 0, c.Run)
	}
	for _, n := range heads {
		for i := 0; i < n.parallelism; i++ {
			n, i := n, i
			g.Go(n.name, i, func(ctx context.Context) error {
				st := &subtask{plan: p, ctx: ctx, index: i, timeout: int64(j.cfg.bufferTimeout)}
				defer st.close()
				if n.run != nil {
					out, err := p.output(n, st)
					if err != nil {
						return err
					}
					if err := n.run(st, out); err != nil {
						return err
					}
				} else if err := p.runInputTask(n, st); err != nil {
					return err
				}
				return st.close()
			})
		}
	}
	return g.Wait()
}

// checkRestore matches restored state to operators by UID and commits the
// restored checkpoint's pending sink output (idempotently) before any task
// starts.
func (p *plan) checkRestore(ctx context.Context, ckpt *ckstore.Store) error {
	byUID := map[string]*node{}
	for _, n := range p.job.nodes {
		byUID[n.uid] = n
	}
	var missing []string
	for uid := range p.restored.Ops {
		if byUID[uid] == nil {
			missing = append(missing, uid)
		}
	}
	if len(missing) > 0 && !p.job.cfg.allowNonRest {
		slices.Sort(missing)
		return fmt.Errorf("weir: the restored state has operators this job does not have (UIDs %q); give the operators their old UIDs, or pass AllowNonRestoredState to drop that state", missing)
	}
	if ckpt != nil && p.restored.Checkpoint != nil { // nil: state from changelog topics (group mode)
		var snap taskSnapshot
		for uid, list := range p.restored.Commits {
			if n := byUID[uid]; n != nil && n.committer != nil {
				for _, c := range list {
					snap.Committables = append(snap.Committables, pendingCommit{Data: c, Committer: n.committer})
				}
			}
		}
		if err := ckpt.RecordCommit(p.restored.ID, p.restored.Checkpoint.Kind(), p.restored.Path, []*taskSnapshot{&snap}); err != nil {
			return transient{fmt.Errorf("weir: commit of restored checkpoint %d: %w", p.restored.ID, err)}
		}
	}
	for uid, list := range p.restored.Commits {
		n := byUID[uid]
		if n == nil || n.committer == nil {
			continue
		}
		for _, c := range list {
			if err := n.committer.Commit(ctx, c); err != nil {
				// An external system that is down (a broker, a database)
				// is worth a restart under the policy, unlike a state
				// mismatch.
				return transient{fmt.Errorf("weir: commit of restored checkpoint %d for sink %q: %w", p.restored.ID, n.name, err)}
			}
		}
	}
	return nil
}

// runInputTask is the loop of a task whose head reads from a gate: it
// combines the channels' watermarks (minimum over channels, ended channels
// count as +inf), rewrites each batch's watermarks to the combined ones, and
// pushes the batch into the chain.
func (p *plan) runInputTask(n *node, st *subtask) error {
	ins, err := p.instantiate(n, st)
	if err != nil {
		return err
	}
	gate := p.gates[n.id][st.index]
	nch := gate.Channels()
	deliver := make([]func(any) error, nch)
	for _, e := range n.inputs {
		d := e.deliver(ins[e.index])
		if e.part == forward {
			deliver[p.base[e]] = d
			continue
		}
		for k := 0; k < e.from.parallelism; k++ {
			deliver[p.base[e]+k] = d
		}
	}
	first := n.inputs[0]
	toFirst := first.deliver(ins[first.index])
	comb := watermark.NewCombiner(nch)
	ended := 0
	m := st.metrics(n)
	// Barrier alignment: a channel that delivered barrier n is blocked
	// until every live channel delivered it.
	aligned := 0
	var alignStart time.Time
	var pending *barrierMsg
	completeAlignment := func() error {
		gate.UnblockAll()
		aligned = 0
		p.job.metrics.Checkpoints.AlignmentNanos.Add(int64(time.Since(alignStart)))
		b := pending
		pending = nil
		snap := &taskSnapshot{ID: b.ID, Task: n.name, Subtask: st.index}
		if err := forwardBarrier(ins[first.index], b, snap); err != nil {
			return err
		}
		return p.coord.Ack(st.ctx, snap)
	}
	for ended < nch {
		msg, ok := gate.TryNext()
		if !ok {
			now := time.Now().UnixNano()
			if err := st.tick(now); err != nil {
				return err
			}
			var err error
			msg, ok, err = gate.Next(st.wait(now))
			if err != nil {
				return err
			}
			if !ok {
				continue // a flush is due
			}
		}
		c := int(msg.Channel)
		switch msg.Kind {
		case exec.Data:
			h := msg.Batch.(headed).hdr()
			if nch > 1 {
				cur, others := comb.Current(), comb.Others(c)
				for i, w := range h.wm {
					h.wm[i] = watermark.At(cur, w, others)
				}
			}
			comb.Update(c, h.watermark)
			if h.idle {
				comb.SetIdle(c, true)
			}
			h.watermark = comb.Current()
			h.idle = false // the combined output is not idle while any input is active
			if comb.AllIdle() {
				h.idle = true
			}
			m.Watermark.Store(h.watermark)
			if err := deliver[c](msg.Batch); err != nil {
				return err
			}
		case exec.End:
			ended++
			if wm, adv := comb.Update(c, watermark.Max); adv {
				m.Watermark.Store(wm)
				if err := toFirst(first.empty(wm)); err != nil {
					return err
				}
			}
			if pending != nil && aligned == nch-ended {
				if err := completeAlignment(); err != nil {
					return err
				}
			}
		case exec.Barrier:
			b := msg.Batch.(*barrierMsg)
			if p.coord == nil {
				return fmt.Errorf("weir: barrier %d in a job without checkpointing", b.ID)
			}
			if pending == nil {
				pending, alignStart = b, time.Now()
			} else if pending.ID != b.ID {
				return fmt.Errorf("weir: barrier %d arrived while aligning barrier %d", b.ID, pending.ID)
			}
			gate.Block(c)
			aligned++
			if aligned == nch-ended {
				if err := completeAlignment(); err != nil {
					return err
				}
			}
		}
		// Checked after every batch, not only when idle, so that a rarely
		// used output channel of a busy task still flushes in time.
		if st.busy() {
			if err := st.tick(time.Now().UnixNano()); err != nil {
				return err
			}
		}
	}
	return ins[first.index].(finisher).finish()
}

// finisher is the untyped view of consumer.finish.
type finisher interface{ finish() error }

// transient marks a failure while starting an attempt that a restart may
// fix (committing a restored checkpoint's output to a system that is down).
type transient struct{ error }

func (t transient) Unwrap() error { return t.error }

// permanent marks a failure that a restart cannot fix (a job that does not
// compile, state that does not match the job): Run returns it at once.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }
