package engine

import (
	"context"
	"fmt"
	"reflect"
	"runtime/trace"
	"time"
	"unsafe"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/hashtable"
	"github.com/weirstream/weir/internal/watermark"
)

// Aggregate aggregates each window per key with agg and emits one
// WindowResult per key and window when the watermark passes the window's
// end. Events that arrive after their window fired are dropped and counted
// in late_records_dropped_total.
//
// On PebbleState, the windows and their timers are keyed state in Pebble
// (see PebbleState); the key and accumulator types (with another trigger
// or Global windows, the result type too; Sliding windows: the input type
// instead of the accumulator's) must then be encodable.
func Aggregate[K comparable, T, ACC, OUT any](ws *WindowedStream[K, T], agg AggregateFunction[T, ACC, OUT], opts ...WindowOption) *Stream[WindowResult[K, OUT]] {
	render := func(emit func(WindowResult[K, OUT]), key K, w *gwin[ACC, OUT], kind ChangeKind, v OUT) error {
		emit(WindowResult[K, OUT]{Key: key, Start: time.UnixMilli(w.start).UTC(), End: time.UnixMilli(w.end).UTC(), Value: v, Kind: kind})
		return nil
	}
	return windowOperator(ws, "window", agg, render, true, opts)
}

// windowOperator adds a window node. The aligned operator serves the common
// case (tumbling or hopping, event-time trigger, no lateness); everything
// else goes to the general operator.
func windowOperator[K comparable, T, ACC, OUT, R any](ws *WindowedStream[K, T], kind string, agg AggregateFunction[T, ACC, OUT],
	render func(func(R), K, *gwin[ACC, OUT], ChangeKind, OUT) error, results bool, opts []WindowOption) *Stream[R] {
	j := ws.ks.src.job
	cfg := ws.cfg
	applyWindowOptions(&cfg, opts)
	trig := EventTimeTrigger()
	if cfg.trigger != nil {
		trig = *cfg.trigger
	}
	if err := trig.validate(); err != nil {
		j.fail(err)
	}
	if cfg.lateness < 0 {
		j.fail(fmt.Errorf("weir: AllowedLateness must not be negative"))
	}
	out, n := newStream[R](j, kind, cfg)
	n.lateType = reflect.TypeFor[T]()
	w := ws.w
	aligned := results && (w.kind == tumblingWindows || w.kind == hoppingWindows) &&
		trig == EventTimeTrigger() && cfg.lateness == 0
	e := connectKeyed(ws.ks, n)
	// Count never reads a record's value: its input edge ships keys only
	// (until LateEvents asks for the values), a third of the bytes that
	// cross to the window's core.
	_, isCount := any(agg).(countAgg[T])
	keysOnly := aligned && isCount
	if keysOnly {
		connectKeysOnly(e, ws.ks)
		n.valuesNeeded = func() {
			keysOnly = false
			connectKeyedEdge(e, ws.ks)
		}
	}
	if w.kind == slidingWindows && (cfg.trigger != nil || cfg.lateness != 0 || !results) {
		j.fail(fmt.Errorf("weir: %v windows take no trigger or allowed lateness and work with Aggregate and Reduce", w))
	}
	// On PebbleState the aggregation runs on a process function with its
	// state in the backend (window_state.go). The backend is read when the
	// job builds its subtasks, so that it may be set after the operator.
	if onStateWindows(w, trig, results) {
		n.stateWindow = true
		n.stateErr = stateWindowCodecErr[K, T, ACC, OUT](w, trig)
	}
	n.build = func(st *subtask, o any) ([]any, error) {
		if n.inBackend(st.cfg().stateBackend) {
			if keysOnly {
				return buildStateWindow[K, struct{}, int64, int64](st, n, o, w, trig, countAgg[struct{}]{}, 0, false)
			}
			return buildStateWindow[K, T, ACC, OUT](st, n, o, w, trig, agg, cfg.lateness, cfg.retract)
		}
		if n.stateWindow {
			if err := checkWindowRestore(st, n, false); err != nil {
				return nil, err
			}
		}
		var op interface {
			consumer[keyed[K, T]]
			restore(wm int64, groups [][]byte) error
		}
		if keysOnly {
			return buildCountKeysOnly[K](st, n, o, w)
		}
		switch {
		case w.kind == slidingWindows:
			wo, err := newWinOut[K, T, WindowResult[K, OUT]](st, n, o)
			if err != nil {
				return nil, err
			}
			ov := &overOp[K, T, ACC, OUT]{winOut: wo, rng: w.size, agg: agg, info: newOpInfo(st, n)}
			ov.init()
			op = ov
		case aligned:
			wo, err := newWinOut[K, T, WindowResult[K, OUT]](st, n, o)
			if err != nil {
				return nil, err
			}
			_, count := any(agg).(countAgg[T])
			a := alignedWindowOp[K, T, ACC, OUT]{winOut: wo, w: w, agg: agg, wm: watermark.Min, nextFire: watermark.Max, info: newOpInfo(st, n),
				count: count, ident: identityResult[ACC, OUT](agg), async: deferrable(agg, reflect.TypeFor[K](), reflect.TypeFor[ACC](), reflect.TypeFor[ACC]())}
			if sliced(w, count) {
				op = newSlicedWindowOp(st, &a)
			} else {
				op = &a
			}
		default:
			wo, err := newWinOut[K, T, R](st, n, o)
			if err != nil {
				return nil, err
			}
			g := &genWindowOp[K, T, ACC, OUT, R]{winOut: wo, w: w, agg: agg, trig: trig, lateness: cfg.lateness,
				retract: cfg.retract, render: render, now: st.now, info: newOpInfo(st, n), ident: identityResult[ACC, OUT](agg),
				stopped: st.ctx.Done(), async: deferrable(agg, reflect.TypeFor[K](), reflect.TypeFor[ACC](), reflect.TypeFor[OUT]())}
			g.init()
			st.timers = append(st.timers, g)
			op = g
		}
		if wm, groups, ok := st.restoreKeyed(n); ok {
			if err := op.restore(wm, groups); err != nil {
				return nil, fmt.Errorf("weir: restoring window operator %s (uid %q) from %s: %w", n.name, n.uid, st.plan.restored.Path, err)
			}
		}
		return []any{consumer[keyed[K, T]](op)}, nil
	}
	return out
}

// LateEvents returns the events that the windowed aggregation producing
// results dropped because they were too late (after the window fired and
// its allowed lateness passed), with the window each missed and the
// watermark at its arrival. T is the window's input type, which Go cannot
// infer from results: weir.LateEvents[Click](counts).
func LateEvents[T any, K comparable, V any](results *Stream[WindowResult[K, V]]) *Stream[LateEvent[K, T]] {
	n := results.node
	j := results.job
	if n.lateType == nil {
		j.fail(fmt.Errorf("weir: LateEvents: %q is not the output of a window", n.name))
	} else if want := reflect.TypeFor[T](); n.lateType != want {
		j.fail(fmt.Errorf("weir: LateEvents[%v]: window %q aggregates %v", want, n.name, n.lateType))
	}
	if n.sideStream != nil {
		if s, ok := n.sideStream.(*Stream[LateEvent[K, T]]); ok {
			return s
		}
	}
	out, ln := newStream[LateEvent[K, T]](j, "late-events", config{name: n.name + "-late"})
	ln.sideOf = n
	n.side = ln
	n.sideStream = out
	if n.valuesNeeded != nil {
		n.valuesNeeded()
		n.valuesNeeded = nil
	}
	return out
}

// bucket is the state of one aligned window: an accumulator per key.
type bucket[K comparable, ACC any] struct {
	start, end int64
	// from is the timestamp of the record that opened the bucket (start
	// when later): the window's keys are those since from, which is after
	// start in a window the job started in (fullLen).
	from int64
	tab  *hashtable.Table[K, ACC]
	// shared: tab is also the state of a deferred snapshot that the
	// checkpoint coordinator may be reading (barrierDeferred), so the task
	// must not change it: writes go to delta (the changed keys'
	// accumulators, read over tab's) until the snapshot is encoded.
	shared bool
	delta  *hashtable.Table[K, ACC]
	// added are delta's keys that tab lacks, in the order they came: the
	// fold inserts them in that order, so tab ends as it would have
	// without the snapshot (same slots, same iteration order, same bytes
	// in the next snapshot).
	added []hashedKey[K]

	// The encoding cache of a slice of the sliced operator
	// (window_slice.go): encGroups is what enc last encoded of the slice,
	// still its state if encOK; dirty: written since the last barrier;
	// encPending: shared with a snapshot that encodes it into enc.
	enc                      *codec.GroupWriter[alignedEntry[K, ACC]]
	encGroups                map[int][]byte
	dirty, encOK, encPending bool
}

type hashedKey[K comparable] struct {
	hash uint64
	key  K
}

// alignedWindowOp aggregates tumbling and hopping windows. Because these
// windows have the same boundaries for every key, state is bucketed by
// window, not by key: firing is a walk over the buckets the watermark
// passed, not a timer per key and window.
type alignedWindowOp[K comparable, T, ACC, OUT any] struct {
	winOut[K, T, WindowResult[K, OUT]]
	w   Windows
	agg AggregateFunction[T, ACC, OUT]

	wm       int64 // input watermark
	nextFire int64 // smallest end-1 over open buckets; Max if none

	buckets []*bucket[K, ACC] // sorted by start (hence by end)
	cache   *bucket[K, ACC]   // tumbling: the bucket of the previous record
	free    []*hashtable.Table[K, ACC]
	lastLen int // the last fired bucket's entries, scaled to its whole window (fullLen)
	info    opInfo
	snap    codec.GroupWriter[alignedEntry[K, ACC]]
	// count: agg is Count, so ACC is int64 and adding a record is an
	// increment, with no call through the AggregateFunction interface.
	count bool
	// ident: agg says IdentityResult, so a result is its accumulator,
	// copied without a call through the interface.
	ident bool
	async bool // keys and accumulators are shareable: barrierDeferred
	cow   alignedCOW[K, ACC]
}

func (op *alignedWindowOp[K, T, ACC, OUT]) push(b *batch[keyed[K, T]]) error {
	op.m.RecordsIn.Add(int64(len(b.data)))
	if op.cow.sharing && op.cow.encoded() {
		op.unshare()
	}
	agg, count := op.agg, op.count
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
			var p *ACC
			var ins bool
			if c.shared {
				p, ins = op.deltaSlot(c, r.hash, r.key)
			} else {
				p, ins = c.tab.Upsert(r.hash, r.key)
			}
			if count {
				*(*int64)(unsafe.Pointer(p))++ // Create is 0, Add is +1
				continue
			}
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
	return op.endBatch(op.wm, b.idle)
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
		bk := op.bucket(s, end, ts)
		p, ins := op.upsert(bk, r.hash, r.key)
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
		s := op.w.lastStart(ts)
		op.dropLate(r, ts, s, s+op.w.size, op.wm)
	}
}

// bucket finds or creates the bucket of the window starting at s, for a
// record at ts (watermark.Min: none, as in a restore).
//
// A new bucket's table is made for the keys its window is expected to
// hold (newLen), so that it does not grow while it fills: a doubling moves
// every entry at once and stops the task for a time in proportion to the
// table, and a window's table can hold hundreds of thousands of keys a
// subtask (Nexmark q5).
func (op *alignedWindowOp[K, T, ACC, OUT]) bucket(s, end, ts int64) *bucket[K, ACC] {
	i := len(op.buckets)
	for i > 0 && op.buckets[i-1].start >= s {
		if op.buckets[i-1].start == s {
			return op.buckets[i-1]
		}
		i--
	}
	bk := &bucket[K, ACC]{start: s, end: end, from: max(s, ts), tab: op.freeTable(op.newLen(ts))}
	op.buckets = append(op.buckets, nil)
	copy(op.buckets[i+1:], op.buckets[i:])
	op.buckets[i] = bk
	if end-1 < op.nextFire {
		op.nextFire = end - 1
	}
	return bk
}

// newLen is the number of keys a new bucket's table is made for, with a
// record at ts: the most that the last fired window or an open one is
// expected to hold over its whole window (fullLen), and 1/16 more, so that
// a window a little larger than the last does not double its table at its
// end. Before the first window fires (lastLen 0) the open buckets are the
// only guide: without them, each bucket opened while the job warms up
// would grow from the smallest table (q5: 14 doublings each). The open
// buckets are few (size/slide, and those the watermark has yet to close),
// and a bucket opens once a slide.
func (op *alignedWindowOp[K, T, ACC, OUT]) newLen(ts int64) int {
	n := op.lastLen
	if ts != watermark.Min {
		for _, bk := range op.buckets {
			n = max(n, op.fullLen(bk, ts))
		}
	}
	return n + n/16
}

// fullLen estimates the keys bucket bk holds at the end of its window from
// those it holds at now: scaled from the part of the window it has seen
// (since its first record, for the windows the job started in; up to now
// or the window's end), in proportion and by at most 2. The bound keeps a key set that is complete
// early (the same users every second) from getting a table more than one
// doubling larger than it needs; a key set that keeps growing (q5's
// auctions) is sized right once half the window is seen.
func (op *alignedWindowOp[K, T, ACC, OUT]) fullLen(bk *bucket[K, ACC], now int64) int {
	n := bk.tab.Len() + len(bk.added)
	seen, size := min(now, bk.end)-bk.from, op.w.size
	switch {
	case seen >= size:
		return n
	case 2*seen <= size:
		return 2 * n
	}
	return int(float64(n) * float64(size) / float64(seen))
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
	if trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "window-fire").End()
	}
	n := 0
	for _, bk := range op.buckets {
		if bk.end-1 > w {
			break
		}
		if err := op.fire(bk, prev); err != nil {
			return err
		}
		op.lastLen = op.fullLen(bk, bk.end)
		// The window's last results go now, not after its table is
		// cleared (release) and the rest of the input batch is done.
		if err := op.flush(prev); err != nil {
			return err
		}
		if op.cache == bk {
			op.cache = nil
		}
		op.release(bk)
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
	// put writes the result of key k in place in the output batch (batch.put).
	put := func(k K, acc *ACC) bool {
		r := op.ob.put(ts, wm)
		r.Key, r.Start, r.End, r.Kind = k, start, end, Insert
		r.Value = resultOf(op.agg, op.ident, acc)
		err = op.pushFull(wm)
		return err == nil
	}
	// The table is walked in slot order with the slots ahead prefetched:
	// a window's table is larger than the caches, and its full slots lie
	// at random among the empty ones (hashtable.AllPrefetch).
	if d := bk.delta; d != nil {
		// Shared with a snapshot and changed since: delta's accumulators
		// stand for tab's, and its new keys (added, in the order they
		// came) come after tab's.
		bk.tab.AllPrefetch(func(h uint64, k K, acc *ACC) bool {
			if v := d.Get(h, k); v != nil {
				acc = v
			}
			return put(k, acc)
		})
		for _, a := range bk.added {
			if err != nil || !put(a.key, d.Get(a.hash, a.key)) {
				break
			}
		}
		return err
	}
	bk.tab.AllPrefetch(func(_ uint64, k K, acc *ACC) bool { return put(k, acc) })
	return err
}

// ProcessWindow calls fn once per window firing with all of the window's
// events (in arrival order) and its bounds; fn emits any number of records.
// It supports every window kind but Sliding, triggers and allowed lateness
// (a late firing calls fn again with all events so far). Prefer Aggregate
// when an incremental aggregate will do: ProcessWindow keeps every event.
//
// On PebbleState, over event-time Tumbling, Hopping and Session windows
// with the default trigger, each window's events and the timers are keyed
// state in Pebble (window_state_process.go); the key and event types must
// then be encodable.
func ProcessWindow[K comparable, T, OUT any](ws *WindowedStream[K, T], fn func(key K, w WindowInfo, events []T, emit func(OUT)) error, opts ...WindowOption) *Stream[OUT] {
	return processWindow(ws, fn, AggregateFunction[T, []T, []T](collectAgg[T]{}), opts)
}

// processWindow is ProcessWindow with the aggregate that collects the
// events: collectAgg, or readOnlyCollect when fn never changes the events
// it is given.
func processWindow[K comparable, T, OUT any](ws *WindowedStream[K, T], fn func(key K, w WindowInfo, events []T, emit func(OUT)) error,
	agg AggregateFunction[T, []T, []T], opts []WindowOption) *Stream[OUT] {
	if ws.w.kind == slidingWindows {
		ws.ks.src.job.fail(fmt.Errorf("weir: ProcessWindow does not support %v", ws.w))
	}
	s := windowOperator(ws, "process-window", agg, processRender(fn), false, opts)
	onStateProcessWindow(ws, s, fn, opts) // on PebbleState: window_state_process.go
	return s
}

// processRender renders a window's collected events through fn, the
// window function of ProcessWindow (and CoGroup).
func processRender[K comparable, T, OUT any](fn func(key K, w WindowInfo, events []T, emit func(OUT)) error) func(emit func(OUT), key K, w *gwin[[]T, []T], kind ChangeKind, v []T) error {
	return func(emit func(OUT), key K, w *gwin[[]T, []T], kind ChangeKind, v []T) error {
		if kind == UpdateBefore || kind == Delete {
			return nil // a process function's output cannot be retracted
		}
		return fn(key, WindowInfo{time.UnixMilli(w.start).UTC(), time.UnixMilli(w.end).UTC()}, v, emit)
	}
}

type collectAgg[T any] struct{}

func (collectAgg[T]) Create() []T        { return nil }
func (collectAgg[T]) Add(a []T, v T) []T { return append(a, v) }
func (collectAgg[T]) Merge(a, b []T) []T { return append(append([]T(nil), a...), b...) }
func (collectAgg[T]) Result(a []T) []T   { return a }

// readOnlyCollect collects a window's events for a window function that
// only reads them (CoGroup's): its accumulators are append-only, so a
// checkpoint can copy their slice headers and encode them later.
type readOnlyCollect[T any] struct{ collectAgg[T] }

func (readOnlyCollect[T]) AppendOnlyAccumulator() {}

// ---- snapshots ----

type alignedEntry[K comparable, ACC any] struct {
	Start, End int64
	Hash       uint64
	Key        K
	Acc        ACC
}

func (op *alignedWindowOp[K, T, ACC, OUT]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if trace.IsEnabled() {
		defer trace.StartRegion(context.Background(), "window-barrier").End()
	}
	if op.async {
		return op.barrierDeferred(b, s)
	}
	g := &op.snap
	g.Start(int(op.info.maxP))
	var e alignedEntry[K, ACC]
	for _, bk := range op.buckets {
		e.Start, e.End = bk.start, bk.end
		bk.tab.AllPrefetch(func(h uint64, k K, acc *ACC) bool {
			e.Hash, e.Key, e.Acc = h, k, *acc
			g.Add(int(h%op.info.maxP), &e)
			return true
		})
	}
	if err := addKeyedState(s, op.info, op.wm, g); err != nil {
		return err
	}
	return op.winOut.forwardBarrier(b, s)
}

func (op *alignedWindowOp[K, T, ACC, OUT]) restore(wm int64, groups [][]byte) error {
	op.wm, op.sentWM = wm, wm
	return codec.EachEntry(groups, func(e alignedEntry[K, ACC]) {
		p, _ := op.bucket(e.Start, e.End, watermark.Min).tab.Upsert(e.Hash, e.Key)
		*p = e.Acc
	})
}
