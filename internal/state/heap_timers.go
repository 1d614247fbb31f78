package state

import (
	"iter"

	"github.com/weirstream/weir/internal/keygroup"
)

// timerKey identifies a timer for deduplication.
type timerKey[N, K comparable] struct {
	ns  N
	key K
	ts  int64
}

// timerNode is a timer in the node slab, with its position in the heap so
// that Delete is O(log n) rather than leaving a stale heap entry behind (a
// timer moved on every event, like a session timeout, would otherwise
// pile up entries until they come due).
type timerNode[K, N any] struct {
	t   Timer[K, N]
	pos int32 // index in heap; -1 when free
}

// heapTimers is the heap's timer queue: a binary min-heap of node indices
// ordered by (TS, Seq), and per key group a table from timer to node, which
// deduplicates and lists a key group's timers. Nodes are recycled through a
// free list, so steady-state registration does not allocate.
type heapTimers[K, N comparable] struct {
	name  string
	nsh   nsHasher[N]
	g     groups[timerKey[N, K], int32]
	nodes []timerNode[K, N]
	free  []int32
	heap  []int32
	seq   uint64
	tf    lazy[timerFormat[K, N]]
}

func (q *heapTimers[K, N]) Name() string { return q.name }
func (q *heapTimers[K, N]) Kind() Kind   { return KindTimers }

// Len implements TimerQueue.
func (q *heapTimers[K, N]) Len() int { return len(q.heap) }

func (q *heapTimers[K, N]) hash(keyHash uint64, ns N, ts int64) uint64 {
	return q.nsh.mix(keyHash, ns) ^ keygroup.Mix64(uint64(ts))
}

// Register implements TimerQueue.
func (q *heapTimers[K, N]) Register(hash uint64, key K, ns N, ts int64) bool {
	t := q.g.of(hash)
	p, fresh := upsert(t, q.hash(hash, ns, ts), timerKey[N, K]{ns, key, ts})
	if !fresh {
		return false
	}
	var n int32
	if k := len(q.free); k > 0 {
		n = q.free[k-1]
		q.free = q.free[:k-1]
	} else {
		n = int32(len(q.nodes))
		q.nodes = append(q.nodes, timerNode[K, N]{})
	}
	q.seq++
	q.nodes[n] = timerNode[K, N]{t: Timer[K, N]{TS: ts, Seq: q.seq, Hash: hash, Key: key, NS: ns}, pos: int32(len(q.heap))}
	*p = n
	q.heap = append(q.heap, n)
	q.up(len(q.heap) - 1)
	return true
}

// Delete implements TimerQueue.
func (q *heapTimers[K, N]) Delete(hash uint64, key K, ns N, ts int64) bool {
	t := q.g.of(hash)
	i := t.Find(q.hash(hash, ns, ts), timerKey[N, K]{ns, key, ts})
	if i < 0 {
		return false
	}
	n := *t.At(i)
	t.DeleteAt(i)
	q.removeAt(int(q.nodes[n].pos))
	q.release(n)
	return true
}

// Peek implements TimerQueue.
func (q *heapTimers[K, N]) Peek() (Timer[K, N], bool) {
	if len(q.heap) == 0 {
		return Timer[K, N]{}, false
	}
	return q.nodes[q.heap[0]].t, true
}

// Pop implements TimerQueue.
func (q *heapTimers[K, N]) Pop() (Timer[K, N], bool) {
	if len(q.heap) == 0 {
		return Timer[K, N]{}, false
	}
	n := q.heap[0]
	tm := q.nodes[n].t
	q.removeAt(0)
	q.g.of(tm.Hash).Delete(q.hash(tm.Hash, tm.NS, tm.TS), timerKey[N, K]{tm.NS, tm.Key, tm.TS})
	q.release(n)
	return tm, true
}

// KeyGroup implements TimerQueue.
func (q *heapTimers[K, N]) KeyGroup(kg int) iter.Seq[Timer[K, N]] {
	return func(yield func(Timer[K, N]) bool) {
		if t := q.g.group(kg); t != nil {
			t.Walk(func(_ uint64, _ timerKey[N, K], n *int32) bool { return yield(q.nodes[*n].t) })
		}
	}
}

func (q *heapTimers[K, N]) release(n int32) {
	q.nodes[n] = timerNode[K, N]{pos: -1} // drop the key's references
	q.free = append(q.free, n)
}

func (q *heapTimers[K, N]) less(a, b int32) bool {
	x, y := &q.nodes[a].t, &q.nodes[b].t
	return x.TS < y.TS || (x.TS == y.TS && x.Seq < y.Seq)
}

func (q *heapTimers[K, N]) set(i int, n int32) {
	q.heap[i] = n
	q.nodes[n].pos = int32(i)
}

func (q *heapTimers[K, N]) up(i int) {
	n := q.heap[i]
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(n, q.heap[p]) {
			break
		}
		q.set(i, q.heap[p])
		i = p
	}
	q.set(i, n)
}

// down sifts the node at i down and reports whether it moved.
func (q *heapTimers[K, N]) down(i int) bool {
	n := q.heap[i]
	start := i
	for {
		c := 2*i + 1
		if c >= len(q.heap) {
			break
		}
		if r := c + 1; r < len(q.heap) && q.less(q.heap[r], q.heap[c]) {
			c = r
		}
		if !q.less(q.heap[c], n) {
			break
		}
		q.set(i, q.heap[c])
		i = c
	}
	q.set(i, n)
	return i != start
}

// removeAt removes the heap entry at i.
func (q *heapTimers[K, N]) removeAt(i int) {
	last := len(q.heap) - 1
	if i != last {
		q.set(i, q.heap[last])
	}
	q.heap = q.heap[:last]
	if i < last && !q.down(i) {
		q.up(i)
	}
}
