package weir

import (
	"time"

	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// Aggregate aggregates each window per key with agg and emits one
// WindowResult per key and window when the watermark passes the window's
// end. Events that arrive after their window fired are dropped and counted
// in late_records_dropped_total.
func Aggregate[K comparable, T, ACC, OUT any](ws *WindowedStream[K, T], agg AggregateFunction[T, ACC, OUT], opts ...Option) *Stream[WindowResult[K, OUT]] {
	j := ws.ks.src.job
	cfg := ws.cfg
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.check("Aggregate", scopeOp); err != nil {
		j.fail(err)
	}
	out, n := newStream[WindowResult[K, OUT]](j, "window", cfg)
	connectKeyed(ws.ks, n)
	w := ws.w
	n.build = func(st *subtask, o any) ([]any, error) {
		size := st.cfg().batchSize
		op := &alignedWindowOp[K, T, ACC, OUT]{
			w: w, agg: agg, out: o.(consumer[WindowResult[K, OUT]]),
			ob: newBatch[WindowResult[K, OUT]](size), size: size,
			wm: watermark.Min, sentWM: watermark.Min, nextFire: watermark.Max,
			m: st.metrics(n),
		}
		return []any{consumer[keyed[K, T]](op)}, nil
	}
	return out
}

// bucket is the state of one aligned window: an accumulator per key.
type bucket[K comparable, ACC any] struct {
	start, end int64
	tab        *hashtable.Table[K, ACC]
}

// alignedWindowOp aggregates tumbling and hopping windows. Because these
// windows have the same boundaries for every key, state is bucketed by
// window, not by key: firing is a walk over the buckets the watermark
// passed, not a timer per key and window.
type alignedWindowOp[K comparable, T, ACC, OUT any] struct {
	w    Windows
	agg  AggregateFunction[T, ACC, OUT]
	out  consumer[WindowResult[K, OUT]]
	ob   *batch[WindowResult[K, OUT]]
	size int
	m    *metrics.Operator

	wm       int64 // input watermark
	sentWM   int64 // last watermark pushed downstream
	nextFire int64 // smallest end-1 over open buckets; Max if none

	buckets []*bucket[K, ACC] // sorted by start (hence by end)
	cache   *bucket[K, ACC]   // tumbling: the bucket of the previous record
	free    []*hashtable.Table[K, ACC]
	late    int64
}

func (op *alignedWindowOp[K, T, ACC, OUT]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	agg := op.agg
	for i := range b.data {
		if w := b.wm[i]; w > op.wm {
			if err := op.advance(w); err != nil {
				return err
			}
		}
		r := &b.data[i]
		ts := b.ts[i]
		// Fast path: same window as the previous record. A bucket exists
		// only while its window is not late, so no lateness check is needed.
		if c := op.cache; c != nil && ts >= c.start && ts < c.end {
			p, ins := c.tab.Upsert(r.hash, r.key)
			if ins {
				*p = agg.Add(agg.Create(), r.val)
			} else {
				*p = agg.Add(*p, r.val)
			}
			continue
		}
		op.assign(r, ts)
	}
	if b.watermark > op.wm {
		if err := op.advance(b.watermark); err != nil {
			return err
		}
	}
	if op.late > 0 {
		op.m.LateDropped.Add(op.late)
		op.late = 0
	}
	if len(op.ob.data) > 0 || op.wm > op.sentWM {
		return op.emit(op.wm)
	}
	return nil
}

// assign adds a record to each window it belongs to that is not late, from
// the latest window back. A record late for all its windows is dropped.
func (op *alignedWindowOp[K, T, ACC, OUT]) assign(r *keyed[K, T], ts int64) {
	accepted := false
	for s := op.w.lastStart(ts); s > ts-op.w.size; s -= op.w.slide {
		end := s + op.w.size
		if end-1 <= op.wm {
			break // this window fired, and every earlier one too
		}
		bk := op.bucket(s, end)
		p, ins := bk.tab.Upsert(r.hash, r.key)
		if ins {
			*p = op.agg.Add(op.agg.Create(), r.val)
		} else {
			*p = op.agg.Add(*p, r.val)
		}
		accepted = true
		if op.w.kind == tumblingWindows {
			op.cache = bk
		}
	}
	if !accepted {
		op.late++
	}
}

// bucket finds or creates the bucket of the window starting at s.
func (op *alignedWindowOp[K, T, ACC, OUT]) bucket(s, end int64) *bucket[K, ACC] {
	i := len(op.buckets)
	for i > 0 && op.buckets[i-1].start >= s {
		if op.buckets[i-1].start == s {
			return op.buckets[i-1]
		}
		i--
	}
	var tab *hashtable.Table[K, ACC]
	if n := len(op.free); n > 0 {
		tab = op.free[n-1]
		op.free = op.free[:n-1]
	} else {
		tab = hashtable.New[K, ACC](64)
	}
	bk := &bucket[K, ACC]{start: s, end: end, tab: tab}
	op.buckets = append(op.buckets, nil)
	copy(op.buckets[i+1:], op.buckets[i:])
	op.buckets[i] = bk
	if end-1 < op.nextFire {
		op.nextFire = end - 1
	}
	return bk
}

// advance moves the input watermark to w and fires every window whose end-1
// it reached, in order of end. Results carry the previous watermark: they
// are emitted before the new watermark is forwarded, as in Flink.
func (op *alignedWindowOp[K, T, ACC, OUT]) advance(w int64) error {
	prev := op.wm
	op.wm = w
	if w < op.nextFire {
		return nil
	}
	n := 0
	for _, bk := range op.buckets {
		if bk.end-1 > w {
			break
		}
		if err := op.fire(bk, prev); err != nil {
			return err
		}
		if op.cache == bk {
			op.cache = nil
		}
		bk.tab.Reset()
		op.free = append(op.free, bk.tab)
		n++
	}
	op.buckets = append(op.buckets[:0], op.buckets[n:]...)
	op.nextFire = watermark.Max
	if len(op.buckets) > 0 {
		op.nextFire = op.buckets[0].end - 1
	}
	return nil
}

func (op *alignedWindowOp[K, T, ACC, OUT]) fire(bk *bucket[K, ACC], wm int64) error {
	start, end := time.UnixMilli(bk.start).UTC(), time.UnixMilli(bk.end).UTC()
	ts := bk.end - 1
	var err error
	bk.tab.All(func(_ uint64, k K, acc *ACC) bool {
		op.ob.add(WindowResult[K, OUT]{Key: k, Start: start, End: end, Value: op.agg.Result(*acc)}, ts, wm)
		if len(op.ob.data) >= op.size {
			err = op.emit(wm)
		}
		return err == nil
	})
	return err
}

// emit pushes the output batch downstream with final watermark wm.
func (op *alignedWindowOp[K, T, ACC, OUT]) emit(wm int64) error {
	op.ob.watermark = wm
	op.sentWM = wm
	op.m.RecordsOut.Add(int64(len(op.ob.data)))
	err := op.out.push(op.ob)
	op.ob.reset()
	return err
}

func (op *alignedWindowOp[K, T, ACC, OUT]) finish() error { return op.out.finish() }
