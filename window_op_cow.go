package weir

import (
	"sync/atomic"

	"github.com/weirstream/weir/internal/hashtable"
)

// Copy-on-write snapshots of the aligned window operator.
//
// A deferred snapshot (snapshot_async.go) needs the state as it was at the
// barrier while the task goes on changing it. The operator first copied
// every bucket's table at the barrier; then (sixth pass) the barrier shared
// the tables and the task wrote to a delta table per bucket until the
// coordinator had encoded them, falling back to a copy of the whole table
// when a delta grew past an eighth of it, which is what happened at every
// checkpoint while windows fill (q5's throughput run): the copy was back,
// and the delta's lookups and fold came on top of it.
//
// Now the buckets' tables are chunked (hashtable.Chunked): the barrier
// shares each table's chunks with the snapshot (a View: a copy of the
// table's chunk pointers, no entries), and the task writes in place except
// that its first write to a chunk the View still holds copies that chunk
// (once). The cost of a checkpoint is the chunks written while the
// coordinator encodes, not the state; firing reads the table as it is; and
// the chunks come from a pool the operator's tables share, so growing a
// table, the copies and the fired buckets' tables reuse one another's
// memory instead of faulting in fresh pages. When the task sees that the
// encoding is done (an atomic the snapshot's release sets, read once per
// input batch), it unshares the tables: the chunks only the View held go
// back to the pool, and the tables of buckets fired meanwhile (held, since
// the View may still read them) are freed.
//
// The coordinator encodes checkpoint n before it triggers n+1, and an
// aborted checkpoint's encoding never runs: so when the next barrier
// reaches the operator, no snapshot reads the tables any more, and the
// barrier unshares what is left before it shares the tables again.

// alignedChunkSlots is the slots of a full chunk of the buckets' tables
// (24 bytes each for int64 keys and counts: 96 KiB); a variable so that
// tests get many chunks with small states.
var alignedChunkSlots = 4096

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
	held []*hashtable.Chunked[K, ACC]
	// buckets are the snapshot's view of the buckets (reused from one
	// checkpoint to the next, like the views' chunk lists).
	buckets []sharedBucket[K, ACC]
}

// sharedBucket is a bucket as a snapshot sees it.
type sharedBucket[K comparable, ACC any] struct {
	start, end int64
	view       hashtable.View[K, ACC]
}

// encoded reports whether the coordinator is done with the tables shared
// at the last barrier.
func (c *alignedCOW[K, ACC]) encoded() bool { return c.done.Load() == c.seq }

// freeTable returns an empty table for a new bucket.
func (op *alignedWindowOp[K, T, ACC, OUT]) freeTable() *hashtable.Chunked[K, ACC] {
	if n := len(op.free); n > 0 {
		t := op.free[n-1]
		op.free = op.free[:n-1]
		return t
	}
	if op.pool == nil {
		op.pool = hashtable.NewChunkPool[K, ACC](alignedChunkSlots)
	}
	return hashtable.NewChunked[K, ACC](64, op.pool)
}

// release frees a fired bucket's table, or holds it while a snapshot may
// read it.
func (op *alignedWindowOp[K, T, ACC, OUT]) release(bk *bucket[K, ACC]) {
	if bk.shared {
		op.cow.held = append(op.cow.held, bk.tab)
		bk.shared = false
		return
	}
	bk.tab.Reset()
	op.free = append(op.free, bk.tab)
}

// upsert is Upsert on bk's table (which copies a chunk the snapshot holds
// before it writes it).
func (op *alignedWindowOp[K, T, ACC, OUT]) upsert(bk *bucket[K, ACC], hash uint64, key K) (*ACC, bool) {
	return bk.tab.Upsert(hash, key)
}

// unshare ends the sharing of the last snapshot, whose encoding is over:
// the tables give the chunks only the snapshot held back to the pool, and
// the held tables are freed.
func (op *alignedWindowOp[K, T, ACC, OUT]) unshare() {
	for _, bk := range op.buckets {
		bk.tab.Unshare()
		bk.shared = false
	}
	for i, t := range op.cow.held {
		t.Unshare()
		t.Reset()
		op.free = append(op.free, t)
		op.cow.held[i] = nil
	}
	op.cow.held = op.cow.held[:0]
	for i := range op.cow.buckets {
		op.cow.buckets[i].view.Release() // the snapshot's references to the chunks
	}
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
	if cap(c.buckets) < len(op.buckets) {
		c.buckets = append(c.buckets[:cap(c.buckets)], make([]sharedBucket[K, ACC], len(op.buckets)-cap(c.buckets))...)
	}
	bks := c.buckets[:len(op.buckets)]
	for i, bk := range op.buckets {
		bk.shared = true
		sb := &bks[i]
		sb.start, sb.end = bk.start, bk.end
		bk.tab.Share(&sb.view)
	}
	c.buckets = bks
	c.sharing = len(bks) > 0
	maxP := op.info.maxP
	deferEncode(s, op.info, op.wm, &op.snap, func(add func(int, *alignedEntry[K, ACC])) {
		var e alignedEntry[K, ACC]
		for i := range bks {
			bk := &bks[i]
			e.Start, e.End = bk.start, bk.end
			bk.view.All(func(h uint64, k K, acc *ACC) bool {
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
