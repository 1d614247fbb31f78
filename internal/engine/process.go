package engine

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/state"
	"github.com/weirstream/weir/internal/watermark"
)

// KeyedProcessFunction handles the records of a keyed stream one at a time,
// with keyed state (NewValueState, NewListState, NewMapState,
// NewReducingState, NewAggregatingState) and timers in event time and in
// processing time. It may also implement Opener (to create its state) and
// TimerHandler (to be called back by its timers).
//
// One instance serves every key of a subtask: keep per-key data in state
// handles, not in plain fields. With parallelism above 1, each subtask uses
// the same instance, so implement Opener to create state per subtask: Open
// is called once per subtask with that subtask's RuntimeContext, and the
// instance must not share mutable fields across subtasks (use ProcessWith
// to get a fresh instance per subtask).
type KeyedProcessFunction[K comparable, IN, OUT any] interface {
	ProcessElement(ctx *KeyedContext[K, OUT], in IN) error
}

// Opener is implemented by process functions that create state. State is
// created in Open, once per subtask, and not while records flow, so that
// the set of states of an operator is fixed: a snapshot can then be
// restored into it. Creating two states of the same name makes Open fail.
type Opener[K comparable] interface {
	Open(rc *RuntimeContext[K]) error
}

// TimerHandler is implemented by process functions that use timers.
// OnTimer runs with ctx's key set to the timer's key; ctx.TimeDomain tells
// whether an event-time or a processing-time timer fired.
type TimerHandler[K comparable, OUT any] interface {
	OnTimer(ctx *KeyedContext[K, OUT], t time.Time) error
}

// ProcessFunc adapts a function to a stateless KeyedProcessFunction.
type ProcessFunc[K comparable, IN, OUT any] func(ctx *KeyedContext[K, OUT], in IN) error

// ProcessElement implements KeyedProcessFunction.
func (f ProcessFunc[K, IN, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in IN) error {
	return f(ctx, in)
}

// Process runs a process function over a keyed stream. The function is
// shared by all subtasks; see ProcessWith for one instance per subtask.
//
// Timers: an event-time timer fires once the watermark reaches its time; at
// the end of a bounded input (the final, maximal watermark) every pending
// event-time timer fires. A processing-time timer fires once the job's
// clock reaches its time, checked after every input batch and while the
// task waits for input; at the end of input pending processing-time timers
// are dropped without firing, as in Flink, since the input they were
// waiting for will never come.
//
// Checkpoints: the function's state, with TTL expiry times, its timers of
// both domains, in registration order, and the watermark are snapshotted
// per key group, so that a restore may run at another parallelism. A
// restore puts each state back into the state of the same name created by
// Open (state in the snapshot that Open does not create fails the
// restore). State lives in the job's state backend: HeapState (default)
// or PebbleState.
func Process[K comparable, T, OUT any](ks *KeyedStream[K, T], fn KeyedProcessFunction[K, T, OUT], opts ...OperatorOption) *Stream[OUT] {
	return ProcessWith(ks, func() KeyedProcessFunction[K, T, OUT] { return fn }, opts...)
}

// ProcessWith is Process with a factory called once per subtask, so that a
// function keeping state handles in its fields gets one instance per
// subtask.
func ProcessWith[K comparable, T, OUT any](ks *KeyedStream[K, T], newFn func() KeyedProcessFunction[K, T, OUT], opts ...OperatorOption) *Stream[OUT] {
	j := ks.src.job
	cfg := j.opConfig(opts)
	out, n := newStream[OUT](j, "process", cfg)
	connectKeyed(ks, n)
	n.backendState = true
	n.build = func(st *subtask, o any) ([]any, error) {
		op, err := buildProcess(st, n, o.(consumer[OUT]), newFn())
		if err != nil {
			return nil, err
		}
		return []any{consumer[keyed[K, T]](op)}, nil
	}
	return out
}

// buildProcess builds the process operator of node n running fn for one
// subtask, with its state restored: Process's, and that of the window
// aggregations whose state is in the backend (window_state.go).
func buildProcess[K comparable, T, OUT any](st *subtask, n *node, out consumer[OUT], fn KeyedProcessFunction[K, T, OUT]) (*processOp[K, T, OUT], error) {
	size := st.cfg().batchSize
	op := &processOp[K, T, OUT]{
		fn: fn, out: out, size: size, m: st.metrics(n),
		procCore: procCore[K, OUT]{
			ob: newBatch[OUT](size), wm: watermark.Min, emitWM: watermark.Min, sentWM: watermark.Min,
			clock: st.now,
		},
	}
	op.procCore.m = op.m
	op.procCore.size, op.procCore.flush = size, op.emit
	if err := op.open(st, n); err != nil {
		return nil, fmt.Errorf("weir: operator %q: %w", n.name, err)
	}
	if wm, groups, ok := st.restoreKeyed(n); ok {
		if err := op.restore(wm, groups); err != nil {
			return nil, fmt.Errorf("weir: operator %q: restore: %w", n.name, err)
		}
	}
	return op, nil
}

// Names of the timer queues in the state backend (Flink's), so that a
// snapshot lists them next to the function's state.
const (
	eventTimersName = "_timer_state/event_user-timers"
	procTimersName  = "_timer_state/processing_user-timers"
)

// open creates the subtask's state backend and timer queues, opens the
// function and registers the operator's processing-time timers with the
// task loop.
func (op *processOp[K, T, OUT]) open(st *subtask, n *node) error {
	parallelism := n.parallelism
	op.info = newOpInfo(st, n)
	mp := st.cfg().maxParallelism
	first, end := keygroup.Range(st.index, parallelism, mp)
	be, err := newStateBackend(st, n, state.Config{
		MaxParallelism: mp,
		KeyGroups:      state.KeyGroupRange{Start: first, End: end},
		Now:            op.procNow,
	})
	if err != nil {
		return err
	}
	st.closers = append(st.closers, be.Close)
	op.backend = be
	op.usage, _ = be.(state.UsageReporter)
	if op.event, err = state.NewTimerQueue[K, state.VoidNamespace](be, eventTimersName); err != nil {
		return err
	}
	if op.proc, err = state.NewTimerQueue[K, state.VoidNamespace](be, procTimersName); err != nil {
		return err
	}
	op.ctx = &KeyedContext[K, OUT]{op: &op.procCore}
	op.onTimer, _ = op.fn.(TimerHandler[K, OUT])
	op.onWM, _ = op.fn.(WatermarkHandler[K, OUT])
	op.onEnd, _ = op.fn.(BatchEndHandler[K, OUT])
	rc := &RuntimeContext[K]{Subtask: st.index, Parallelism: parallelism, keys: &op.cur, backend: be}
	if o, ok := op.fn.(Opener[K]); ok {
		err := o.Open(rc)
		if err == nil {
			err = rc.err
		}
		if err != nil {
			return fmt.Errorf("Open: %w", err)
		}
	}
	rc.closed = true
	st.timers = append(st.timers, op)
	return nil
}

// TimeDomain is the clock a timer runs on.
type TimeDomain uint8

const (
	// EventTime timers fire when the watermark reaches their time.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire when the job's clock reaches their time.
	ProcessingTime
)

// String names the domain, for logs and test output.
func (d TimeDomain) String() string {
	switch d {
	case EventTime:
		return "EventTime"
	case ProcessingTime:
		return "ProcessingTime"
	}
	return fmt.Sprintf("TimeDomain(%d)", uint8(d))
}

// KeyedContext is what a process function sees of the record or timer being
// processed.
type KeyedContext[K comparable, OUT any] struct {
	op *procCore[K, OUT]
}

// Key is the key of the record or timer being processed.
func (c *KeyedContext[K, OUT]) Key() K { return c.op.cur.key }

// Timestamp is the event time of the record, or the time of the timer (in
// its time domain). Emitted records carry it, so the records a
// processing-time timer emits are stamped with the processing time.
func (c *KeyedContext[K, OUT]) Timestamp() time.Time { return time.UnixMilli(c.op.curTS).UTC() }

// Watermark is the operator's current input watermark.
func (c *KeyedContext[K, OUT]) Watermark() time.Time { return time.UnixMilli(c.op.wm).UTC() }

// TimeDomain is the domain of the timer being fired: ProcessingTime in
// OnTimer for a processing-time timer, EventTime otherwise (for an
// event-time timer, and while processing a record, whose Timestamp is its
// event time).
func (c *KeyedContext[K, OUT]) TimeDomain() TimeDomain { return c.op.domain }

// CurrentProcessingTime is the job clock's time (see the Clock option). It
// is read once per record or timer: within one call of ProcessElement or
// OnTimer it does not change, and state TTL uses the same value.
func (c *KeyedContext[K, OUT]) CurrentProcessingTime() time.Time {
	return time.UnixMilli(c.op.procNow()).UTC()
}

// Emit sends a record downstream with the current timestamp.
func (c *KeyedContext[K, OUT]) Emit(v OUT) { c.op.add(v, c.op.curTS) }

// DropLate counts the record being processed as dropped for being late,
// where weir's window operators and joins count theirs: the operator's
// late_records_dropped_total in /metrics, its late_records_dropped on the
// dashboard, OperatorMetrics.LateDropped in Job.Metrics. It drops nothing
// itself: a function that finds its record late (its Timestamp behind the
// Watermark, or all its windows fired) drops it by not keeping or
// emitting it, and calls DropLate once for it so that the drop shows.
// Call it from ProcessElement.
func (c *KeyedContext[K, OUT]) DropLate() { c.op.m.LateDropped.Add(1) }

// emitAt sends a record with timestamp ts (ms), which must not be below the
// current record's: the joins stamp a pair with the later of its two times.
func (c *KeyedContext[K, OUT]) emitAt(v OUT, ts int64) { c.op.add(v, ts) }

// RegisterEventTimeTimer asks for OnTimer to be called for the current key
// once the watermark reaches t. Registering the same key and time twice
// fires once. Timers of the same time fire in registration order.
func (c *KeyedContext[K, OUT]) RegisterEventTimeTimer(t time.Time) {
	c.op.event.Register(c.op.cur.hash, c.op.cur.key, void, t.UnixMilli())
}

// DeleteEventTimeTimer cancels an event-time timer of the current key.
func (c *KeyedContext[K, OUT]) DeleteEventTimeTimer(t time.Time) {
	c.op.event.Delete(c.op.cur.hash, c.op.cur.key, void, t.UnixMilli())
}

// RegisterProcessingTimeTimer asks for OnTimer to be called for the current
// key once the job's clock reaches t (at once, if it already has).
// Registering the same key and time twice fires once. At the end of a
// bounded input, pending processing-time timers do not fire.
func (c *KeyedContext[K, OUT]) RegisterProcessingTimeTimer(t time.Time) {
	c.op.proc.Register(c.op.cur.hash, c.op.cur.key, void, t.UnixMilli())
}

// DeleteProcessingTimeTimer cancels a processing-time timer of the current
// key.
func (c *KeyedContext[K, OUT]) DeleteProcessingTimeTimer(t time.Time) {
	c.op.proc.Delete(c.op.cur.hash, c.op.cur.key, void, t.UnixMilli())
}

// procCore is the part of the process operator that does not depend on the
// input type, so that KeyedContext can point at it.
type procCore[K comparable, OUT any] struct {
	ob     *batch[OUT]
	cur    currentKey[K]
	curTS  int64
	wm     int64 // input watermark
	emitWM int64 // watermark carried by emitted records
	sentWM int64
	domain TimeDomain

	// Timers live in the state backend, one queue per time domain: each
	// timer carries its key's hash, hence its key group.
	event, proc state.TimerQueue[K, state.VoidNamespace]

	clock func() int64 // the job's clock, unix ms
	now   int64        // processing time of the record or timer at hand
	nowOK bool         // now was read for it

	m *metrics.Operator // for operators built on Process (joins) that count late records

	// size is the output batch's size: a full batch goes downstream as
	// soon as it is full (flush, with the watermark its records carry),
	// even within one call of ProcessElement, EndBatch or OnTimer, so that
	// a call emitting many records holds at most a batch of them (SQL's
	// operators that lend their rows to a chained sink reuse them after
	// two batches: sql/planner/lend.go). emitErr is flush's error, which
	// the operator returns after the call.
	size    int
	flush   func(wm int64) error
	emitErr error
}

// add appends v to the output batch, sending the batch on when full.
func (c *procCore[K, OUT]) add(v OUT, ts int64) {
	c.ob.add(v, ts, c.emitWM)
	if len(c.ob.data) >= c.size && c.flush != nil && c.emitErr == nil {
		c.emitErr = c.flush(c.emitWM)
	}
}

// procNow is the processing time of the record or timer being processed:
// the clock is read at most once per record, and only if something (TTL,
// CurrentProcessingTime) needs it.
func (c *procCore[K, OUT]) procNow() int64 {
	if !c.nowOK {
		c.now, c.nowOK = c.clock(), true
	}
	return c.now
}

type processOp[K comparable, T, OUT any] struct {
	procCore[K, OUT]
	backend state.Backend // the function's state and the timers
	fn      KeyedProcessFunction[K, T, OUT]
	onTimer TimerHandler[K, OUT]
	onWM    WatermarkHandler[K, OUT]
	onEnd   BatchEndHandler[K, OUT]
	ctx     *KeyedContext[K, OUT]
	out     consumer[OUT]
	size    int
	m       *metrics.Operator
	info    opInfo // identity in snapshots
	// usage reports the backend's state for the metrics (nil: it cannot),
	// every usageEvery records (sinceUsage), at barriers and at the end
	usage      state.UsageReporter
	sinceUsage int
}

// usageEvery is how many records a process operator handles between
// samples of its state's size: a sample reads the size of each key
// group's tables and a few entries of each, a few microseconds per
// store, so this many records make its cost vanish.
const usageEvery = 1 << 16

// sampleUsage records the state's keys and bytes in the metrics.
func (op *processOp[K, T, OUT]) sampleUsage() {
	op.sinceUsage = 0
	if op.usage != nil {
		u := op.usage.Usage()
		op.m.SetState(u.Keys, u.Bytes)
	}
}

func (op *processOp[K, T, OUT]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	if op.sinceUsage += len(b.data); op.sinceUsage >= usageEvery {
		op.sampleUsage()
	}
	for i := range b.data {
		if w := b.wm[i]; w > op.wm {
			if err := op.advance(w); err != nil {
				return err
			}
		}
		r := &b.data[i]
		op.cur.key, op.cur.hash, op.curTS = r.key, r.hash, b.ts[i]
		op.emitWM = op.wm
		op.nowOK = false
		if err := op.fn.ProcessElement(op.ctx, r.val); err != nil {
			return err
		}
		if op.emitErr != nil {
			return op.emitErr
		}
		if len(op.ob.data) >= op.size {
			if err := op.emit(op.wm); err != nil {
				return err
			}
		}
	}
	if op.onEnd != nil {
		op.nowOK = false
		err := op.onEnd.EndBatch(op.ctx)
		op.cur = currentKey[K]{}
		if err != nil {
			return err
		}
		if op.emitErr != nil {
			return op.emitErr
		}
	}
	if b.watermark > op.wm {
		if err := op.advance(b.watermark); err != nil {
			return err
		}
	}
	if len(op.ob.data) > 0 || op.wm > op.sentWM {
		return op.emit(op.wm)
	}
	return nil
}

// advance moves the watermark to w and fires due event-time timers in time
// order. Timers registered while firing fire too if they are already due.
func (op *processOp[K, T, OUT]) advance(w int64) error {
	prev := op.wm
	op.wm = w
	op.emitWM = prev
	for {
		if t, ok := op.event.Peek(); !ok || t.TS > w {
			return op.onWatermark(w, prev)
		}
		t, _ := op.event.Pop()
		op.nowOK = false
		if err := op.fire(t, EventTime, prev); err != nil {
			return err
		}
	}
}

// fire calls OnTimer for t; a full output batch goes downstream with
// watermark wm.
func (op *processOp[K, T, OUT]) fire(t state.Timer[K, state.VoidNamespace], d TimeDomain, wm int64) error {
	if op.onTimer == nil {
		return nil
	}
	op.cur.key, op.cur.hash, op.curTS = t.Key, t.Hash, t.TS
	op.domain = d
	err := op.onTimer.OnTimer(op.ctx, time.UnixMilli(t.TS).UTC())
	op.domain = EventTime
	if err != nil {
		return err
	}
	if op.emitErr != nil {
		return op.emitErr
	}
	if len(op.ob.data) >= op.size {
		return op.emit(wm)
	}
	return nil
}

// nextProcessingTime implements procTimers.
func (op *processOp[K, T, OUT]) nextProcessingTime() int64 {
	if t, ok := op.proc.Peek(); ok {
		return t.TS
	}
	return watermark.Max
}

// onProcessingTime implements procTimers: it fires the processing-time
// timers due at now, in time order, and sends their output downstream. It
// fires at most the timers pending when it is called, so that a timer
// re-registering itself in the past cannot keep the task from its input:
// timers registered meanwhile fire on the next call.
func (op *processOp[K, T, OUT]) onProcessingTime(now int64) error {
	op.emitWM = op.wm
	for n := op.proc.Len(); n > 0; n-- {
		if t, ok := op.proc.Peek(); !ok || t.TS > now {
			break
		}
		t, _ := op.proc.Pop()
		op.now, op.nowOK = now, true
		if err := op.fire(t, ProcessingTime, op.wm); err != nil {
			return err
		}
	}
	if len(op.ob.data) > 0 {
		return op.emit(op.wm)
	}
	return nil
}

func (op *processOp[K, T, OUT]) emit(wm int64) error {
	op.ob.watermark = wm
	op.sentWM = wm
	op.m.RecordsOut.Add(int64(len(op.ob.data)))
	err := op.out.push(op.ob)
	op.ob.reset()
	return err
}

func (op *processOp[K, T, OUT]) finish() error {
	op.sampleUsage()
	return op.out.finish()
}
