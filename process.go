package weir

import (
	"container/heap"
	"time"

	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// KeyedProcessFunction handles the records of a keyed stream one at a time,
// with keyed state (NewValueState) and event-time timers. It may also
// implement Opener (to create its state) and TimerHandler (to be called
// back by its timers).
//
// One instance serves every key of a subtask: keep per-key data in state
// handles, not in plain fields. With parallelism above 1, each subtask uses
// the same instance, so implement Opener to create state per subtask: Open
// is called once per subtask with that subtask's RuntimeContext, and the
// instance must not share mutable fields across subtasks (use NewProcess to
// get a fresh instance per subtask).
type KeyedProcessFunction[K comparable, IN, OUT any] interface {
	ProcessElement(ctx *KeyedContext[K, OUT], in IN) error
}

// Opener is implemented by process functions that create state.
type Opener[K comparable] interface {
	Open(rc *RuntimeContext[K]) error
}

// TimerHandler is implemented by process functions that use timers.
// OnTimer runs with ctx's key set to the timer's key.
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
func Process[K comparable, T, OUT any](ks *KeyedStream[K, T], fn KeyedProcessFunction[K, T, OUT], opts ...Option) *Stream[OUT] {
	return ProcessWith(ks, func() KeyedProcessFunction[K, T, OUT] { return fn }, opts...)
}

// ProcessWith is Process with a factory called once per subtask, so that a
// function keeping state handles in its fields gets one instance per
// subtask.
func ProcessWith[K comparable, T, OUT any](ks *KeyedStream[K, T], newFn func() KeyedProcessFunction[K, T, OUT], opts ...Option) *Stream[OUT] {
	j := ks.src.job
	cfg := j.opConfig("Process", scopeOp, opts)
	out, n := newStream[OUT](j, "process", cfg)
	connectKeyed(ks, n)
	n.build = func(st *subtask, o any) ([]any, error) {
		size := st.cfg().batchSize
		op := &processOp[K, T, OUT]{
			fn: newFn(), out: o.(consumer[OUT]), size: size, m: st.metrics(n),
			procCore: procCore[K, OUT]{
				ob: newBatch[OUT](size), wm: watermark.Min, emitWM: watermark.Min, sentWM: watermark.Min,
				timerSet: hashtable.New[timerKey[K], struct{}](16),
			},
		}
		op.ctx = &KeyedContext[K, OUT]{op: &op.procCore}
		rc := &RuntimeContext[K]{Subtask: st.index, Parallelism: n.parallelism, keys: &op.cur}
		op.onTimer, _ = op.fn.(TimerHandler[K, OUT])
		if o, ok := op.fn.(Opener[K]); ok {
			if err := o.Open(rc); err != nil {
				return nil, err
			}
		}
		return []any{consumer[keyed[K, T]](op)}, nil
	}
	return out
}

// RuntimeContext is given to Opener.Open: it creates keyed state.
type RuntimeContext[K comparable] struct {
	Subtask     int
	Parallelism int
	keys        *currentKey[K]
}

// currentKey is the key of the record or timer being processed; state
// handles read it so that Value and Update need no key argument.
type currentKey[K comparable] struct {
	key  K
	hash uint64
}

// ValueState is one value per key, scoped to the key of the record being
// processed.
type ValueState[K comparable, V any] struct {
	name string
	keys *currentKey[K]
	tab  *hashtable.Table[K, V]
}

// NewValueState creates a value state named name (unique within the
// operator). Call it from Open.
func NewValueState[V any, K comparable](rc *RuntimeContext[K], name string) *ValueState[K, V] {
	return &ValueState[K, V]{name: name, keys: rc.keys, tab: hashtable.New[K, V](64)}
}

// Value returns the current key's value and whether it is set.
func (s *ValueState[K, V]) Value() (V, bool) {
	if p := s.tab.Get(s.keys.hash, s.keys.key); p != nil {
		return *p, true
	}
	var zero V
	return zero, false
}

// Update sets the current key's value.
func (s *ValueState[K, V]) Update(v V) {
	p, _ := s.tab.Upsert(s.keys.hash, s.keys.key)
	*p = v
}

// Clear removes the current key's value.
func (s *ValueState[K, V]) Clear() { s.tab.Delete(s.keys.hash, s.keys.key) }

// KeyedContext is what a process function sees of the record or timer being
// processed.
type KeyedContext[K comparable, OUT any] struct {
	op *procCore[K, OUT]
}

// Key is the key of the record or timer being processed.
func (c *KeyedContext[K, OUT]) Key() K { return c.op.cur.key }

// Timestamp is the event time of the record, or the time of the timer.
func (c *KeyedContext[K, OUT]) Timestamp() time.Time { return time.UnixMilli(c.op.curTS).UTC() }

// Watermark is the operator's current input watermark.
func (c *KeyedContext[K, OUT]) Watermark() time.Time { return time.UnixMilli(c.op.wm).UTC() }

// Emit sends a record downstream with the current timestamp.
func (c *KeyedContext[K, OUT]) Emit(v OUT) { c.op.ob.add(v, c.op.curTS, c.op.emitWM) }

// RegisterEventTimeTimer asks for OnTimer to be called for the current key
// once the watermark reaches t. Registering the same key and time twice
// fires once.
func (c *KeyedContext[K, OUT]) RegisterEventTimeTimer(t time.Time) { c.op.register(t.UnixMilli()) }

// DeleteEventTimeTimer cancels a timer of the current key.
func (c *KeyedContext[K, OUT]) DeleteEventTimeTimer(t time.Time) {
	ms := t.UnixMilli()
	c.op.timerSet.Delete(timerHash(c.op.cur.hash, ms), timerKey[K]{c.op.cur.key, ms})
}

type timerKey[K comparable] struct {
	key K
	ts  int64
}

func timerHash(keyHash uint64, ts int64) uint64 { return keygroup.Mix64(keyHash ^ uint64(ts)) }

type timer[K comparable] struct {
	ts   int64
	seq  uint64 // registration order breaks ties, so firing order is deterministic
	hash uint64
	key  K
}

type timerHeap[K comparable] []timer[K]

func (h timerHeap[K]) Len() int { return len(h) }
func (h timerHeap[K]) Less(i, j int) bool {
	return h[i].ts < h[j].ts || (h[i].ts == h[j].ts && h[i].seq < h[j].seq)
}
func (h timerHeap[K]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap[K]) Push(x any)   { *h = append(*h, x.(timer[K])) }
func (h *timerHeap[K]) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
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

	timers   timerHeap[K]
	timerSet *hashtable.Table[timerKey[K], struct{}]
	seq      uint64
}

func (c *procCore[K, OUT]) register(ts int64) {
	h := timerHash(c.cur.hash, ts)
	if _, inserted := c.timerSet.Upsert(h, timerKey[K]{c.cur.key, ts}); !inserted {
		return
	}
	c.seq++
	heap.Push(&c.timers, timer[K]{ts: ts, seq: c.seq, hash: c.cur.hash, key: c.cur.key})
}

type processOp[K comparable, T, OUT any] struct {
	procCore[K, OUT]
	fn      KeyedProcessFunction[K, T, OUT]
	onTimer TimerHandler[K, OUT]
	ctx     *KeyedContext[K, OUT]
	out     consumer[OUT]
	size    int
	m       *metrics.Operator
}

func (op *processOp[K, T, OUT]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	for i := range b.data {
		if w := b.wm[i]; w > op.wm {
			if err := op.advance(w); err != nil {
				return err
			}
		}
		r := &b.data[i]
		op.cur.key, op.cur.hash, op.curTS = r.key, r.hash, b.ts[i]
		op.emitWM = op.wm
		if err := op.fn.ProcessElement(op.ctx, r.val); err != nil {
			return err
		}
		if len(op.ob.data) >= op.size {
			if err := op.emit(op.wm); err != nil {
				return err
			}
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

// advance moves the watermark to w and fires due timers in time order.
// Timers registered while firing fire too if they are already due.
func (op *processOp[K, T, OUT]) advance(w int64) error {
	prev := op.wm
	op.wm = w
	op.emitWM = prev
	for len(op.timers) > 0 && op.timers[0].ts <= w {
		t := heap.Pop(&op.timers).(timer[K])
		if !op.timerSet.Delete(timerHash(t.hash, t.ts), timerKey[K]{t.key, t.ts}) {
			continue // deleted, or a duplicate of a timer that already fired
		}
		if op.onTimer == nil {
			continue
		}
		op.cur.key, op.cur.hash, op.curTS = t.key, t.hash, t.ts
		if err := op.onTimer.OnTimer(op.ctx, time.UnixMilli(t.ts).UTC()); err != nil {
			return err
		}
		if len(op.ob.data) >= op.size {
			if err := op.emit(prev); err != nil {
				return err
			}
		}
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

func (op *processOp[K, T, OUT]) finish() error { return op.out.finish() }
