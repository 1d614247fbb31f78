package engine

import (
	"slices"
	"sync/atomic"

	"github.com/weirstream/weir/internal/hashtable"
)

// Copy-on-write snapshots of the aligned window operator.
//
// A deferred snapshot (snapshot_async.go) needs the state as it was at the
// barrier while the task goes on changing it. Copying every bucket's table
// at the barrier would stop the task for a time in proportion to the whole
// state at every checkpoint, often right before a window fires (a hop's
// slide and the checkpoint interval can coincide), and each copy of a
// growing table is fresh memory. So the barrier copies nothing: the
// snapshot reads the live tables, which the task no
// longer changes until the coordinator has encoded them. Meanwhile a write
// to a bucket goes to the bucket's delta table (its first write of a key
// starts from the shared table's accumulator, which the task may read: the
// coordinator only reads too), firing reads the delta over the table, and
// a fired bucket's table is held instead of reused. When the task sees
// that the encoding is done (an atomic the snapshot's release sets, read
// once per input batch), it folds each delta into its table and frees the
// held tables. The cost moves from a copy of the whole state per checkpoint
// to the keys written while the coordinator encodes (a lookup in the
// shared table on the first write of each, one upsert each to fold), off
// the path of the firing that follows the barrier; a bucket that takes
// many new keys meanwhile is copied after all (deltaSlot), so the cost
// stays at most about that of a copy at the barrier.
//
// The coordinator encodes checkpoint n before it triggers n+1, and an
// aborted checkpoint's encoding never runs: so when the next barrier
// reaches the operator, no snapshot reads the tables any more, and the
// barrier folds what is left before it shares the tables again.

// deltaCopyMin is the smallest delta that copyShared replaces (a variable
// so that tests reach the copy with small states).
var deltaCopyMin = 1024

// alignedCOW is the copy-on-write bookkeeping of an alignedWindowOp.
type alignedCOW[K comparable, ACC any] struct {
	// sharing: some bucket is shared, or a fired table is held, by the
	// snapshot numbered seq.
	sharing bool
	seq     int64
	// done is the seq of the last snapshot whose encoding finished; set on
	// the coordinator's goroutine.
	done atomic.Int64
	// held are the tables of buckets fired while shared.
	held []*hashtable.Table[K, ACC]
	// buckets are the snapshot's view of the buckets (reused from one
	// checkpoint to the next, like the tables it points to).
	buckets []bucket[K, ACC]
}

// encoded reports whether the coordinator is done with the tables shared
// at the last barrier.
func (c *alignedCOW[K, ACC]) encoded() bool { return c.done.Load() == c.seq }

// freeTable returns an empty table with room for n entries without
// growing, for a new bucket (n: the entries of the last fired one), a copy
// (n: what the table copied holds) or a delta (n = 0): the free table
// that fits best, else the largest one, sized once to n. A window's table
// of pointerful entries can be large, and allocating one is zeroing it in
// one go, which the runtime cannot preempt: handing a delta a table sized
// for a window, or a new window a delta's, would make such allocations
// (and a table doubled many times as a window filled) where the right
// free table was waiting.
func (op *alignedWindowOp[K, T, ACC, OUT]) freeTable(n int) *hashtable.Table[K, ACC] {
	// better: a fits and b does not, or both fit and a is smaller, or
	// neither does and a is larger.
	better := func(a, b *hashtable.Table[K, ACC]) bool {
		if a.Fits(n) != b.Fits(n) {
			return a.Fits(n)
		}
		return a.Fits(n) == (a.Cap() < b.Cap())
	}
	best := -1
	for i, t := range op.free {
		if best < 0 || better(t, op.free[best]) {
			best = i
		}
	}
	if best < 0 {
		return hashtable.New[K, ACC](max(n, 64))
	}
	t := op.free[best]
	op.free = slices.Delete(op.free, best, best+1)
	t.Reserve(n)
	return t
}

// putFree keeps an emptied table for reuse. The free tables are at most
// one per open bucket, and one more: a table beyond that, the smallest,
// is left to the garbage collector (a fired window's table, a copy's and
// the deltas would otherwise all be kept, each as large as a window).
func (op *alignedWindowOp[K, T, ACC, OUT]) putFree(t *hashtable.Table[K, ACC]) {
	op.free = append(op.free, t)
	if len(op.free) <= len(op.buckets)+1 {
		return
	}
	small := 0
	for i, f := range op.free {
		if f.Cap() < op.free[small].Cap() {
			small = i
		}
	}
	op.free[small] = op.free[len(op.free)-1]
	op.free[len(op.free)-1] = nil
	op.free = op.free[:len(op.free)-1]
}

// release frees a fired bucket's tables, or holds the table while a
// snapshot may read it.
func (op *alignedWindowOp[K, T, ACC, OUT]) release(bk *bucket[K, ACC]) {
	if d := bk.delta; d != nil {
		d.Reset()
		op.putFree(d)
		bk.delta = nil
		clear(bk.added)
		bk.added = bk.added[:0]
	}
	if bk.shared {
		op.cow.held = append(op.cow.held, bk.tab)
		bk.shared = false
		return
	}
	bk.tab.Reset()
	op.putFree(bk.tab)
}

// upsert is Upsert on bk's state: its table, or its delta while shared.
func (op *alignedWindowOp[K, T, ACC, OUT]) upsert(bk *bucket[K, ACC], hash uint64, key K) (*ACC, bool) {
	if bk.shared {
		return op.deltaSlot(bk, hash, key)
	}
	return bk.tab.Upsert(hash, key)
}

// deltaSlot is Upsert for a shared bucket: the accumulator of key in its
// delta, which starts as the shared table's (inserted false) if the key
// is there. A delta that outgrows an eighth of its table (a bucket that
// takes many new keys while the coordinator encodes, as every bucket does
// while the windows fill) is cheaper as a copy: the bucket then takes a
// copy of its table with the delta folded in, and stops sharing.
func (op *alignedWindowOp[K, T, ACC, OUT]) deltaSlot(bk *bucket[K, ACC], hash uint64, key K) (*ACC, bool) {
	if bk.delta == nil {
		bk.delta = op.freeTable(0)
	} else if n := bk.delta.Len(); n >= deltaCopyMin && n > bk.tab.Len()/8 {
		op.copyShared(bk)
		return bk.tab.Upsert(hash, key)
	}
	p, ins := bk.delta.Upsert(hash, key)
	if ins {
		if v := bk.tab.Get(hash, key); v != nil {
			*p = *v
			return p, false
		}
		bk.added = append(bk.added, hashedKey[K]{hash, key})
	}
	return p, ins
}

// copyShared gives a shared bucket a table of its own: a copy of the
// shared one (which the snapshot keeps, held until it is encoded) with
// the delta folded in.
func (op *alignedWindowOp[K, T, ACC, OUT]) copyShared(bk *bucket[K, ACC]) {
	t := op.freeTable(hashtable.Holds(bk.tab.Cap())) // as many slots as bk.tab, which CopyTo copies
	bk.tab.CopyTo(t)
	op.cow.held = append(op.cow.held, bk.tab)
	bk.tab = t
	op.fold(bk)
	bk.shared = false
}

// fold moves a bucket's delta into its table (no longer shared): the
// changed accumulators in place, then the new keys in the order they came.
func (op *alignedWindowOp[K, T, ACC, OUT]) fold(bk *bucket[K, ACC]) {
	d := bk.delta
	if d == nil {
		return
	}
	tab := bk.tab
	d.All(func(h uint64, k K, v *ACC) bool {
		if i := tab.Find(h, k); i >= 0 {
			*tab.At(i) = *v
		}
		return true
	})
	for _, a := range bk.added {
		p, _ := tab.Upsert(a.hash, a.key)
		*p = *d.Get(a.hash, a.key)
	}
	clear(bk.added)
	bk.added = bk.added[:0]
	d.Reset()
	op.putFree(d)
	bk.delta = nil
}

// unshare ends the sharing of the last snapshot, whose encoding is over:
// each delta is folded into its bucket's table and the held tables are
// freed.
func (op *alignedWindowOp[K, T, ACC, OUT]) unshare() {
	for _, bk := range op.buckets {
		op.fold(bk)
		bk.shared = false
	}
	for i, t := range op.cow.held {
		t.Reset()
		op.putFree(t)
		op.cow.held[i] = nil
	}
	op.cow.held = op.cow.held[:0]
	clear(op.cow.buckets) // the snapshot's references to the tables
	op.cow.sharing = false
}

// barrierDeferred is the barrier of an aligned window operator whose keys
// and accumulators are shareable: it shares the buckets' tables with the
// snapshot (no copy) and defers the encoding, which walks them as the
// synchronous barrier walks the buckets (the same bytes).
func (op *alignedWindowOp[K, T, ACC, OUT]) barrierDeferred(b *barrierMsg, s *taskSnapshot) error {
	c := &op.cow
	if c.sharing {
		op.unshare() // the previous snapshot's encoding is over or will never run
	}
	c.seq++
	seq := c.seq
	bks := c.buckets[:0]
	for _, bk := range op.buckets {
		bk.shared = true
		bks = append(bks, bucket[K, ACC]{start: bk.start, end: bk.end, tab: bk.tab})
	}
	c.buckets = bks
	c.sharing = len(bks) > 0
	maxP := op.info.maxP
	deferEncode(s, op.info, op.wm, &op.snap, nil, func(add func(int, *alignedEntry[K, ACC])) {
		var e alignedEntry[K, ACC]
		for _, bk := range bks {
			e.Start, e.End = bk.start, bk.end
			bk.tab.AllPrefetch(func(h uint64, k K, acc *ACC) bool {
				e.Hash, e.Key, e.Acc = h, k, *acc
				add(int(h%maxP), &e)
				return true
			})
		}
	}, func() {
		// The tables are the task's again once it sees this (an atomic:
		// the task's later writes happen after these reads).
		c.done.Store(seq)
	})
	return op.winOut.forwardBarrier(b, s)
}
