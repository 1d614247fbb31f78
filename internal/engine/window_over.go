package engine

import (
	"time"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/pq"
	"github.com/weirstream/weir/internal/watermark"
)

// overOp computes Sliding windows: per key, the events of the last `size`
// ms before each event, emitted when the watermark passes the event.
// Events are buffered per key in timestamp order until no future window can
// include them (ts <= watermark - size).
type overOp[K comparable, T, ACC, OUT any] struct {
	winOut[K, T, WindowResult[K, OUT]]
	rng  int64 // the window's range, ms
	agg  AggregateFunction[T, ACC, OUT]
	info opInfo

	keys   *hashtable.Table[K, *overKey[K, T]]
	timers pq.Heap[overTimer[K]]
	seq    uint64
	wm     int64
	emitWM int64
	snap   codec.GroupWriter[overEntry[K, T]]
}

type overKey[K comparable, T any] struct {
	key     K
	hash    uint64
	events  []overEvent[T] // sorted by ts
	emitted int            // events[:emitted] have been emitted
	// One timer per key is live at a time, at the key's next due time;
	// other timers of the key in the heap are stale and skipped.
	timerAt  int64
	hasTimer bool
}

type overEvent[T any] struct {
	ts  int64
	val T
}

type overTimer[K comparable] struct {
	at   int64
	seq  uint64
	hash uint64
	key  K
}

func (a overTimer[K]) Less(b overTimer[K]) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

func (op *overOp[K, T, ACC, OUT]) init() {
	op.keys = hashtable.New[K, *overKey[K, T]](64)
	op.wm, op.emitWM = watermark.Min, watermark.Min
}

func (op *overOp[K, T, ACC, OUT]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	for i := range b.data {
		if w := b.wm[i]; w > op.wm {
			if err := op.advance(w); err != nil {
				return err
			}
		}
		r := &b.data[i]
		ts := b.ts[i]
		if ts <= op.wm {
			op.dropLate(r, ts, ts-op.rng, ts, op.wm)
			continue
		}
		p, ins := op.keys.Upsert(r.hash, r.key)
		if ins {
			*p = &overKey[K, T]{key: r.key, hash: r.hash}
		}
		k := *p
		// Insert in timestamp order after equal timestamps (arrival order).
		j := len(k.events)
		for j > k.emitted && k.events[j-1].ts > ts {
			j--
		}
		k.events = append(k.events, overEvent[T]{})
		copy(k.events[j+1:], k.events[j:])
		k.events[j] = overEvent[T]{ts, r.val}
		op.schedule(k)
	}
	if b.watermark > op.wm {
		if err := op.advance(b.watermark); err != nil {
			return err
		}
	}
	return op.endBatch(op.wm, b.idle)
}

// advance emits, in timestamp order, every buffered event the watermark
// passed, then trims events no future window can reach.
func (op *overOp[K, T, ACC, OUT]) advance(w int64) error {
	op.emitWM = op.wm
	op.wm = w
	for op.timers.Len() > 0 && op.timers.Peek().at <= w {
		t := op.timers.Pop()
		p := op.keys.Get(t.hash, t.key)
		if p == nil {
			continue
		}
		k := *p
		if !k.hasTimer || t.at != k.timerAt {
			continue // superseded by an earlier timer of the key
		}
		k.hasTimer = false
		for k.emitted < len(k.events) && k.events[k.emitted].ts <= w {
			e := &k.events[k.emitted]
			// The window (ts-size, ts] includes every peer with the same ts.
			acc := op.agg.Create()
			for _, x := range k.events {
				if x.ts > e.ts {
					break
				}
				if x.ts > e.ts-op.rng {
					acc = op.agg.Add(acc, x.val)
				}
			}
			k.emitted++
			if err := op.add(WindowResult[K, OUT]{Key: k.key, Start: time.UnixMilli(e.ts - op.rng).UTC(), End: time.UnixMilli(e.ts).UTC(),
				Value: op.agg.Result(acc), Kind: Insert}, e.ts, op.emitWM); err != nil {
				return err
			}
		}
		// Trim: events at or before w-size are outside every future window.
		drop := 0
		for drop < k.emitted && k.events[drop].ts <= w-op.rng {
			drop++
		}
		if drop > 0 {
			k.events = append(k.events[:0], k.events[drop:]...)
			k.emitted -= drop
		}
		if len(k.events) == 0 {
			op.keys.Delete(k.hash, k.key)
		} else if w != watermark.Max {
			op.schedule(k)
		}
	}
	return nil
}

// schedule makes sure k has a timer at its next due time: its oldest
// unemitted event (to emit it) or the time its oldest event leaves the
// range (to trim it), whichever comes first.
func (op *overOp[K, T, ACC, OUT]) schedule(k *overKey[K, T]) {
	next := k.events[0].ts + op.rng
	if k.emitted < len(k.events) {
		next = min(next, k.events[k.emitted].ts)
	}
	if k.hasTimer && k.timerAt <= next {
		return
	}
	k.timerAt, k.hasTimer = next, true
	op.seq++
	op.timers.Push(overTimer[K]{at: next, seq: op.seq, hash: k.hash, key: k.key})
}

// ---- snapshots ----

type overEntry[K comparable, T any] struct {
	Hash    uint64
	Key     K
	Ts      []int64
	Vals    []T
	Emitted int
}

func (op *overOp[K, T, ACC, OUT]) barrier(b *barrierMsg, s *taskSnapshot) error {
	g := &op.snap
	g.Start(int(op.info.maxP))
	var e overEntry[K, T]
	op.keys.All(func(h uint64, _ K, p **overKey[K, T]) bool {
		k := *p
		e.Hash, e.Key, e.Emitted, e.Ts, e.Vals = k.hash, k.key, k.emitted, reuse(g, e.Ts), reuse(g, e.Vals)
		for _, ev := range k.events {
			e.Ts = append(e.Ts, ev.ts)
			e.Vals = append(e.Vals, ev.val)
		}
		g.Add(int(h%op.info.maxP), &e)
		return true
	})
	if err := addKeyedState(s, op.info, op.wm, g); err != nil {
		return err
	}
	clear(e.Vals[:cap(e.Vals)])
	return op.winOut.forwardBarrier(b, s)
}

func (op *overOp[K, T, ACC, OUT]) restore(wm int64, groups [][]byte) error {
	op.wm, op.emitWM, op.sentWM = wm, wm, wm
	return codec.EachEntry(groups, func(e overEntry[K, T]) {
		k := &overKey[K, T]{key: e.Key, hash: e.Hash, emitted: e.Emitted}
		for i := range e.Ts {
			k.events = append(k.events, overEvent[T]{e.Ts[i], e.Vals[i]})
		}
		p, _ := op.keys.Upsert(e.Hash, e.Key)
		*p = k
		if len(k.events) > 0 {
			op.schedule(k)
		}
	})
}
