package engine

import (
	"context"
	"runtime/trace"
	"unsafe"

	"github.com/weirstream/weir/internal/prefetch"
)

// Event-time timers of the general window operator for windows that never
// move (tumbling and hopping): a FIFO queue per (time, kind) instead of the
// per-key heap.
//
// A window's event-time timers are a function of its end (fire at end-1,
// cleanup at end-1+lateness), and windows are created in sequence order, so
// the windows whose timer is at the same (time, kind) are queued in the
// order the heap would pop them (time, kind, seq): appending a window to its
// queue keeps the queue sorted by seq, and the queues, few (two per open
// window end at most), are kept sorted by (time, kind). Firing a window of
// N keys then walks a slice instead of popping a heap of N entries (each
// Pop a walk down a heap larger than the caches), and every row of the
// window waits for the firing of the whole window.
//
// Sessions (whose windows merge and grow) and the global window keep the
// heap.

// fixedTimers is the queues, sorted by (at, kind).
type fixedTimers[K comparable, ACC, OUT any] struct {
	qs   []*timerQueue[K, ACC, OUT]
	free []*timerQueue[K, ACC, OUT]
}

// timerQueue is the windows with an event-time timer at (at, kind), in
// sequence order.
type timerQueue[K comparable, ACC, OUT any] struct {
	at   int64
	kind timerKind
	wins []winRef[K, ACC, OUT]
}

// winRef is a queued window: its key's state by arena slot and the slot's
// generation (a key that went and whose slot holds another key now voids
// the entry), and the window.
type winRef[K comparable, ACC, OUT any] struct {
	w   *gwin[ACC, OUT]
	ref keyRef
}

// due reports whether a timer is at or before wm.
func (f *fixedTimers[K, ACC, OUT]) due(wm int64) bool {
	return len(f.qs) > 0 && f.qs[0].at <= wm
}

// add queues w's timer t.
func (f *fixedTimers[K, ACC, OUT]) add(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT], t tkey) {
	i := len(f.qs)
	for i > 0 {
		q := f.qs[i-1]
		if q.at == t.at && q.kind == t.kind {
			q.wins = append(q.wins, winRef[K, ACC, OUT]{w, ks.ref})
			return
		}
		if q.at < t.at || q.at == t.at && q.kind < t.kind {
			break
		}
		i--
	}
	var q *timerQueue[K, ACC, OUT]
	if n := len(f.free); n > 0 {
		q, f.free = f.free[n-1], f.free[:n-1]
	} else {
		q = &timerQueue[K, ACC, OUT]{}
	}
	q.at, q.kind = t.at, t.kind
	q.wins = append(q.wins, winRef[K, ACC, OUT]{w, ks.ref})
	f.qs = append(f.qs, nil)
	copy(f.qs[i+1:], f.qs[i:])
	f.qs[i] = q
}

// pop removes the first queue, which the caller has run.
func (f *fixedTimers[K, ACC, OUT]) pop() {
	q := f.qs[0]
	clear(q.wins) // drop the references to fired windows
	q.wins = q.wins[:0]
	f.qs = append(f.qs[:0], f.qs[1:]...)
	f.free = append(f.free, q)
}

// removeFired removes the windows a queue fired; in a trace, a
// window-remove region inside window-fire: the part of a firing no result
// waits for.
func (op *genWindowOp[K, T, ACC, OUT, R]) removeFired(ws []winRef[K, ACC, OUT]) {
	if len(ws) > 0 && trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "window-remove").End()
	}
	pf := !op.noPrefetch
	for i, r := range ws {
		if pf {
			// The key's state, then where its hash table lookup starts
			// (which needs the key's hash: asked for pfKeys keys before).
			if j := i + pfKeys; j < len(ws) {
				prefetch.Two(uintptr(unsafe.Pointer(op.arena.at(ws[j].ref.id))), uintptr(unsafe.Pointer(ws[j].w)))
			}
			if j := i + pfEvents; j < len(ws) {
				prefetch.Two(op.keys.Home(op.arena.at(ws[j].ref.id).hash))
			}
		}
		op.remove(op.arena.at(r.ref.id), r.w)
	}
}

// How far ahead a firing asks for memory (prefetchFire): a key's state
// pfKeys keys ahead, its events pfEvents keys ahead (reading where they
// are needs the state, which has arrived by then), at most pfEventLines
// cache lines of them. The removal after the firing (removeFired) uses
// the same distances for a key's state and its hash table slot (whose
// address needs the key's hash, in the state).
const (
	pfKeys       = 8
	pfEvents     = 4
	pfEventLines = 4
)

// prefetchFire asks for the memory that firing ws[i+pfKeys] and
// ws[i+pfEvents] will read: the key's state (its gkey and window, the
// window inline in it for most keys) and, when the accumulator is a slice
// (CoGroup's and ProcessWindow's collected events), the first lines of
// its elements. A window can hold hundreds of thousands of keys per
// subtask. Their states were allocated in the order the queue holds
// them, so walking them is nearly sequential, but each key's events grew
// by append among the other keys' and lie anywhere on the heap: without
// this, firing each key would wait for that cache miss (and removing it
// for its hash table slot's), and every row of the window waits for the
// keys fired before it. Prefetching only passes addresses; nothing is
// read before the loop reaches it.
func (op *genWindowOp[K, T, ACC, OUT, R]) prefetchFire(ws []winRef[K, ACC, OUT], i int) {
	if j := i + pfKeys; j < len(ws) {
		r := &ws[j]
		prefetch.One(uintptr(unsafe.Pointer(op.arena.at(r.ref.id))))
		prefetch.Lines(uintptr(unsafe.Pointer(r.w)), 128)
	}
	if op.accElem == 0 {
		return
	}
	if j := i + pfEvents; j < len(ws) {
		// ACC is a slice (init checked): its data pointer and length.
		acc := (*struct {
			data uintptr
			n    int
		})(unsafe.Pointer(&ws[j].w.acc))
		prefetch.Lines(acc.data, min(uintptr(acc.n)*op.accElem, pfEventLines*64))
	}
}

// advanceFixed runs the event-time timers at or before wm, in (time, kind,
// seq) order, as advance does with the heap.
func (op *genWindowOp[K, T, ACC, OUT, R]) advanceFixed(wm int64) error {
	f := &op.fixed
	for f.due(wm) {
		q := f.qs[0]
		// Running a timer queues only timers after q (a fire queues the
		// window's cleanup, at the same time or later and of a later kind),
		// so q stays first and its slice is not appended to meanwhile.
		done := 0 // q.wins[:done]: fired windows to remove after the queue
		pf := q.kind == tFire && !op.noPrefetch
		for i := range q.wins {
			if pf {
				op.prefetchFire(q.wins, i)
			}
			r := &q.wins[i]
			ks, w := op.arena.live(r.ref), r.w
			if ks == nil || w.gone {
				continue // removed before its timer (purged)
			}
			switch q.kind {
			case tFire:
				w.fireDone = true
				if err := op.fire(ks, w); err != nil {
					return err
				}
				t, ok := op.winTimer(w)
				if ok && t.at == q.at && !w.dirty {
					// Cleanup at the firing's time (no allowed lateness):
					// it would only remove the window, after the other
					// windows' firings at this time (as the heap's
					// cleanup timers do), which nothing it does could
					// change. So it is removed after the whole queue
					// has fired: the results of a large window go
					// downstream as their batches fill, without waiting
					// for the removal of every key fired before them
					// (a hash table delete each, a cache miss: about
					// half of the CPU of firing Nexmark q8's window).
					q.wins[done] = q.wins[i]
					done++
				} else if ok {
					f.add(ks, w, t)
				}
			case tCleanup:
				if w.dirty {
					if err := op.fire(ks, w); err != nil {
						return err
					}
				}
				op.remove(ks, w)
			}
		}
		op.removeFired(q.wins[:done])
		f.pop()
	}
	return nil
}
