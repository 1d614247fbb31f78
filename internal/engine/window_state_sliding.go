package engine

import (
	"slices"
	"time"

	"github.com/weirstream/weir/internal/watermark"
)

// Sliding windows (Flink's OVER RANGE windows) with their state in the
// job's state backend (PebbleState).
//
// slidingStateWindow is the heap's overOp (window_over.go) as a keyed
// process function: per key, a ValueState with the key's buffered events
// in timestamp order (equal timestamps in arrival order), how many of them
// were emitted, and the time of the key's one event-time timer: at its
// oldest event not yet emitted (to emit it once the watermark passes it)
// or at the time its oldest event leaves the range (to drop it), whichever
// comes first. A timer that an earlier one replaces is deleted. Each event
// the watermark passes is emitted, in timestamp order, with the aggregate
// of the key's events in (t-range, t], stamped t; an event at or before the
// watermark is late (dropped, counted, sent to LateEvents). A batch's keys
// are read from the state once and written back when it ends, as in
// window_state.go. The results are overOp's; only those of different keys
// at one watermark may come in another order. The events are stored, so
// the input type (not the accumulator's) must be encodable.

// slidingEvents are a key's buffered events (exported fields: the value
// codec writes them).
type slidingEvents[T any] struct {
	Ts      []int64 // sorted
	Vals    []T
	Emitted int // Ts[:Emitted] were emitted
	// the key's pending event-time timer
	TimerAt  int64
	HasTimer bool
}

type slidingStateWindow[K comparable, T, ACC, OUT any] struct {
	stateWindowBase[K, T, ACC, OUT]
	evs *ValueState[K, slidingEvents[T]]
	// the batch's keys: cache indexes dirty
	cache map[K]int32
	dirty []slidingKey[K, T]
}

// slidingKey is a key's events in the batch, to write back.
type slidingKey[K comparable, T any] struct {
	ref KeyRef[K]
	e   slidingEvents[T]
}

func (f *slidingStateWindow[K, T, ACC, OUT]) Open(rc *RuntimeContext[K]) error {
	f.evs = NewValueState[slidingEvents[T]](rc, "sliding-events")
	f.cache = map[K]int32{}
	return nil
}

func (f *slidingStateWindow[K, T, ACC, OUT]) ProcessElement(ctx *KeyedContext[K, WindowResult[K, OUT]], in T) error {
	ts, rng := ctx.op.curTS, f.w.size
	if ts <= ctx.op.wm {
		f.out.dropLate(ctx, in, ts-rng, ts)
		return nil
	}
	key := ctx.Key()
	i, ok := f.cache[key]
	if !ok {
		e, _ := f.evs.Value()
		i = int32(len(f.dirty))
		f.cache[key] = i
		f.dirty = append(f.dirty, slidingKey[K, T]{ref: ctx.KeyRef(), e: e})
	}
	e := &f.dirty[i].e
	// in timestamp order, after equal timestamps (arrival order)
	j := len(e.Ts)
	for j > e.Emitted && e.Ts[j-1] > ts {
		j--
	}
	e.Ts = slices.Insert(e.Ts, j, ts)
	e.Vals = slices.Insert(e.Vals, j, in)
	f.schedule(ctx, e)
	return nil
}

// schedule makes sure the current key, with events e, has a timer at its
// next due time (overOp.schedule).
func (f *slidingStateWindow[K, T, ACC, OUT]) schedule(ctx *KeyedContext[K, WindowResult[K, OUT]], e *slidingEvents[T]) {
	next := e.Ts[0] + f.w.size
	if e.Emitted < len(e.Ts) {
		next = min(next, e.Ts[e.Emitted])
	}
	if e.HasTimer {
		if e.TimerAt <= next {
			return
		}
		ctx.DeleteEventTimeTimer(time.UnixMilli(e.TimerAt))
	}
	e.TimerAt, e.HasTimer = next, true
	ctx.RegisterEventTimeTimer(time.UnixMilli(next))
}

// OnTimer emits, in timestamp order, the current key's events that the
// watermark passed, then drops those no future window can reach
// (overOp.advance). Within a batch the key's events may be the batch's;
// after it, they are in the state.
func (f *slidingStateWindow[K, T, ACC, OUT]) OnTimer(ctx *KeyedContext[K, WindowResult[K, OUT]], t time.Time) error {
	i, cached := f.cache[ctx.Key()]
	var e *slidingEvents[T]
	if cached {
		e = &f.dirty[i].e
	} else {
		v, ok := f.evs.Value()
		if !ok {
			return nil
		}
		e = &v
	}
	if !e.HasTimer || e.TimerAt != t.UnixMilli() {
		return nil // replaced by an earlier timer (deleted, so not expected)
	}
	e.HasTimer = false
	w, rng := ctx.op.wm, f.w.size
	for e.Emitted < len(e.Ts) && e.Ts[e.Emitted] <= w {
		ts := e.Ts[e.Emitted]
		// the window (ts-range, ts] includes every peer with the same ts
		acc := f.agg.Create()
		for k, x := range e.Ts {
			if x > ts {
				break
			}
			if x > ts-rng {
				acc = f.agg.Add(acc, e.Vals[k])
			}
		}
		e.Emitted++
		ctx.emitAt(WindowResult[K, OUT]{Key: ctx.Key(), Start: time.UnixMilli(ts - rng).UTC(), End: time.UnixMilli(ts).UTC(),
			Value: f.agg.Result(acc), Kind: Insert}, ts)
	}
	drop := 0
	for drop < e.Emitted && e.Ts[drop] <= w-rng {
		drop++
	}
	if drop > 0 {
		e.Ts = slices.Delete(e.Ts, 0, drop)
		e.Vals = slices.Delete(e.Vals, 0, drop)
		e.Emitted -= drop
	}
	if len(e.Ts) > 0 && w != watermark.Max {
		f.schedule(ctx, e)
	}
	if !cached {
		if len(e.Ts) == 0 {
			f.evs.Clear()
		} else {
			f.evs.Update(*e)
		}
	}
	return nil
}

// EndBatch writes the batch's events back to the state.
func (f *slidingStateWindow[K, T, ACC, OUT]) EndBatch(ctx *KeyedContext[K, WindowResult[K, OUT]]) error {
	ts := time.UnixMilli(ctx.op.curTS)
	for i := range f.dirty {
		d := &f.dirty[i]
		ctx.SetKey(d.ref, ts)
		if len(d.e.Ts) == 0 {
			f.evs.Clear()
		} else {
			f.evs.Update(d.e)
		}
		*d = slidingKey[K, T]{}
	}
	f.dirty = f.dirty[:0]
	clear(f.cache)
	return f.out.flushLate(ctx)
}
