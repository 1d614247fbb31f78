package state

import (
	"encoding/binary"
	"fmt"
	"iter"
	"slices"
)

// serialTimers is the serial backend's timer queue. Each timer is two KV
// entries in its key group:
//
//	queue: prefix | 0 | time | seq | key | namespace -> key hash
//	index: prefix | 1 | key | namespace | time       -> seq
//
// (times sign-flipped big-endian, so that a key group's queue is in firing
// order: by time, then registration). The index deduplicates and finds a
// timer to delete. In memory, per key group, is a cache of the head of its
// queue, as in Flink's RocksDB timer service: the first timers up to a
// bound, loaded headBatch at a time, kept in order as timers come and go;
// the earliest timer is the least of the cached heads. Firing timers thus
// reads the KV once per headBatch timers, not once per timer.
type serialTimers[K, N comparable] struct {
	sbase
	k     typed[K]
	n     typed[N]
	heads []timerHead[K, N] // by key group - r.Start
	count int
	seq   uint64
	min   int // index of the least head, -1 when to be found
	tf    lazy[timerFormat[K, N]]
	ibuf  []byte
}

// timerHead caches the first timers of a key group's queue. When loaded,
// buf holds, in order, every timer of the key group up to bound (all of
// them, when all is set).
type timerHead[K, N any] struct {
	loaded bool
	all    bool
	bound  Timer[K, N] // TS and Seq of the last timer loaded
	buf    []Timer[K, N]
	off    int // buf[off:] are the cached timers
}

// headBatch is how many timers a key group's cache loads at a time.
const headBatch = 64

func newSerialTimers[K, N comparable](be *Serial, name string) (*serialTimers[K, N], error) {
	bs, err := newSBase(be, name, KindTimers, Options{})
	if err != nil {
		return nil, err
	}
	k, n, err := keyNSCodecs[K, N]()
	if err != nil {
		return nil, err
	}
	q := &serialTimers[K, N]{sbase: bs, k: k, n: n, heads: make([]timerHead[K, N], bs.r.Len()), min: -1}
	existed, err := q.allocate()
	if err != nil {
		return nil, err
	}
	if !existed {
		for i := range q.heads {
			q.heads[i].loaded, q.heads[i].all = true, true
		}
		return q, nil
	}
	// Reopened from files: count the timers and find the next sequence
	// number; heads load when needed.
	for kg := q.r.Start; kg < q.r.End; kg++ {
		start, end := q.queueRange(kg)
		var err error
		q.scan(start, end, func(k, _ []byte) bool {
			if len(k) < 21 {
				err = fmt.Errorf("corrupt timer")
				return false
			}
			q.count++
			q.seq = max(q.seq, binary.BigEndian.Uint64(k[13:]))
			return true
		})
		if err != nil {
			return nil, err
		}
	}
	return q, nil
}

func (q *serialTimers[K, N]) Name() string { return q.name }
func (q *serialTimers[K, N]) Kind() Kind   { return KindTimers }

// queueRange is the key range of key group kg's queue.
func (q *serialTimers[K, N]) queueRange(kg int) (start, end []byte) {
	start = append(q.prefix(nil, kg), 0)
	return start, prefixEnd(start)
}

func flipTS(ts int64) uint64  { return uint64(ts) ^ 1<<63 }
func unflipTS(u uint64) int64 { return int64(u ^ 1<<63) }

func (q *serialTimers[K, N]) queueKey(dst []byte, kg int, t *Timer[K, N]) []byte {
	dst = append(q.prefix(dst, kg), 0)
	dst = binary.BigEndian.AppendUint64(dst, flipTS(t.TS))
	dst = binary.BigEndian.AppendUint64(dst, t.Seq)
	dst = q.k.append(dst, &t.Key)
	return q.n.append(dst, &t.NS)
}

func (q *serialTimers[K, N]) indexKey(dst []byte, kg int, key *K, ns *N, ts int64) []byte {
	dst = append(q.prefix(dst, kg), 1)
	dst = q.k.append(dst, key)
	dst = q.n.append(dst, ns)
	return binary.BigEndian.AppendUint64(dst, flipTS(ts))
}

// decodeQueue decodes a queue entry.
func (q *serialTimers[K, N]) decodeQueue(k, v []byte) (Timer[K, N], error) {
	var t Timer[K, N]
	if len(k) < 21 || len(v) < 8 {
		return t, fmt.Errorf("corrupt timer")
	}
	t.TS = unflipTS(binary.BigEndian.Uint64(k[5:]))
	t.Seq = binary.BigEndian.Uint64(k[13:])
	t.Hash = binary.BigEndian.Uint64(v)
	rest, err := q.k.read(k[21:], &t.Key)
	if err != nil {
		return t, err
	}
	_, err = q.n.read(rest, &t.NS)
	return t, err
}

func timerLess[K, N any](a, b *Timer[K, N]) bool {
	return a.TS < b.TS || (a.TS == b.TS && a.Seq < b.Seq)
}

// covers reports whether the cache of h holds every timer up to t.
func (h *timerHead[K, N]) covers(t *Timer[K, N]) bool {
	return h.loaded && (h.all || !timerLess(&h.bound, t))
}

// search returns where t is or would be in the cached timers.
func (h *timerHead[K, N]) search(t *Timer[K, N]) (int, bool) {
	lo, hi := h.off, len(h.buf)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if timerLess(&h.buf[m], t) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(h.buf) && h.buf[lo].TS == t.TS && h.buf[lo].Seq == t.Seq
}

// Register implements TimerQueue.
func (q *serialTimers[K, N]) Register(hash uint64, key K, ns N, ts int64) bool {
	kg := q.kg(hash)
	q.ibuf = q.indexKey(q.ibuf[:0], kg, &key, &ns, ts)
	if _, ok := q.get(q.ibuf); ok {
		return false
	}
	q.seq++
	t := Timer[K, N]{TS: ts, Seq: q.seq, Hash: hash, Key: key, NS: ns}
	q.set(q.ibuf, binary.BigEndian.AppendUint64(q.vbuf[:0], t.Seq))
	q.kbuf = q.queueKey(q.kbuf[:0], kg, &t)
	q.set(q.kbuf, binary.BigEndian.AppendUint64(q.vbuf[:0], hash))
	q.count++
	if h := &q.heads[kg-q.r.Start]; h.covers(&t) {
		i, _ := h.search(&t)
		h.buf = slices.Insert(h.buf, i, t)
		if i == h.off {
			q.min = -1
		}
		if len(h.buf)-h.off > 2*headBatch {
			// The cache holds the head only: the rest stays in the KV.
			keep := h.off + headBatch
			clear(h.buf[keep:])
			h.buf, h.all = h.buf[:keep], false
			h.bound = Timer[K, N]{TS: h.buf[keep-1].TS, Seq: h.buf[keep-1].Seq}
		}
	}
	return true
}

// Delete implements TimerQueue.
func (q *serialTimers[K, N]) Delete(hash uint64, key K, ns N, ts int64) bool {
	kg := q.kg(hash)
	q.ibuf = q.indexKey(q.ibuf[:0], kg, &key, &ns, ts)
	v, ok := q.get(q.ibuf)
	if !ok {
		return false
	}
	if len(v) != 8 {
		q.corrupt("timer index")
	}
	t := Timer[K, N]{TS: ts, Seq: binary.BigEndian.Uint64(v), Hash: hash, Key: key, NS: ns}
	q.remove(kg, &t)
	return true
}

// remove deletes timer t of key group kg, whose index key is in ibuf.
func (q *serialTimers[K, N]) remove(kg int, t *Timer[K, N]) {
	q.del(q.ibuf)
	q.kbuf = q.queueKey(q.kbuf[:0], kg, t)
	q.del(q.kbuf)
	q.count--
	if h := &q.heads[kg-q.r.Start]; h.covers(t) {
		if i, found := h.search(t); found {
			if i == h.off {
				h.buf[i] = Timer[K, N]{} // drop references
				h.off++
				q.min = -1
			} else {
				h.buf = slices.Delete(h.buf, i, i+1)
			}
		}
		if h.off == len(h.buf) {
			h.buf, h.off = h.buf[:0], 0
		}
	}
}

// load fills the cache of key group i with its next timers.
func (q *serialTimers[K, N]) load(i int) {
	h := &q.heads[i]
	start, end := q.queueRange(q.r.Start + i)
	if h.loaded {
		// Everything up to bound was cached and has gone: start after it.
		start = binary.BigEndian.AppendUint64(start, flipTS(h.bound.TS))
		start = binary.BigEndian.AppendUint64(start, h.bound.Seq+1)
	}
	h.buf, h.off = h.buf[:0], 0
	var err error
	q.scan(start, end, func(k, v []byte) bool {
		var t Timer[K, N]
		if t, err = q.decodeQueue(k, v); err != nil {
			return false
		}
		h.buf = append(h.buf, t)
		return len(h.buf) < headBatch
	})
	if err != nil {
		q.fail(fmt.Errorf("decode timer: %w", err))
	}
	h.loaded = true
	h.all = len(h.buf) < headBatch
	if n := len(h.buf); n > 0 {
		h.bound = Timer[K, N]{TS: h.buf[n-1].TS, Seq: h.buf[n-1].Seq}
	}
}

// Peek implements TimerQueue.
func (q *serialTimers[K, N]) Peek() (Timer[K, N], bool) {
	if q.count == 0 {
		return Timer[K, N]{}, false
	}
	if q.min < 0 {
		for i := range q.heads {
			h := &q.heads[i]
			if !h.loaded || (h.off == len(h.buf) && !h.all) {
				q.load(i)
			}
			if h.off < len(h.buf) && (q.min < 0 || timerLess(&h.buf[h.off], &q.heads[q.min].buf[q.heads[q.min].off])) {
				q.min = i
			}
		}
		if q.min < 0 {
			q.fail(fmt.Errorf("%d timers counted, none found", q.count))
		}
	}
	h := &q.heads[q.min]
	return h.buf[h.off], true
}

// Pop implements TimerQueue.
func (q *serialTimers[K, N]) Pop() (Timer[K, N], bool) {
	t, ok := q.Peek()
	if !ok {
		return t, false
	}
	kg := q.r.Start + q.min
	q.ibuf = q.indexKey(q.ibuf[:0], kg, &t.Key, &t.NS, t.TS)
	q.remove(kg, &t)
	return t, true
}

// Len implements TimerQueue.
func (q *serialTimers[K, N]) Len() int { return q.count }

// KeyGroup implements TimerQueue.
func (q *serialTimers[K, N]) KeyGroup(kg int) iter.Seq[Timer[K, N]] {
	return func(yield func(Timer[K, N]) bool) {
		if !q.r.Contains(kg) {
			return
		}
		start, end := q.queueRange(kg)
		var err error
		q.scan(start, end, func(k, v []byte) bool {
			var t Timer[K, N]
			if t, err = q.decodeQueue(k, v); err != nil {
				return false
			}
			return yield(t)
		})
		if err != nil {
			q.fail(fmt.Errorf("decode timer: %w", err))
		}
	}
}

func (q *serialTimers[K, N]) format() (*timerFormat[K, N], error) {
	return q.tf.get(newTimerFormat[K, N])
}

func (q *serialTimers[K, N]) layout() (string, error) { return layoutOf("", q.format) }

func (q *serialTimers[K, N]) appendGroup(dst []byte, kg int) ([]byte, int, error) {
	return appendGroupOf(dst, q.format, q.KeyGroup(kg))
}

func (q *serialTimers[K, N]) restore(sections [][]byte) error {
	return restoreTimers(q.format, sections, q.check, q.Register)
}
