package engine

import (
	"cmp"
	"context"
	"fmt"
	"runtime/trace"
	"slices"
	"time"
	"unsafe"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/prefetch"
	"github.com/weirstream/weir/internal/watermark"
)

// Sliced hopping windows (Flink's window slicing, FLIP-145).
//
// A hopping window of size n·slide shares each of its slides with n-1
// other windows. The aligned operator keeps a table per window, so a
// record updates n tables and a checkpoint encodes n windows that mostly
// hold the same keys: Nexmark q5 (10 s every 2 s) holds five tables of
// mostly the same auctions, and encoding them all at every checkpoint
// takes a large share of the interval beside the tasks. The sliced
// operator keeps one table per slide (a slice), as Flink's slicing window
// operators do:
//
//   - a record updates its slice, and the merged table of the next window
//     to fire if the record is in it: two upserts instead of n;
//   - that merged table is made once per slide, a quarter slide (of event
//     time) after the previous window fired: the slices of the window
//     merged in order, then kept current by the records; the window
//     fires by walking it, as the aligned operator walks a window's
//     table. Right after a firing, the other subtasks are still firing
//     the same window on the same cores, and the merge (a walk of a whole
//     slice) would slow them down;
//   - a slice leaves when the last window holding it fires;
//   - a checkpoint encodes the slices written since the last one and
//     reuses the encoding of the others: once the watermark has passed a
//     slice, only late records change it, so a checkpoint encodes about
//     one slice instead of n windows. The snapshot holds slices (entries
//     with the slice's bounds), never the merged table, which a restore
//     makes again from them.
//
// A snapshot of the aligned operator (entries with a window's bounds)
// restores into this one: those windows are kept as they are, and a
// window's result is its restored table merged with the slices made since
// (its records before the checkpoint, then those after). They leave when
// they fire.
//
// Merging changes the order in which a window's records reach its
// accumulator (slice by slice, not as they came), so slicing is used only
// for Count, whose result does not depend on that order (Flink slices any
// aggregate with a merge; a float sum there can differ in its last bits).
// Results are the same windows, keys and counts as the aligned operator's;
// within a window they come in the merged table's order.

// sliced reports whether a window of w aggregated by Count is sliced.
func sliced(w Windows, count bool) bool {
	return count && w.kind == hoppingWindows && w.size > w.slide && w.size%w.slide == 0
}

// slicedWindowOp counts hopping windows by slice (ACC is Count's int64:
// a record adds 1, a merge adds counts). Its buckets (the embedded
// operator's, with the same copy-on-write snapshots) are the slices, and
// the windows restored from an aligned operator's snapshot.
type slicedWindowOp[K comparable, T, ACC, OUT any] struct {
	*alignedWindowOp[K, T, ACC, OUT]
	// next is the merged table of the next window to fire, nil until it
	// is made (seed); nextTab is its table, kept from one window to the
	// next.
	next    *bucket[K, ACC]
	nextTab *hashtable.Table[K, ACC]
	// sliceLen: the entries of the largest slice so far, the size of a
	// new slice's table.
	sliceLen int
	// pending are the entries of the last deferred snapshot (read by the
	// task once the encoding is done, to keep the slices' encodings).
	pending []sliceSnap[K, ACC]
	encFree []*codec.GroupWriter[alignedEntry[K, ACC]]
	bin     uint8 // binary: 0 not known yet, 1 yes, 2 no
	reused  int   // buckets whose encoding a checkpoint reused (tests)
	// flushOut sends what the task's output buffers hold (nil in tests).
	flushOut func() error
	// seedAt: the watermark from which push makes the merged table, a
	// quarter slide after the last firing.
	seedAt int64
}

// sliceSnap is one bucket of a deferred snapshot: its encoding kept from
// the last checkpoint (groups), or its shared table (view) to encode into
// w, which the coordinator does, leaving the result in groups.
type sliceSnap[K comparable, ACC any] struct {
	bk     *bucket[K, ACC]
	w      *codec.GroupWriter[alignedEntry[K, ACC]]
	view   bucket[K, ACC]
	groups map[int][]byte
}

func newSlicedWindowOp[K comparable, T, ACC, OUT any](st *subtask, a *alignedWindowOp[K, T, ACC, OUT]) *slicedWindowOp[K, T, ACC, OUT] {
	op := &slicedWindowOp[K, T, ACC, OUT]{alignedWindowOp: a, seedAt: watermark.Min}
	if st != nil {
		op.flushOut = st.flushPending
	}
	return op
}

func (op *slicedWindowOp[K, T, ACC, OUT]) isSlice(bk *bucket[K, ACC]) bool {
	return bk.end-bk.start == op.w.slide
}

func (op *slicedWindowOp[K, T, ACC, OUT]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	if op.cow.sharing && op.cow.encoded() {
		op.unshareSliced()
	}
	if op.next == nil && op.nextFire != watermark.Max && op.wm >= op.seedAt {
		// The results of the window that just fired, and its watermark,
		// may still wait in the task's output buffers for their timeout:
		// they go first, not after the merge.
		if op.flushOut != nil {
			if err := op.flushOut(); err != nil {
				return err
			}
		}
		op.seed(op.nextFire + 1)
	}
	for i := range b.data {
		if w := b.wm[i]; w > op.wm {
			if err := op.advance(w); err != nil {
				return err
			}
		}
		r := &b.data[i]
		ts := b.ts[i]
		c := op.cache
		if c == nil || ts < c.start || ts >= c.end {
			if c = op.slice(r, ts); c == nil {
				continue // late for every window
			}
		}
		// A slice exists only while one of its windows is still to fire,
		// so the record counts.
		c.dirty = true
		// op.upsert written out, as in the aligned operator's fast path:
		// one call a record fewer on the per-record path.
		var p *ACC
		if c.shared {
			p, _ = op.deltaSlot(c, r.hash, r.key)
		} else {
			p, _ = c.tab.Upsert(r.hash, r.key)
		}
		*(*int64)(unsafe.Pointer(p))++ // Count: Create is 0, Add is +1
		if nx := op.next; nx != nil && ts >= nx.start && ts < nx.end {
			q, _ := nx.tab.Upsert(r.hash, r.key)
			*(*int64)(unsafe.Pointer(q))++
		}
	}
	if b.watermark > op.wm {
		if err := op.advance(b.watermark); err != nil {
			return err
		}
	}
	return op.endBatch(op.wm, b.idle)
}

// slice returns the slice of a record at ts, made if need be, and caches
// it; nil (the record dropped as late) if every window of the slice fired.
func (op *slicedWindowOp[K, T, ACC, OUT]) slice(r *keyed[K, T], ts int64) *bucket[K, ACC] {
	s := op.w.lastStart(ts)
	if s+op.w.size-1 <= op.wm {
		op.dropLate(r, ts, s, s+op.w.size, op.wm)
		return nil
	}
	bk := op.find(s, s+op.w.slide, true)
	op.cache = bk
	return bk
}

// find returns the bucket [start, end), made if add (nil if not there and
// not add). Buckets are sorted by start, then end.
func (op *slicedWindowOp[K, T, ACC, OUT]) find(start, end int64, add bool) *bucket[K, ACC] {
	i, ok := slices.BinarySearchFunc(op.buckets, [2]int64{start, end}, func(bk *bucket[K, ACC], t [2]int64) int {
		return cmp.Or(cmp.Compare(bk.start, t[0]), cmp.Compare(bk.end, t[1]))
	})
	if ok || !add {
		if ok {
			return op.buckets[i]
		}
		return nil
	}
	n := 0
	if end-start == op.w.slide {
		n = op.sliceLen + op.sliceLen/16
	}
	bk := &bucket[K, ACC]{start: start, end: end, from: start, tab: op.freeTable(n)}
	op.buckets = slices.Insert(op.buckets, i, bk)
	op.schedule()
	return bk
}

// schedule sets nextFire to the end-1 of the next window to fire after
// the watermark: the first that holds a bucket. A merged table made for
// a later window (a late record made an earlier slice) is dropped.
func (op *slicedWindowOp[K, T, ACC, OUT]) schedule() {
	op.nextFire = op.nextAfter(op.wm)
	if nx := op.next; nx != nil && nx.end-1 != op.nextFire {
		nx.tab.Reset()
		op.next = nil
	}
}

// nextAfter is the end-1 of the first window with an end-1 after fired
// that holds a bucket; Max if none.
func (op *slicedWindowOp[K, T, ACC, OUT]) nextAfter(fired int64) int64 {
	first := op.w.lastStart(fired+1) + op.w.slide // the first window end e with e-1 > fired
	if fired == watermark.Min {
		first = watermark.Min
	}
	next := int64(watermark.Max)
	for _, bk := range op.buckets {
		e := bk.end // a restored window
		if op.isSlice(bk) {
			e = max(bk.end, first) // the first window holding the slice still to fire
		}
		next = min(next, e-1)
	}
	return next
}

// seed makes the merged table of the window that ends at end: its
// restored table if any, then its slices in order.
func (op *slicedWindowOp[K, T, ACC, OUT]) seed(end int64) {
	if trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "window-seed").End()
	}
	start := end - op.w.size
	// The table is made for what the last window held; merge makes room
	// for each table it merges.
	n := max(op.lastLen+op.lastLen/16, 64)
	in := func(bk *bucket[K, ACC]) bool {
		return bk.start == start && bk.end == end || op.isSlice(bk) && bk.start >= start && bk.end <= end
	}
	if op.nextTab == nil {
		op.nextTab = hashtable.New[K, ACC](n)
	}
	op.nextTab.Reserve(n)
	nx := &bucket[K, ACC]{start: start, end: end, from: start, tab: op.nextTab}
	// The restored window first (its records came before the slices'),
	// then the slices in order.
	if bk := op.find(start, end, false); bk != nil {
		op.merge(nx.tab, bk)
	}
	for _, bk := range op.buckets {
		if op.isSlice(bk) && in(bk) {
			var t0 time.Time
			if trace.IsEnabled() {
				t0 = time.Now()
			}
			op.merge(nx.tab, bk)
			if trace.IsEnabled() {
				trace.Log(context.Background(), "slice-merge", fmt.Sprintf("[%d, %d) %d keys in %d slots, shared %v delta %d, into %d keys %d slots: %v",
					bk.start, bk.end, bk.tab.Len(), bk.tab.Cap(), bk.shared, len(bk.added), nx.tab.Len(), nx.tab.Cap(), time.Since(t0)))
			}
		}
	}
	op.next = nx
}

// mergeAhead is how many entries a merge reads ahead of its upserts: each
// upsert's slots in the merged table are prefetched that many entries
// before it. The merged table is larger than the caches and its slots for
// a walk in hash order lie at random, so without it each upsert would be
// a cache miss in turn.
const mergeAhead = 16

// mergeRoom, if set (tests), sees the merged table before a merge of n
// keys from a table of c slots upserts them.
var mergeRoom func(dst interface {
	Len() int
	Cap() int
}, n, c int)

// merge merges bucket bk's accumulators into dst (bk's delta over its
// table while it is shared, as fire reads it). bk does not change while
// it is walked, so its accumulators' addresses stay valid until used.
//
// dst first makes room for all of bk's keys, and has at least as many
// slots as bk's table. A walk in slot order is in hash order, and so are
// the upserts of a merge: with linear probing, keys inserted in the order
// of their home slots pile up behind each other wherever the table's
// entries and the new ones together are more than its slots, one cluster
// that moves along with the walk and that each insert probes to its end.
// Slices of mostly different keys (q5's auctions) merged into a table of
// the same size would make that cluster grow with every insert, and the
// merge quadratic.
func (op *slicedWindowOp[K, T, ACC, OUT]) merge(dst *hashtable.Table[K, ACC], bk *bucket[K, ACC]) {
	dst.Reserve(bk.tab.Len() + len(bk.added))
	if c := bk.tab.Cap(); dst.Cap() < c {
		dst.Reserve(hashtable.Holds(c) - dst.Len())
	}
	if mergeRoom != nil {
		mergeRoom(dst, bk.tab.Len()+len(bk.added), bk.tab.Cap())
	}
	type pend struct {
		h   uint64
		k   K
		acc *ACC
	}
	var ring [mergeAhead]pend
	n := 0
	upsert := func(e *pend) {
		p, _ := dst.Upsert(e.h, e.k)
		*(*int64)(unsafe.Pointer(p)) += *(*int64)(unsafe.Pointer(e.acc)) // Count's Merge; an insert starts at 0
	}
	add := func(h uint64, k K, acc *ACC) {
		c, sl := dst.Home(h)
		prefetch.Two(c, sl)
		e := &ring[n%mergeAhead]
		if n >= mergeAhead {
			upsert(e)
		}
		*e = pend{h, k, acc}
		n++
	}
	if d := bk.delta; d != nil {
		bk.tab.AllPrefetch(func(h uint64, k K, acc *ACC) bool {
			if v := d.Get(h, k); v != nil {
				acc = v
			}
			add(h, k, acc)
			return true
		})
		for _, a := range bk.added {
			add(a.hash, a.key, d.Get(a.hash, a.key))
		}
	} else {
		bk.tab.AllPrefetch(func(h uint64, k K, acc *ACC) bool {
			add(h, k, acc)
			return true
		})
	}
	for i := max(0, n-mergeAhead); i < n; i++ {
		upsert(&ring[i%mergeAhead])
	}
}

// advance moves the input watermark to w and fires every window whose
// end-1 it reached, in order of end, each from its merged table. Results
// carry the previous watermark, as the aligned operator's.
func (op *slicedWindowOp[K, T, ACC, OUT]) advance(w int64) error {
	prev := op.wm
	op.wm = w
	if w < op.nextFire {
		return nil
	}
	if trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "window-fire").End()
	}
	for op.nextFire <= w && op.nextFire != watermark.Max {
		fired := op.nextFire
		if nx := op.next; nx == nil || nx.end-1 != fired {
			op.seed(fired + 1)
		}
		nx := op.next
		if err := op.fire(nx, prev); err != nil {
			return err
		}
		op.lastLen = nx.tab.Len()
		if err := op.flush(prev); err != nil {
			return err
		}
		nx.tab.Reset()
		op.next = nil
		// The next merged table is made a quarter slide later (or at the
		// next firing, if that comes first): the merge is the longest
		// stretch of work after a firing, and right after it the other
		// subtasks are still firing the same window, on the same cores.
		op.seedAt = fired + max(op.w.slide/4, 1)
		// The buckets no window after fired holds leave.
		n := 0
		for _, bk := range op.buckets {
			last := bk.end // a restored window's end
			if op.isSlice(bk) {
				last = bk.start + op.w.size
				op.sliceLen = max(op.sliceLen, bk.tab.Len()+len(bk.added))
			}
			if last-1 > fired {
				op.buckets[n] = bk
				n++
				continue
			}
			if op.cache == bk {
				op.cache = nil
			}
			op.releaseSlice(bk)
		}
		clear(op.buckets[n:])
		op.buckets = op.buckets[:n]
		op.nextFire = op.nextAfter(fired)
	}
	return nil
}

// releaseSlice is release, and gives the slice's encoder back.
func (op *slicedWindowOp[K, T, ACC, OUT]) releaseSlice(bk *bucket[K, ACC]) {
	op.release(bk)
	if bk.enc != nil {
		if len(op.encFree) <= int(op.w.size/op.w.slide) {
			op.encFree = append(op.encFree, bk.enc)
		}
		bk.enc, bk.encGroups, bk.encOK = nil, nil, false
	}
}

// ---- snapshots ----

// unshareSliced is unshare, after which each slice encoded by the last
// snapshot and not written since keeps the encoding for the next.
func (op *slicedWindowOp[K, T, ACC, OUT]) unshareSliced() {
	for i := range op.pending {
		p := &op.pending[i]
		if bk := p.bk; bk != nil && bk.encPending && bk.enc == p.w {
			bk.encPending = false
			bk.encOK = !bk.dirty && p.groups != nil // groups: encoded (an aborted checkpoint's never is)
			if bk.encOK {
				bk.encGroups = p.groups
			}
		}
	}
	clear(op.pending)
	op.pending = op.pending[:0]
	op.unshare()
}

func (op *slicedWindowOp[K, T, ACC, OUT]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if !op.async {
		return op.alignedWindowOp.barrier(b, s)
	}
	if trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "window-barrier").End()
	}
	c := &op.cow
	if c.sharing {
		op.unshareSliced() // the previous snapshot's encoding is over or will never run
	}
	if !op.binary() {
		return op.alignedWindowOp.barrierDeferred(b, s) // encoded whole each time
	}
	maxP, g := op.info.maxP, &op.snap
	c.seq++
	seq := c.seq
	// The list is the coordinator's until the encoding is done: a new one
	// each checkpoint (a few entries).
	snap := make([]sliceSnap[K, ACC], 0, len(op.buckets))
	for _, bk := range op.buckets {
		if bk.encOK && !bk.dirty {
			snap = append(snap, sliceSnap[K, ACC]{groups: bk.encGroups})
			op.reused++
			continue
		}
		if bk.enc == nil {
			if n := len(op.encFree); n > 0 {
				bk.enc = op.encFree[n-1]
				op.encFree = op.encFree[:n-1]
			} else {
				bk.enc = &codec.GroupWriter[alignedEntry[K, ACC]]{Reuse: true}
			}
		}
		bk.shared, bk.dirty, bk.encOK, bk.encPending = true, false, false, true
		bk.encGroups = nil
		snap = append(snap, sliceSnap[K, ACC]{bk: bk, w: bk.enc, view: bucket[K, ACC]{start: bk.start, end: bk.end, tab: bk.tab}})
		c.sharing = true
	}
	op.pending = snap
	wm, info := op.wm, op.info
	s.Deferred = append(s.Deferred, func() (opState, error) {
		if trace.IsEnabled() {
			defer trace.StartRegion(context.Background(), "deferred-encode").End()
		}
		parts := make([]map[int][]byte, len(snap))
		n, t0 := 0, time.Now()
		var err error
		for i := range snap {
			p := &snap[i]
			if p.w == nil {
				parts[i] = p.groups
				continue
			}
			w := p.w
			if trace.IsEnabled() {
				trace.Log(context.Background(), "slice-encode", fmt.Sprintf("[%d, %d) %d keys", p.view.start, p.view.end, p.view.tab.Len()))
			}
			w.Start(int(maxP))
			var e alignedEntry[K, ACC]
			e.Start, e.End = p.view.start, p.view.end
			p.view.tab.AllPrefetch(func(h uint64, k K, acc *ACC) bool {
				if n++; n == restEvery {
					time.Sleep(time.Since(t0) * encodeRest) // as deferEncode rests
					n, t0 = 0, time.Now()
				}
				e.Hash, e.Key, e.Acc = h, k, *acc
				w.Add(int(h%maxP), &e)
				return true
			})
			if parts[i], err = w.Finish(); err != nil {
				break
			}
			p.groups = parts[i]
		}
		var groups map[int][]byte
		if err == nil {
			g.Reuse = true // as deferEncode's: read before the next checkpoint's encoding
			g.Start(int(maxP))
			groups, err = g.Join(parts)
		}
		// The tables are the task's again once it sees this.
		c.done.Store(seq)
		if err != nil {
			return opState{}, fmt.Errorf("weir: snapshot of %s: %w", info.name, err)
		}
		st := info.state(wm)
		st.Groups = groups
		return st, nil
	})
	return op.winOut.forwardBarrier(b, s)
}

// binary reports whether the entries are written in the group format,
// which Join needs (else each checkpoint encodes every bucket).
func (op *slicedWindowOp[K, T, ACC, OUT]) binary() bool {
	if op.bin == 0 {
		var probe codec.GroupWriter[alignedEntry[K, ACC]]
		probe.Start(1)
		op.bin = 2
		if probe.Binary() {
			op.bin = 1
		}
	}
	return op.bin == 1
}

// restore puts each entry in its bucket: a slice, or a window of the
// aligned operator's snapshot.
func (op *slicedWindowOp[K, T, ACC, OUT]) restore(wm int64, groups [][]byte) error {
	op.wm, op.sentWM = wm, wm
	err := codec.EachEntry(groups, func(e alignedEntry[K, ACC]) {
		p, _ := op.find(e.Start, e.End, true).tab.Upsert(e.Hash, e.Key)
		*p = e.Acc
	})
	op.schedule()
	return err
}
