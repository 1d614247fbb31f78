package cep

import (
	"math"

	"github.com/weirstream/weir"
)

// wheelSize is the span of event time, in ms, the sweep's wheel holds in
// buckets of one millisecond; later wakes wait in an overflow heap. 16 s
// covers the usual Within windows, so most wakes never see the heap.
const wheelSize = 1 << 14

// wake is a key's appointment with its automata at ts: its earliest
// buffered event, or the time its earliest partial match times out. A
// wake is stale when the key has since made another (keyState.Timer no
// longer ts) or its state was recycled (gen changed); the sweep skips it.
type wake[K comparable, T any] struct {
	ts  int64
	ref weir.KeyRef[K]
	ks  *keyState[T] // the key's state when the backend holds it in place; nil otherwise
	gen uint32
}

// sweep is Detect's replacement for a timer per key: one time wheel per
// subtask of the keys that have work, swept in time order as the
// watermark advances (ties in the order they were made). It saves the
// timer queue's deduplication table, heap and the state lookup of each
// firing; it is not checkpointed, being rebuilt from the keyed state (see
// detectFn.rebuild).
type sweep[K comparable, T any] struct {
	// The wheel: per millisecond of [cur, cur+wheelSize), a FIFO list of
	// chunks of wakes (head and tail chunk; -1: empty). Chunks come from
	// one slab with a free list, so that the wheel turns without
	// allocating and its memory follows the wakes held, not its span;
	// a bucket is read a chunk at a time, not by chasing a pointer per
	// wake.
	head, tail []int32
	chunks     []chunk[K, T]
	free       int32 // first free chunk; -1: none
	cur        int64 // every wake in the wheel has ts in [cur, cur+wheelSize)
	n          int   // wakes in the wheel
	over       []wake[K, T]
	started    bool // a watermark arrived; before it every wake waits in over
	batch      []wake[K, T]
}

const chunkLen = 8

type chunk[K comparable, T any] struct {
	w    [chunkLen]wake[K, T]
	n    int32
	next int32
}

// add appends w to the bucket of time at.
func (s *sweep[K, T]) add(at int64, w wake[K, T]) {
	if s.head == nil {
		s.head = make([]int32, wheelSize)
		s.tail = make([]int32, wheelSize)
		for i := range s.head {
			s.head[i], s.tail[i] = -1, -1
		}
		s.free = -1
	}
	b := at & (wheelSize - 1)
	t := s.tail[b]
	if t < 0 || s.chunks[t].n == chunkLen {
		var c int32
		if s.free >= 0 {
			c = s.free
			s.free = s.chunks[c].next
			s.chunks[c].next = -1
		} else {
			c = int32(len(s.chunks))
			s.chunks = append(s.chunks, chunk[K, T]{next: -1})
		}
		if t >= 0 {
			s.chunks[t].next = c
		} else {
			s.head[b] = c
		}
		s.tail[b] = c
		t = c
	}
	ch := &s.chunks[t]
	ch.w[ch.n] = w
	ch.n++
	s.n++
}

// push adds a wake. w.ts is after the last watermark swept to.
func (s *sweep[K, T]) push(w wake[K, T]) {
	if !s.started || w.ts >= s.cur+wheelSize || w.ts < s.cur {
		s.overPush(w)
		return
	}
	s.add(w.ts, w)
}

// advance visits, in time order, every wake at or before wm, the wakes of
// one millisecond at a time; visit may push wakes after wm.
func (s *sweep[K, T]) advance(wm int64, visit func([]wake[K, T])) {
	if !s.started {
		s.started = true
		s.cur = wm
		if len(s.over) > 0 && s.over[0].ts < wm {
			s.cur = s.over[0].ts
		}
	}
	for {
		if s.n == 0 {
			if len(s.over) == 0 || s.over[0].ts > wm {
				break
			}
			s.cur = max(s.cur, s.over[0].ts) // jump over empty time
		}
		s.refill()
		if s.cur > wm {
			break
		}
		if s.n > 0 {
			b := s.cur & (wheelSize - 1)
			// Visits may add wakes to other buckets (after wm), never to
			// this one: detach it first.
			c := s.head[b]
			s.head[b], s.tail[b] = -1, -1
			batch := s.batch[:0]
			for c >= 0 {
				ch := &s.chunks[c]
				batch = append(batch, ch.w[:ch.n]...)
				s.n -= int(ch.n)
				clear(ch.w[:ch.n])
				next := ch.next
				ch.n, ch.next = 0, s.free
				s.free = c
				c = next
			}
			visit(batch)
			clear(batch)
			s.batch = batch[:0]
		}
		if s.cur == math.MaxInt64 {
			return
		}
		s.cur++
	}
	if wm < math.MaxInt64 && s.cur <= wm {
		s.cur = wm + 1 // nothing before: later wakes are after wm
	}
}

// refill moves the overflow wakes the wheel now spans into it.
func (s *sweep[K, T]) refill() {
	for len(s.over) > 0 && s.over[0].ts < s.cur+wheelSize {
		w := s.overPop()
		// A wake is after the watermark, hence not before cur; max is a
		// guard that would visit one late rather than a wheel turn early.
		s.add(max(w.ts, s.cur), w)
	}
}

// overPush and overPop keep over a binary min-heap by ts.
func (s *sweep[K, T]) overPush(w wake[K, T]) {
	s.over = append(s.over, w)
	h := s.over
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].ts <= h[i].ts {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (s *sweep[K, T]) overPop() wake[K, T] {
	h := s.over
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = wake[K, T]{}
	h = h[:last]
	i := 0
	for {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if r := c + 1; r < len(h) && h[r].ts < h[c].ts {
			c = r
		}
		if h[i].ts <= h[c].ts {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	s.over = h
	return top
}

// len is the number of wakes held, stale ones included (for tests).
func (s *sweep[K, T]) len() int { return s.n + len(s.over) }
