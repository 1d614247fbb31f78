package engine

import (
	"time"
	"unsafe"

	"github.com/weirstream/weir/internal/exec"
	"github.com/weirstream/weir/internal/group"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// keyed is a record on a hash-partitioned edge: the key is extracted and
// hashed once, by the sender, and travels with the value so no operator
// downstream calls the key function or hashes again.
type keyed[K comparable, T any] struct {
	hash uint64
	key  K
	val  T
}

// outBuffers holds one partly filled batch per target channel of an edge.
type outBuffers[E any] struct {
	st       *subtask
	targets  []target
	pool     *batchPool[E]
	bufs     []*batch[E]
	sentWM   []int64
	wm       int64 // latest watermark of the input
	idle     bool  // the input is idle: say so downstream
	sentIdle []bool
	since    int64 // unix ns of the oldest pending content; 0 if none
	size     int
	m        *metrics.Operator
}

func newOutBuffers[E any](st *subtask, targets []target, pool *batchPool[E], m *metrics.Operator) *outBuffers[E] {
	o := &outBuffers[E]{st: st, targets: targets, pool: pool, size: st.cfg().batchSize, wm: watermark.Min, m: m}
	o.bufs = make([]*batch[E], len(targets))
	o.sentWM = make([]int64, len(targets))
	o.sentIdle = make([]bool, len(targets))
	for i := range o.bufs {
		o.bufs[i] = pool.get()
		o.sentWM[i] = watermark.Min
	}
	st.flushers = append(st.flushers, o)
	return o
}

// send ships target t's batch with the given final watermark.
func (o *outBuffers[E]) send(t int, wm int64) error {
	b := o.bufs[t]
	b.watermark = wm
	b.idle = o.idle
	o.sentWM[t] = wm
	o.sentIdle[t] = o.idle
	// Records out are the sending operator's to count (once per record,
	// however many edges it feeds); the writer adds only the time blocked.
	blocked, err := o.targets[t].gate.Send(o.targets[t].channel, exec.Message{Kind: exec.Data, Batch: b})
	if blocked > 0 {
		o.m.BackpressureNanos.Add(int64(blocked))
	}
	if err != nil {
		return err
	}
	o.bufs[t] = o.pool.get()
	return nil
}

// sendFull ships a batch that filled up in the middle of an input batch. Its
// final watermark is the one before its last record: the input's final
// watermark may be ahead of records still to come in this input batch.
func (o *outBuffers[E]) sendFull(t int) error {
	b := o.bufs[t]
	return o.send(t, b.wm[len(b.wm)-1])
}

// endBatch notes the input batch's final watermark and starts the buffer
// timeout if anything is now pending.
func (o *outBuffers[E]) endBatch(wm int64, idle bool) {
	if wm > o.wm {
		o.wm = wm
	}
	o.idle = idle
	if o.since == 0 && o.pending() {
		o.since = time.Now().UnixNano()
	}
}

func (o *outBuffers[E]) pending() bool {
	for t, b := range o.bufs {
		if len(b.data) > 0 || o.sentWM[t] < o.wm || o.sentIdle[t] != o.idle {
			return true
		}
	}
	return false
}

func (o *outBuffers[E]) pendingSince() int64 { return o.since }

func (o *outBuffers[E]) flush() error {
	for t, b := range o.bufs {
		if len(b.data) > 0 || o.sentWM[t] < o.wm || o.sentIdle[t] != o.idle {
			if err := o.send(t, o.wm); err != nil {
				return err
			}
		}
	}
	o.since = 0
	return nil
}

// finish sends what is buffered with the final watermark, then End.
func (o *outBuffers[E]) finish() error {
	o.wm = watermark.Max
	o.idle = false
	if err := o.flush(); err != nil {
		return err
	}
	for _, t := range o.targets {
		if _, err := t.gate.Send(t.channel, exec.Message{Kind: exec.End}); err != nil {
			return err
		}
	}
	return nil
}

// hashWriter routes records by the key group of their key.
type hashWriter[K comparable, T any] struct {
	out   *outBuffers[keyed[K, T]]
	key   func(T) K
	hash  func(K) uint64
	route []int32 // key group -> target
	maxP  uint64
	// word64: K is an 8-byte integer, hashed by keygroup.Word64 inline
	// rather than through the hash function value.
	word64 bool
}

func newHashWriter[K comparable, T any](st *subtask, targets []target, pool *batchPool[keyed[K, T]], m *metrics.Operator, key func(T) K, hash func(K) uint64) *hashWriter[K, T] {
	maxP := st.cfg().maxParallelism
	w := &hashWriter[K, T]{out: newOutBuffers(st, targets, pool, m), key: key, hash: hash, maxP: uint64(maxP),
		word64: keygroup.IsWord64[K]()}
	w.route = make([]int32, maxP)
	for kg := range w.route {
		w.route[kg] = int32(keygroup.Subtask(kg, len(targets), maxP))
	}
	return w
}

func (w *hashWriter[K, T]) push(b *batch[T]) error {
	if w.word64 {
		return w.pushWord64(b)
	}
	o := w.out
	for i := range b.data {
		k := w.key(b.data[i])
		h := w.hash(k)
		t := w.route[h%w.maxP]
		ob := o.bufs[t]
		ob.data = append(ob.data, keyed[K, T]{hash: h, key: k, val: b.data[i]})
		ob.ts = append(ob.ts, b.ts[i])
		ob.wm = append(ob.wm, b.wm[i])
		if len(ob.data) >= o.size {
			if err := o.sendFull(int(t)); err != nil {
				return err
			}
		}
	}
	o.endBatch(b.watermark, b.idle)
	return nil
}

// pushWord64 is push for 8-byte integer keys: the same records to the same
// targets (the hash is the one w.hash computes, see keygroup.IsWord64),
// with the hash computed inline.
func (w *hashWriter[K, T]) pushWord64(b *batch[T]) error {
	o := w.out
	route, maxP, size := w.route, w.maxP, o.size
	for i := range b.data {
		k := w.key(b.data[i])
		h := keygroup.Word64(*(*uint64)(unsafe.Pointer(&k)))
		t := route[h%maxP]
		ob := o.bufs[t]
		ob.data = append(ob.data, keyed[K, T]{hash: h, key: k, val: b.data[i]})
		ob.ts = append(ob.ts, b.ts[i])
		ob.wm = append(ob.wm, b.wm[i])
		if len(ob.data) >= size {
			if err := o.sendFull(int(t)); err != nil {
				return err
			}
		}
	}
	o.endBatch(b.watermark, b.idle)
	return nil
}

func (w *hashWriter[K, T]) finish() error { return w.out.finish() }

// plainWriter routes records without looking at them: forward (one
// target), rebalance (round robin per record) or broadcast (every target).
type plainWriter[T any] struct {
	out  *outBuffers[T]
	part partitioning
	next int
}

func (w *plainWriter[T]) push(b *batch[T]) error {
	o := w.out
	n := len(o.bufs)
	for i := range b.data {
		switch {
		case w.part == broadcast:
			for t := 0; t < n; t++ {
				if err := w.add(t, b, i); err != nil {
					return err
				}
			}
		case n == 1:
			if err := w.add(0, b, i); err != nil {
				return err
			}
		default:
			t := w.next
			if w.next++; w.next == n {
				w.next = 0
			}
			if err := w.add(t, b, i); err != nil {
				return err
			}
		}
	}
	o.endBatch(b.watermark, b.idle)
	return nil
}

func (w *plainWriter[T]) add(t int, b *batch[T], i int) error {
	ob := w.out.bufs[t]
	ob.add(b.data[i], b.ts[i], b.wm[i])
	if len(ob.data) >= w.out.size {
		return w.out.sendFull(t)
	}
	return nil
}

func (w *plainWriter[T]) finish() error { return w.out.finish() }

// connect adds an edge from s to n carrying records of type T unchanged.
func connect[T any](s *Stream[T], n *node, part partitioning) *edge {
	e := s.job.addEdge(s.node, n, part)
	pool := newBatchPool[T](max(1, s.job.cfg.batchSize))
	e.writer = func(st *subtask, targets []target) any {
		return consumer[T](&plainWriter[T]{out: newOutBuffers(st, targets, pool, st.metrics(e.from)), part: e.part})
	}
	e.deliver, e.empty = deliverer(pool)
	e.again = func(from, to *node) *edge { return connect(&Stream[T]{job: s.job, node: from}, to, part) }
	return e
}

// connectKeyed adds a hash-partitioned edge from ks's stream to n.
func connectKeyed[K comparable, T any](ks *KeyedStream[K, T], n *node) *edge {
	e := ks.src.job.addEdge(ks.src.node, n, hashed)
	connectKeyedEdge(e, ks)
	e.exchange = func(x *group.Exchange, ups []exchangeUp) { rewriteExchange(e, ks, x, ups) }
	return e
}

// connectKeyedEdge makes e carry whole keyed records of ks.
func connectKeyedEdge[K comparable, T any](e *edge, ks *KeyedStream[K, T]) {
	pool := newBatchPool[keyed[K, T]](max(1, ks.src.job.cfg.batchSize))
	e.writer = func(st *subtask, targets []target) any {
		return consumer[T](newHashWriter(st, targets, pool, st.metrics(e.from), ks.key, ks.hash))
	}
	e.deliver, e.empty = deliverer(pool)
}

// deliverer returns the untyped receive adapters of an edge of E.
func deliverer[E any](pool *batchPool[E]) (func(any) func(any) error, func(int64) any) {
	deliver := func(in any) func(any) error {
		c := in.(consumer[E])
		return func(b any) error {
			bb := b.(*batch[E])
			err := c.push(bb)
			pool.put(bb)
			return err
		}
	}
	empty := func(wm int64) any {
		b := pool.get()
		b.watermark = wm
		return b
	}
	return deliver, empty
}
