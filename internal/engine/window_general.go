package engine

import (
	"context"
	"reflect"
	"runtime/trace"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/pq"
	"github.com/weirstream/weir/internal/prefetch"
	"github.com/weirstream/weir/internal/watermark"
)

// genWindowOp is the general keyed window operator (Flink's WindowOperator):
// any window kind (including merging sessions and the global window), any
// trigger, allowed lateness, accumulating or retracting results, late
// events to a side output. State is per key: a short list of windows with
// an accumulator each.
//
// Event-time timers are one per key (as for Sliding windows): each window
// has a fire timer (end-1) and a cleanup timer (end-1+lateness), ordered
// (time, kind, seq of the window); the heap holds, per key, an entry at
// the smallest pending one of its windows. A session that grows does not
// push again (its timers only move later); an entry that no longer
// matches its key's schedule is skipped when popped, one that became early
// is pushed again at the key's next timer. Timers pop in the same order as
// with a timer per window. A session merged with an event's window reuses
// the memory of a window it absorbs, so growing sessions allocate nothing
// (findWin). Processing-time timers are per window and lazy:
// a popped timer whose window no longer exists is ignored.
//
// R is the output record type; render turns a firing into records.
type genWindowOp[K comparable, T, ACC, OUT, R any] struct {
	winOut[K, T, R]
	w        Windows
	agg      AggregateFunction[T, ACC, OUT]
	trig     WindowTrigger
	lateness int64
	retract  bool
	render   func(emit func(R), key K, w *gwin[ACC, OUT], kind ChangeKind, v OUT) error
	now      func() int64

	// keys maps a key to its state in arena (an index: the table holds
	// no pointer, window_keys.go).
	keys    *hashtable.Table[K, int32]
	arena   keyArena[K, ACC, OUT]
	etimers pq.Heap[ktimer]
	// lists[ks.more-1] is the windows of a key ks whose windows are not
	// just its inline first (winsOf); freeLists is the unused indexes,
	// whose arrays are kept for the next key that needs one. one is
	// winsOf's list of a key's inline window.
	lists     [][]*gwin[ACC, OUT]
	freeLists []int32
	one       [1]*gwin[ACC, OUT]
	// Tumbling and hopping windows: event-time timers in FIFO queues
	// instead of etimers (window_fixed_timers.go).
	isFixed bool
	fixed   fixedTimers[K, ACC, OUT]
	// accElem is the size of an accumulator's elements when ACC is a
	// slice (the collected events of CoGroup and ProcessWindow), else 0:
	// a firing prefetches them (prefetchFire).
	accElem uintptr
	ptimers pq.Heap[gtimer[K]]
	seq     uint64

	wm     int64 // input watermark
	emitWM int64 // watermark carried by records emitted now
	emitFn func(R)
	info   opInfo
	outTS  int64 // timestamp of records emitted now
	err    error
	snap   codec.GroupWriter[genEntry[K, ACC, OUT]]
	async  bool // keys, accumulators and results are shareable: barrierDeferred
	ident  bool // agg says IdentityResult: a result is a copy of its accumulator
	// barrierDeferred's list of the keys' slots and its copy of the keys
	// and their windows, reused; the copy in progress (snapshot_async.go):
	// epoch counts the deferred barriers, snapKeys[copyPos:] is what the
	// copy has still to look at, and copying is closed when it is done.
	snapKeys []int32
	snapCopy []genKeyCopy[K]
	snapWins []genWinEntry[ACC, OUT]
	epoch    uint64
	copyPos  int
	copying  *genCopy[K, ACC, OUT]
	// stopped is closed when the task stops (nil in unit tests): a
	// deferred encoding waiting for the copy gives up then.
	stopped <-chan struct{}
	// noPrefetch walks keys without asking for their memory ahead (a
	// firing's prefetchFire, the barrier's prefetchKeyCopy): set only by
	// the benchmarks and tests that measure what the prefetching is worth.
	noPrefetch bool
}

// gkey is one key's open windows.
//
// Its first window lives in the gkey itself (newKey, newWin): walking the
// keys (a barrier's copy, firing) then reads one object per key instead of
// scattered ones. A barrier's copy of a state whose keys are mostly in one
// window (Nexmark q8: CoGroup, tumbling windows) is otherwise bound by
// those cache misses.
//
// A gkey holds no pointer of its own: a key whose only window is the
// inline one (firstLive) needs nothing else, and the list of a key with
// other windows is the operator's (more, winsOf). With a key, accumulator
// and result without pointers (Nexmark q11: int64 bidders, counts), the
// gkeys are then memory the garbage collector does not read: a query's
// open keys can be most of its heap, and scanning them would slow the rows
// processed during each mark phase. The gkeys live in the
// operator's arena (window_keys.go), named by slot, so that nothing that
// lists the keys (the table, the timers) holds a pointer either.
type gkey[K comparable, ACC, OUT any] struct {
	key  K
	hash uint64
	// The key's entry in the event-time heap, if hasTimer.
	timer    tkey
	hasTimer bool
	// firstUsed: first has held a window. It is never reused for another
	// while the key lives (a timer queue may still point to it after its
	// window went; once the key went, the slot's generation voids that).
	firstUsed bool
	// firstLive: first is the key's only window (more is 0).
	firstLive bool
	// more is 1 + the index of the key's window list in the operator's
	// lists, or 0 if the key's windows are just first (firstLive) or none.
	more int32
	// ref is the state's slot in the operator's arena and the slot's
	// generation, which counts the keys that held it before
	// (keyArena.release): a timer queued for one of them is not taken for
	// the key holding it now.
	ref keyRef
	// epoch is the operator's epoch when the key was created or its state
	// was last copied for a deferred snapshot: a key whose epoch is
	// behind the operator's is still to be copied (copyKey) before
	// anything changes it.
	epoch uint64
	first gwin[ACC, OUT]
}

// newKey returns a key's state with no windows, which the snapshot of the
// current epoch (if one is being copied) does not hold, and adds it to the
// table.
func (op *genWindowOp[K, T, ACC, OUT, R]) newKey(key K, hash uint64) *gkey[K, ACC, OUT] {
	ks := op.arena.alloc()
	ks.key, ks.hash, ks.epoch = key, hash, op.epoch
	p, _ := op.keys.Upsert(hash, key)
	*p = ks.ref.id
	return ks
}

// deleteKey removes ks, which has no window left, from the table and
// gives its slot back to the arena.
func (op *genWindowOp[K, T, ACC, OUT, R]) deleteKey(ks *gkey[K, ACC, OUT]) {
	op.keys.Delete(ks.hash, ks.key)
	op.arena.release(ks, op.epoch)
}

// hasWins reports whether ks has a window.
func (ks *gkey[K, ACC, OUT]) hasWins() bool { return ks.firstLive || ks.more != 0 }

// winsOf is the windows of ks, in the order they were added (the order of
// merges and of the snapshot's entries). Changes go through setWins or
// appendWin; the list of a key with only its inline window is op.one, good
// until the next call.
func (op *genWindowOp[K, T, ACC, OUT, R]) winsOf(ks *gkey[K, ACC, OUT]) []*gwin[ACC, OUT] {
	if ks.more != 0 {
		return op.lists[ks.more-1]
	}
	if ks.firstLive {
		op.one[0] = &ks.first
		return op.one[:1:1]
	}
	return nil
}

// setWins makes ws (which may be winsOf(ks), changed in place) the windows
// of ks.
func (op *genWindowOp[K, T, ACC, OUT, R]) setWins(ks *gkey[K, ACC, OUT], ws []*gwin[ACC, OUT]) {
	if len(ws) == 0 || len(ws) == 1 && ws[0] == &ks.first {
		ks.firstLive = len(ws) == 1
		if ks.more != 0 {
			i := ks.more - 1
			clear(op.lists[i]) // a list kept for reuse holds no window
			op.lists[i] = op.lists[i][:0]
			op.freeLists = append(op.freeLists, i)
			ks.more = 0
		}
		return
	}
	i := op.listOf(ks)
	old := len(op.lists[i])
	l := append(op.lists[i][:0], ws...) // ws may be this list, shortened
	if old > len(l) {
		clear(l[len(l):old]) // the windows it no longer holds
	}
	op.lists[i] = l
}

// appendWin adds w to the windows of ks.
func (op *genWindowOp[K, T, ACC, OUT, R]) appendWin(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT]) {
	if w == &ks.first && ks.more == 0 && !ks.firstLive {
		ks.firstLive = true
		return
	}
	i := op.listOf(ks)
	op.lists[i] = append(op.lists[i], w)
}

// listOf gives ks a window list if it has none (with its inline window, if
// live) and returns its index.
func (op *genWindowOp[K, T, ACC, OUT, R]) listOf(ks *gkey[K, ACC, OUT]) int32 {
	if ks.more != 0 {
		return ks.more - 1
	}
	var i int32
	if n := len(op.freeLists); n > 0 {
		i, op.freeLists = op.freeLists[n-1], op.freeLists[:n-1]
	} else {
		i = int32(len(op.lists))
		op.lists = append(op.lists, make([]*gwin[ACC, OUT], 0, 2))
	}
	if ks.firstLive {
		op.lists[i] = append(op.lists[i], &ks.first)
		ks.firstLive = false
	}
	ks.more = i + 1
	return i
}

// newWin returns storage for a new window of ks: its inline window the
// first time, else a new one.
func (ks *gkey[K, ACC, OUT]) newWin() *gwin[ACC, OUT] {
	if !ks.firstUsed {
		ks.firstUsed = true
		return &ks.first
	}
	return new(gwin[ACC, OUT])
}

// gwin is one window of one key.
//
// Its flags are together at the end (seven bytes instead of three padded
// words): a key's state with its inline window is 120 bytes for Nexmark
// q11, within two cache lines.
type gwin[ACC, OUT any] struct {
	start, end int64
	acc        ACC
	count      int64  // events since the last firing (CountTrigger)
	last       OUT    // the result last emitted, to retract it
	seq        uint64 // orders the window's event-time timers (not stored)
	fired      bool   // a result of this pane was emitted
	dirty      bool   // changed since the last firing
	early      bool   // an early-firing timer is pending
	lateTimer  bool   // a late-firing timer is pending
	procTimer  bool   // a processing-time firing timer is pending
	fireDone   bool   // the event-time fire timer ran (not stored)
	gone       bool   // removed from its key (its queued timers are void)
}

type timerKind uint8

const (
	tFire    timerKind = iota // event time: end-1 reached
	tCleanup                  // event time: end-1+lateness reached
	tProcFire
	tEarly
	tLate
)

type gtimer[K comparable] struct {
	at         int64
	kind       timerKind
	seq        uint64
	hash       uint64
	key        K
	start, end int64
}

// tkey orders event-time timers: time, then kind, then window seq.
type tkey struct {
	at   int64
	kind timerKind
	seq  uint64
}

func (a tkey) less(b tkey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind // fire before cleanup at the same time
	}
	return a.seq < b.seq
}

// ktimer is a key's entry in the event-time heap: the key's state by its
// arena slot and the slot's generation (no pointer: the heap, one entry
// per open key, is not for the garbage collector to read).
type ktimer struct {
	tkey
	ref keyRef
}

func (a ktimer) Less(b ktimer) bool { return a.tkey.less(b.tkey) }

func (a gtimer[K]) Less(b gtimer[K]) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	if a.kind != b.kind {
		return a.kind < b.kind // fire before cleanup at the same time
	}
	return a.seq < b.seq
}

func (op *genWindowOp[K, T, ACC, OUT, R]) init() {
	op.keys = hashtable.New[K, int32](64)
	op.isFixed = op.w.kind == tumblingWindows || op.w.kind == hoppingWindows
	if t := reflect.TypeFor[ACC](); t.Kind() == reflect.Slice {
		op.accElem = t.Elem().Size()
	}
	op.wm, op.emitWM, op.sentWM = watermark.Min, watermark.Min, watermark.Min
	op.emitFn = func(r R) {
		if err := op.add(r, op.outTS, op.emitWM); err != nil && op.err == nil {
			op.err = err
		}
	}
}

func (op *genWindowOp[K, T, ACC, OUT, R]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	// Ask for the table slot of the key pfKeys records ahead: a table of
	// many keys (Nexmark q11: ~400 K open sessions a subtask) is larger
	// than the caches, and each record's lookup waited for its slot.
	pf := !op.noPrefetch && op.keys.Len() >= pfTableKeys
	for i := range b.data {
		if pf && i+pfKeys < len(b.data) {
			prefetch.Two(op.keys.Home(b.data[i+pfKeys].hash))
		}
		if w := b.wm[i]; w > op.wm {
			if err := op.advance(w); err != nil {
				return err
			}
		}
		r := &b.data[i]
		if err := op.element(r, b.ts[i]); err != nil {
			return err
		}
	}
	if b.watermark > op.wm {
		if err := op.advance(b.watermark); err != nil {
			return err
		}
	}
	return op.endBatch(op.wm, b.idle)
}

// pfTableKeys is the number of keys from which push prefetches table
// slots: below it the table fits the caches.
const pfTableKeys = 1 << 14

// windowsOf lists the windows an event at ts belongs to, latest first
// (sessions: its own [ts, ts+gap) before merging).
func (op *genWindowOp[K, T, ACC, OUT, R]) windowsOf(ts int64, dst [][2]int64) [][2]int64 {
	switch op.w.kind {
	case sessionWindows:
		return append(dst, [2]int64{ts, ts + op.w.size})
	case globalWindows:
		return append(dst, [2]int64{watermark.Min, watermark.Max})
	}
	for s := op.w.lastStart(ts); s > ts-op.w.size; s -= op.w.slide {
		dst = append(dst, [2]int64{s, s + op.w.size})
	}
	return dst
}

func (op *genWindowOp[K, T, ACC, OUT, R]) isLate(end int64) bool {
	if end == watermark.Max {
		return false // the global window is never late
	}
	return end-1+op.lateness <= op.wm
}

func (op *genWindowOp[K, T, ACC, OUT, R]) element(r *keyed[K, T], ts int64) error {
	var buf [8][2]int64
	wins := op.windowsOf(ts, buf[:0])
	var ks *gkey[K, ACC, OUT]
	if p := op.keys.Get(r.hash, r.key); p != nil {
		ks = op.arena.at(*p)
		op.own(ks)
	}
	accepted := false
	for _, se := range wins {
		start, end := se[0], se[1]
		var merged []*gwin[ACC, OUT]
		if op.w.kind == sessionWindows && ks != nil {
			// Windows that overlap or touch [start, end) merge with it.
			for _, w := range op.winsOf(ks) {
				if w.start <= end && start <= w.end {
					merged = append(merged, w)
					start, end = min(start, w.start), max(end, w.end)
				}
			}
		}
		if op.isLate(end) {
			continue
		}
		if ks == nil {
			ks = op.newKey(r.key, r.hash)
		}
		w := op.findWin(ks, start, end, merged)
		w.acc = op.agg.Add(w.acc, r.val)
		w.dirty = true
		w.count++
		accepted = true
		if err := op.onElement(ks, w); err != nil {
			return err
		}
	}
	if !accepted {
		var start, end int64
		if len(wins) > 0 {
			start, end = wins[0][0], wins[0][1]
		}
		op.dropLate(r, ts, start, end, op.wm)
	}
	return nil
}

// findWin returns the window [start, end) of ks, creating it, or merging
// the given windows into it (retracting results they emitted).
func (op *genWindowOp[K, T, ACC, OUT, R]) findWin(ks *gkey[K, ACC, OUT], start, end int64, merged []*gwin[ACC, OUT]) *gwin[ACC, OUT] {
	if len(merged) == 1 && merged[0].start == start && merged[0].end == end {
		return merged[0]
	}
	if merged == nil {
		for _, w := range op.winsOf(ks) {
			if w.start == start && w.end == end {
				return w
			}
		}
	}
	if len(merged) == 0 {
		nw := ks.newWin()
		*nw = gwin[ACC, OUT]{start: start, end: end, acc: op.agg.Create()}
		op.appendWin(ks, nw)
		op.addWin(ks, nw)
		return nw
	}
	ws := op.winsOf(ks)
	keep := ws[:0]
	for _, w := range ws {
		isMerged := false
		for _, m := range merged {
			if m == w {
				isMerged = true
			}
		}
		if !isMerged {
			keep = append(keep, w)
		}
	}
	op.setWins(ks, keep)
	acc, count, dirty := op.agg.Create(), int64(0), false
	for _, m := range merged {
		acc = op.agg.Merge(acc, m.acc)
		count += m.count
		if m.fired {
			// The merged session replaces a result already emitted.
			op.outTS = m.end - 1
			op.renderKind(ks.key, m, Delete, m.last)
		}
		dirty = dirty || m.dirty || m.fired
	}
	// The merged session takes the memory of the first window it absorbs,
	// once every merged window has been read, instead of a new allocation:
	// a session that grows by an event is a merge, so allocating here would
	// be a session query's main source of garbage. Nothing else points to a
	// session window: its event-time timers are the key's (etimers),
	// processing-time timers find windows by bounds, and only tumbling and
	// hopping windows, which never merge, are queued by pointer
	// (window_fixed_timers.go).
	nw := merged[0]
	*nw = gwin[ACC, OUT]{start: start, end: end, acc: acc, count: count, dirty: dirty}
	op.appendWin(ks, nw)
	op.addWin(ks, nw)
	return nw
}

// addWin gives a new window of ks its event-time timers.
func (op *genWindowOp[K, T, ACC, OUT, R]) addWin(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT]) {
	op.seq++
	w.seq = op.seq
	if t, ok := op.winTimer(w); ok {
		if op.isFixed {
			op.fixed.add(ks, w, t)
			return
		}
		op.schedule(ks, t)
	}
}

// winTimer is w's next pending event-time timer.
func (op *genWindowOp[K, T, ACC, OUT, R]) winTimer(w *gwin[ACC, OUT]) (tkey, bool) {
	if op.trig.kind == eventTimeTrigger && !w.fireDone {
		return tkey{w.end - 1, tFire, w.seq}, true
	}
	if w.end != watermark.Max {
		return tkey{w.end - 1 + op.lateness, tCleanup, w.seq}, true
	}
	return tkey{}, false
}

// nextTimer is the first pending event-time timer of ks's windows.
func (op *genWindowOp[K, T, ACC, OUT, R]) nextTimer(ks *gkey[K, ACC, OUT]) (*gwin[ACC, OUT], tkey) {
	var first *gwin[ACC, OUT]
	var ft tkey
	for _, w := range op.winsOf(ks) {
		if t, ok := op.winTimer(w); ok && (first == nil || t.less(ft)) {
			first, ft = w, t
		}
	}
	return first, ft
}

// schedule makes sure ks has a heap entry no later than t.
func (op *genWindowOp[K, T, ACC, OUT, R]) schedule(ks *gkey[K, ACC, OUT], t tkey) {
	if ks.hasTimer && !t.less(ks.timer) {
		return
	}
	ks.timer, ks.hasTimer = t, true
	op.etimers.Push(ktimer{t, ks.ref})
}

// onElement runs the trigger after an event was added to w.
func (op *genWindowOp[K, T, ACC, OUT, R]) onElement(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT]) error {
	switch op.trig.kind {
	case eventTimeTrigger:
		if w.end != watermark.Max && w.end-1 <= op.wm {
			// Late but within the allowed lateness: a late firing.
			if op.trig.late == 0 {
				return op.fire(ks, w)
			}
			if !w.lateTimer {
				w.lateTimer = true
				op.procTimer(ks, w, tLate, op.now()+op.trig.late)
			}
			return nil
		}
		if op.trig.early > 0 && !w.early {
			w.early = true
			op.procTimer(ks, w, tEarly, op.now()+op.trig.early)
		}
	case processingTimeTrigger:
		if !w.procTimer {
			w.procTimer = true
			op.procTimer(ks, w, tProcFire, w.end-1)
		}
	case countTrigger:
		if w.count >= op.trig.count {
			return op.fire(ks, w)
		}
	}
	return nil
}

func (op *genWindowOp[K, T, ACC, OUT, R]) procTimer(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT], kind timerKind, at int64) {
	op.seq++
	op.ptimers.Push(gtimer[K]{at: at, kind: kind, seq: op.seq, hash: ks.hash, key: ks.key, start: w.start, end: w.end})
}

// fire emits w's result: Insert the first time in a pane, then
// UpdateAfter (accumulating) or UpdateBefore+UpdateAfter (retracting).
func (op *genWindowOp[K, T, ACC, OUT, R]) fire(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT]) error {
	op.own(ks)
	if !w.dirty {
		return nil
	}
	v := resultOf(op.agg, op.ident, &w.acc)
	op.outTS = w.end - 1 // Flink stamps window results with window.maxTimestamp()
	if !w.fired {
		op.renderKind(ks.key, w, Insert, v)
	} else {
		if op.retract {
			op.renderKind(ks.key, w, UpdateBefore, w.last)
		}
		op.renderKind(ks.key, w, UpdateAfter, v)
	}
	w.last, w.fired, w.dirty, w.count = v, true, false, 0
	if op.trig.purge {
		w.acc = op.agg.Create()
		w.fired = false
		w.procTimer = false
	}
	return op.err
}

func (op *genWindowOp[K, T, ACC, OUT, R]) renderKind(key K, w *gwin[ACC, OUT], kind ChangeKind, v OUT) {
	if op.err != nil {
		return
	}
	if err := op.render(op.emitFn, key, w, kind, v); err != nil && op.err == nil {
		op.err = err
	}
}

// lookup finds the live window a timer refers to.
func (op *genWindowOp[K, T, ACC, OUT, R]) lookup(t *gtimer[K]) (*gkey[K, ACC, OUT], *gwin[ACC, OUT]) {
	p := op.keys.Get(t.hash, t.key)
	if p == nil {
		return nil, nil
	}
	ks := op.arena.at(*p)
	for _, w := range op.winsOf(ks) {
		if w.start == t.start && w.end == t.end {
			return ks, w
		}
	}
	return ks, nil
}

func (op *genWindowOp[K, T, ACC, OUT, R]) remove(ks *gkey[K, ACC, OUT], w *gwin[ACC, OUT]) {
	op.own(ks)
	w.gone = true
	ws := op.winsOf(ks)
	for i, x := range ws {
		if x == w {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	op.setWins(ks, ws)
	if len(ws) == 0 {
		op.deleteKey(ks)
	}
}

// advance moves the watermark and runs the event-time timers it passed.
func (op *genWindowOp[K, T, ACC, OUT, R]) advance(wm int64) error {
	op.emitWM = op.wm
	op.wm = wm
	if trace.IsEnabled() && (op.etimers.Len() > 0 && op.etimers.Peek().at <= wm || op.fixed.due(wm)) {
		defer trace.StartRegion(context.Background(), "window-fire").End()
	}
	if err := op.advanceFixed(wm); err != nil {
		return err
	}
	for op.etimers.Len() > 0 && op.etimers.Peek().at <= wm {
		t := op.etimers.Pop()
		ks := op.arena.live(t.ref)
		if ks == nil || !ks.hasTimer || ks.timer != t.tkey {
			continue // superseded by an earlier entry of the key, or the key went
		}
		ks.hasTimer = false
		w, next := op.nextTimer(ks)
		if w == nil {
			continue // the key's windows are gone
		}
		if next != t.tkey {
			op.schedule(ks, next) // the window it was for merged or went
			continue
		}
		switch t.kind {
		case tFire:
			w.fireDone = true
			if err := op.fire(ks, w); err != nil {
				return err
			}
		case tCleanup:
			if w.dirty {
				// Whatever the trigger, a window's pending events are never
				// discarded silently: they fire when the window is cleaned up
				// (Flink drops them for count and processing-time triggers).
				if err := op.fire(ks, w); err != nil {
					return err
				}
			}
			op.remove(ks, w)
		}
		if ks.hasWins() {
			if w, next := op.nextTimer(ks); w != nil {
				op.schedule(ks, next)
			}
		}
	}
	if wm == watermark.Max {
		// The global window has no cleanup timer: fire what is pending.
		var pending []*gkey[K, ACC, OUT]
		op.keys.All(func(_ uint64, _ K, p *int32) bool {
			pending = append(pending, op.arena.at(*p))
			return true
		})
		for _, ks := range pending {
			for _, w := range append([]*gwin[ACC, OUT](nil), op.winsOf(ks)...) {
				if err := op.fire(ks, w); err != nil {
					return err
				}
				op.remove(ks, w)
			}
		}
	}
	op.emitWM = wm
	return op.err
}

func (op *genWindowOp[K, T, ACC, OUT, R]) nextProcessingTime() int64 {
	if op.copying != nil {
		return watermark.Min // the task loop goes on with the copy at once
	}
	if op.ptimers.Len() == 0 {
		return watermark.Max
	}
	return op.ptimers.Peek().at
}

func (op *genWindowOp[K, T, ACC, OUT, R]) onProcessingTime(now int64) error {
	if op.copying != nil {
		op.copySome(copyStep)
	}
	op.emitWM = op.wm
	for op.ptimers.Len() > 0 && op.ptimers.Peek().at <= now {
		t := op.ptimers.Pop()
		ks, w := op.lookup(&t)
		if w == nil {
			continue
		}
		op.own(ks) // the timer's flags below are in the snapshot
		switch t.kind {
		case tProcFire:
			w.procTimer = false
			if err := op.fire(ks, w); err != nil {
				return err
			}
			if op.trig.purge && op.w.kind != globalWindows {
				op.remove(ks, w)
			}
		case tEarly:
			w.early = false
			if w.end-1 <= op.wm {
				continue // the on-time firing happened
			}
			// The next event schedules the next early firing.
			if err := op.fire(ks, w); err != nil {
				return err
			}
		case tLate:
			w.lateTimer = false
			if err := op.fire(ks, w); err != nil {
				return err
			}
		}
	}
	return op.endBatch(op.wm, op.idle)
}

// ---- snapshots ----

type genEntry[K comparable, ACC, OUT any] struct {
	Hash uint64
	Key  K
	Wins []genWinEntry[ACC, OUT]
}

// genKeyCopy is a key in barrierDeferred's copy: its windows are
// snapWins[from:to]. It holds no pointer (unless K does), unlike the
// genEntry it is encoded as, whose Wins would point into snapWins: the
// copy stays allocated between checkpoints, and the garbage collector
// would follow one pointer per key of it at every cycle.
type genKeyCopy[K comparable] struct {
	hash     uint64
	key      K
	from, to uint32
}

// entry is w as the snapshot stores it.
func (w *gwin[ACC, OUT]) entry() genWinEntry[ACC, OUT] {
	return genWinEntry[ACC, OUT]{w.start, w.end, w.acc, w.count, w.fired, w.dirty, w.last, w.early, w.lateTimer, w.procTimer}
}

type genWinEntry[ACC, OUT any] struct {
	Start, End                  int64
	Acc                         ACC
	Count                       int64
	Fired, Dirty                bool
	Last                        OUT
	Early, LateTimer, ProcTimer bool
}

func (op *genWindowOp[K, T, ACC, OUT, R]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if trace.IsEnabled() {
		// The task stops for this region: what a checkpoint costs its input.
		defer trace.StartRegion(context.Background(), "window-barrier").End()
	}
	if op.async {
		return op.barrierDeferred(b, s)
	}
	g := &op.snap
	g.Start(int(op.info.maxP))
	var e genEntry[K, ACC, OUT]
	op.keys.All(func(h uint64, _ K, p *int32) bool {
		ks := op.arena.at(*p)
		e.Hash, e.Key, e.Wins = ks.hash, ks.key, op.appendEntries(reuse(g, e.Wins), ks)
		g.Add(int(h%op.info.maxP), &e)
		return true
	})
	if err := addKeyedState(s, op.info, op.wm, g); err != nil {
		return err
	}
	clear(e.Wins[:cap(e.Wins)]) // drop the last references to accumulators
	return op.winOut.forwardBarrier(b, s)
}

// restore rebuilds the windows and derives their timers again: timers are
// a function of the windows, the trigger and the clock, so they are not
// stored.
func (op *genWindowOp[K, T, ACC, OUT, R]) restore(wm int64, groups [][]byte) error {
	op.wm, op.emitWM, op.sentWM = wm, wm, wm
	now := op.now()
	return codec.EachEntry(groups, func(e genEntry[K, ACC, OUT]) {
		ks := op.newKey(e.Key, e.Hash)
		for _, we := range e.Wins {
			w := ks.newWin()
			*w = gwin[ACC, OUT]{start: we.Start, end: we.End, acc: we.Acc, count: we.Count, fired: we.Fired,
				dirty: we.Dirty, last: we.Last, early: we.Early, lateTimer: we.LateTimer, procTimer: we.ProcTimer}
			op.appendWin(ks, w)
			op.addWin(ks, w)
			if w.early {
				op.procTimer(ks, w, tEarly, now+op.trig.early)
			}
			if w.lateTimer {
				op.procTimer(ks, w, tLate, now+op.trig.late)
			}
			if w.procTimer {
				op.procTimer(ks, w, tProcFire, w.end-1)
			}
		}
	})
}
