package engine

import (
	"fmt"
	"reflect"
	"unsafe"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// A keys-only edge: the input of a window that counts (Aggregate with
// Count, aligned windows, no LateEvents) needs of each record only its key,
// event time and watermark. Shipping keyed[K, struct{}] (hash and key)
// instead of keyed[K, T] cuts the bytes written on the sender's core and
// read on the receiver's: in the standard workload 32 bytes a record
// instead of 56 (hash, key, 24-byte click, time, watermark), and moving
// those lines between cores is most of the partitioner's and the window's
// time (docs/performance.md, "Where the time goes").

// connectKeysOnly makes e carry keys only: records of ks become
// keyed[K, struct{}].
func connectKeysOnly[K comparable, T any](e *edge, ks *KeyedStream[K, T]) {
	pool := newBatchPool[keyed[K, struct{}]](max(1, ks.src.job.cfg.batchSize))
	e.writer = func(st *subtask, targets []target) any {
		return consumer[T](newKeysWriter(st, targets, pool, st.metrics(e.from), ks.key, ks.hash))
	}
	e.deliver, e.empty = deliverer(pool)
}

// buildCountKeysOnly is the window operator of a keys-only edge: the aligned
// operator over keyed[K, struct{}] with Count. It keeps the same state (a
// count per key and window; snapshots are the same as with whole records)
// and drops the same late events.
func buildCountKeysOnly[K comparable](st *subtask, n *node, o any, w Windows) ([]any, error) {
	wo, err := newWinOut[K, struct{}, WindowResult[K, int64]](st, n, o)
	if err != nil {
		return nil, err
	}
	a := alignedWindowOp[K, struct{}, int64, int64]{winOut: wo, w: w, agg: countAgg[struct{}]{}, wm: watermark.Min,
		nextFire: watermark.Max, info: newOpInfo(st, n), count: true,
		async: shareable(reflect.TypeFor[K]())} // the count (int64) is shareable: snapshots are deferred as in windowOperator
	var op interface {
		consumer[keyed[K, struct{}]]
		restore(wm int64, groups [][]byte) error
	} = &a
	if sliced(w, true) {
		op = newSlicedWindowOp(st, &a)
	}
	if wm, groups, ok := st.restoreKeyed(n); ok {
		if err := op.restore(wm, groups); err != nil {
			return nil, fmt.Errorf("weir: restoring window operator %s (uid %q) from %s: %w", n.name, n.uid, st.plan.restored.Path, err)
		}
	}
	return []any{consumer[keyed[K, struct{}]](op)}, nil
}

// keysWriter is hashWriter for a keys-only edge: it routes each record's
// key (with its hash, event time and watermark), not the record.
type keysWriter[K comparable, T any] struct {
	out    *outBuffers[keyed[K, struct{}]]
	key    func(T) K
	hash   func(K) uint64
	route  []int32 // key group -> target
	maxP   uint64
	word64 bool // K is an 8-byte integer: keygroup.Word64 inline
}

func newKeysWriter[K comparable, T any](st *subtask, targets []target, pool *batchPool[keyed[K, struct{}]], m *metrics.Operator, key func(T) K, hash func(K) uint64) *keysWriter[K, T] {
	maxP := st.cfg().maxParallelism
	w := &keysWriter[K, T]{out: newOutBuffers(st, targets, pool, m), key: key, hash: hash, maxP: uint64(maxP),
		word64: keygroup.IsWord64[K]()}
	w.route = make([]int32, maxP)
	for kg := range w.route {
		w.route[kg] = int32(keygroup.Subtask(kg, len(targets), maxP))
	}
	return w
}

func (w *keysWriter[K, T]) push(b *batch[T]) error {
	o := w.out
	route, maxP, size := w.route, w.maxP, o.size
	for i := range b.data {
		k := w.key(b.data[i])
		var h uint64
		if w.word64 {
			h = keygroup.Word64(*(*uint64)(unsafe.Pointer(&k)))
		} else {
			h = w.hash(k)
		}
		t := route[h%maxP]
		ob := o.bufs[t]
		ob.data = append(ob.data, keyed[K, struct{}]{hash: h, key: k})
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

func (w *keysWriter[K, T]) finish() error { return w.out.finish() }

func (w *keysWriter[K, T]) barrier(b *barrierMsg, _ *taskSnapshot) error { return w.out.barrier(b) }
