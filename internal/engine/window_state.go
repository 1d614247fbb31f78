package engine

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
)

// Window aggregations with their state in the job's state backend.
//
// On the heap backend, Aggregate and Reduce run on the window operators of
// window_op.go and window_general.go, the fast path, whose state is Go
// memory whatever the backend. When the job keeps keyed state in Pebble
// (PebbleState), an Aggregate or Reduce runs instead on a keyed process
// function (Process's operator) whose windows and timers are keyed state,
// so in Pebble, as sql/planner/window_state.go does for SQL's TUMBLE, HOP
// and SESSION. Over event-time tumbling, hopping or session windows with
// the default EventTimeTrigger (with or without AllowedLateness,
// accumulating or retracting, with or without LateEvents), the functions
// of this file:
//
//   - Tumbling and hopping: per key, a MapState from each open window's
//     end to its accumulator, an event-time timer at end-1 that fires the
//     window and one at end-1+lateness that removes it (one timer when the
//     lateness is 0).
//   - Session: per key, a ValueState with the key's open sessions (bounds
//     and accumulator) in the heap operator's order; an event's [t, t+gap)
//     merges with the sessions it overlaps or touches, their accumulators
//     merged in that order.
//
// A batch's accumulators are read from the state once and written back
// when the batch ends (EndBatch, before its watermark and any barrier), as
// in SQL's functions.
//
// What the heap operators decide is decided alike, from the same inputs: a
// window [s, e) fires when the watermark reaches e-1 (Insert, stamped
// e-1); an event for a fired window within the allowed lateness is added
// and fires it again at once (UpdateAfter, after UpdateBefore with the
// previous result when retracting); a session that absorbs fired sessions
// deletes their results (Delete); an event late for all its windows is
// dropped, counted in late_records_dropped_total and sent to LateEvents
// with the latest window it missed. A window has fired exactly when the
// watermark passed its end-1, so no flag says so; its previous result, for
// UpdateBefore and Delete, is Result of its accumulator before the event
// (a fired window has no event that did not fire it). Only the order of
// results emitted at one watermark may differ: timers fire in time and
// registration order, the heap operators walk windows in their own.
//
// Other triggers (count, processing time, early or late firings, purging)
// and Global windows: window_state_trigger.go. Sliding windows:
// window_state_sliding.go.
//
// Not covered (the operators stay on the heap, and HeapStateOperators
// names them): ProcessWindow with another trigger or over Global windows.
// ProcessWindow, CoGroup and WindowJoin over this file's windows keep
// their windows' events in the backend too: window_state_process.go.

// onStateWindows reports whether an aggregation of w with trigger trig
// can keep its state in the backend (the functions of this file).
func onStateWindows(w Windows, trig WindowTrigger, results bool) bool {
	if !results {
		return false
	}
	switch w.kind {
	case tumblingWindows, hoppingWindows, sessionWindows, globalWindows:
		return true // other triggers and Global: window_state_trigger.go
	case slidingWindows:
		return true // window_state_sliding.go
	}
	return false
}

// stateCodecErr is why a window aggregation keyed by K with accumulator
// ACC cannot keep its state in a serializing backend (nil if it can): the
// key is written with the key codec, accumulators with the value codec.
func stateCodecErr[K comparable, ACC any]() error {
	if _, err := codec.For(reflect.TypeFor[K](), codec.Key); err != nil {
		return fmt.Errorf("its key type %v cannot be stored: %w", reflect.TypeFor[K](), err)
	}
	if _, err := codec.For(reflect.TypeFor[ACC](), codec.Value); err != nil {
		return fmt.Errorf("its accumulator type %v cannot be stored: %w", reflect.TypeFor[ACC](), err)
	}
	return nil
}

// checkWindowRestore fails the build of window node n (onState: on a
// process function) when the checkpoint it restores holds its windows as
// the other implementation keeps them: a window aggregation's state does
// not move between HeapState and PebbleState (the heap's window operators
// write their own format, the process functions keyed state). Without
// this, the restore would fail on the format after every restart.
func checkWindowRestore(st *subtask, n *node, onState bool) error {
	r := st.plan.restored
	if r == nil {
		return nil
	}
	ds, err := restoredDescs(r, n.uid)
	if err != nil {
		return err
	}
	keyed, found := len(ds) > 0, len(ds) > 0
	if !found {
		if _, groups, ok := st.restoreKeyed(n); ok {
			for _, g := range groups {
				if len(g) > 0 {
					keyed, found = state.IsKeyGroupSnapshot(g), true
					break
				}
			}
		}
	}
	switch {
	case !found || keyed == onState:
		return nil
	case keyed:
		return Permanent(fmt.Errorf("weir: window operator %q: %s holds its windows as PebbleState keeps them: restore it with PebbleState (a window aggregation's state does not move between the backends yet)", n.name, r.Path))
	default:
		return Permanent(fmt.Errorf("weir: window operator %q: %s holds its windows as HeapState keeps them: restore it with HeapState (a window aggregation's state does not move between the backends yet)", n.name, r.Path))
	}
}

// buildStateWindow builds the window node n for one subtask on a process
// operator whose function keeps the windows in keyed state.
func buildStateWindow[K comparable, T, ACC, OUT any](st *subtask, n *node, o any, w Windows, trig WindowTrigger, agg AggregateFunction[T, ACC, OUT], lateness int64, retract bool) ([]any, error) {
	if err := checkWindowRestore(st, n, true); err != nil {
		return nil, err
	}
	out := &stateWindowOut[K, T, WindowResult[K, OUT]]{out: o.(consumer[WindowResult[K, OUT]])}
	if n.side != nil {
		lo, err := st.plan.output(n.side, st)
		if err != nil {
			return nil, err
		}
		out.late = &passOp[LateEvent[K, T]]{out: lo.(consumer[LateEvent[K, T]]), m: st.metrics(n.side)}
		out.lb = newBatch[LateEvent[K, T]](st.cfg().batchSize)
	}
	base := stateWindowBase[K, T, ACC, OUT]{w: w, agg: agg, lateness: lateness, retract: retract,
		ident: identityResult[ACC, OUT](agg), out: out}
	var fn KeyedProcessFunction[K, T, WindowResult[K, OUT]]
	switch {
	case w.kind == slidingWindows:
		fn = &slidingStateWindow[K, T, ACC, OUT]{stateWindowBase: base}
	case trig != EventTimeTrigger() || w.kind == globalWindows:
		fn = &trigStateWindow[K, T, ACC, OUT]{stateWindowBase: base, trig: trig}
	case w.kind == sessionWindows:
		fn = &sessionStateWindow[K, T, ACC, OUT]{stateWindowBase: base}
	default:
		fn = &alignedStateWindow[K, T, ACC, OUT]{stateWindowBase: base}
	}
	op, err := buildProcess(st, n, out, fn)
	if err != nil {
		return nil, err
	}
	return []any{consumer[keyed[K, T]](&stateWindowIn[K, T, WindowResult[K, OUT]]{processOp: op, out: out})}, nil
}

// stateWindowIn is the input of a window on state: the process operator,
// noting whether each input batch says its sender went idle, for the
// batches of results to say it on, as the window operators' do.
type stateWindowIn[K comparable, T, R any] struct {
	*processOp[K, T, R]
	out *stateWindowOut[K, T, R]
}

func (in *stateWindowIn[K, T, R]) push(b *batch[keyed[K, T]]) error {
	in.out.idle = b.idle
	return in.processOp.push(b)
}

// stateWindowOut is the output of a window on state: its results, and in
// front of them the late events' side output (LateEvents), which gets the
// late events and the watermark of each batch of results before it, as
// the window operators' winOut sends them.
type stateWindowOut[K comparable, T, R any] struct {
	out    consumer[R]
	late   consumer[LateEvent[K, T]] // nil unless LateEvents asked for it
	lb     *batch[LateEvent[K, T]]
	sentWM int64 // of out: an empty batch that does not move it is not sent
	sent   bool
	idle   bool // the last input batch's sender went idle
}

// dropLate counts the event being processed as late and sends it to the
// side output (LateEvents) with the window [start, end) it missed.
func (o *stateWindowOut[K, T, R]) dropLate(ctx *KeyedContext[K, R], in T, start, end int64) {
	ctx.DropLate()
	if o.lb == nil {
		return
	}
	ts, wm := ctx.op.curTS, ctx.op.wm
	o.lb.add(LateEvent[K, T]{
		Key: ctx.Key(), Value: in, Timestamp: time.UnixMilli(ts).UTC(),
		Window:    WindowInfo{time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()},
		Watermark: time.UnixMilli(wm).UTC(),
	}, ts, wm)
}

// flushLate sends the batch's late events on at its end, as the heap
// operators do, when no result or watermark would take them along.
func (o *stateWindowOut[K, T, R]) flushLate(ctx *KeyedContext[K, R]) error {
	if o.pending() && ctx.op.flush != nil {
		return ctx.op.flush(ctx.op.wm)
	}
	return nil
}

// pending reports whether late events wait to be sent.
func (o *stateWindowOut[K, T, R]) pending() bool { return o.lb != nil && len(o.lb.data) > 0 }

func (o *stateWindowOut[K, T, R]) pushLate(wm int64) error {
	if o.lb == nil || len(o.lb.data) == 0 && wm <= o.lb.watermark {
		return nil
	}
	o.lb.watermark, o.lb.idle = max(wm, o.lb.watermark), o.idle
	err := o.late.push(o.lb)
	o.lb.reset()
	return err
}

func (o *stateWindowOut[K, T, R]) push(b *batch[R]) error {
	if err := o.pushLate(b.watermark); err != nil {
		return err
	}
	if len(b.data) == 0 && o.sent && b.watermark <= o.sentWM {
		return nil // only flushed the late events
	}
	o.sent, o.sentWM = true, b.watermark
	b.idle = o.idle
	return o.out.push(b)
}

func (o *stateWindowOut[K, T, R]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if o.late != nil {
		if err := o.pushLate(o.lb.watermark); err != nil {
			return err
		}
		if err := forwardBarrier(o.late, b, s); err != nil {
			return err
		}
	}
	return forwardBarrier(o.out, b, s)
}

func (o *stateWindowOut[K, T, R]) finish() error {
	if o.late != nil {
		if err := o.pushLate(o.lb.watermark); err != nil {
			return err
		}
		if err := o.late.finish(); err != nil {
			return err
		}
	}
	return o.out.finish()
}

// stateWindowBase is what the aligned and the session function share.
type stateWindowBase[K comparable, T, ACC, OUT any] struct {
	w        Windows
	agg      AggregateFunction[T, ACC, OUT]
	lateness int64
	retract  bool
	ident    bool
	out      *stateWindowOut[K, T, WindowResult[K, OUT]]
}

// emit sends the result kind of window [start, end) for the current key,
// stamped end-1 (Flink's window.maxTimestamp()).
func (f *stateWindowBase[K, T, ACC, OUT]) emit(ctx *KeyedContext[K, WindowResult[K, OUT]], kind ChangeKind, start, end int64, v OUT) {
	ctx.emitAt(WindowResult[K, OUT]{Key: ctx.Key(), Start: time.UnixMilli(start).UTC(), End: time.UnixMilli(end).UTC(), Value: v, Kind: kind}, end-1)
}

// refire emits the new result v of a window that had fired with prev.
func (f *stateWindowBase[K, T, ACC, OUT]) refire(ctx *KeyedContext[K, WindowResult[K, OUT]], start, end int64, prev, v OUT) {
	if f.retract {
		f.emit(ctx, UpdateBefore, start, end, prev)
	}
	f.emit(ctx, UpdateAfter, start, end, v)
}

func (f *stateWindowBase[K, T, ACC, OUT]) result(acc *ACC) OUT { return resultOf(f.agg, f.ident, acc) }

// alignedStateWindow is a tumbling or hopping window aggregation per key:
// one accumulator per open window in MapState, by window end (ms).
type alignedStateWindow[K comparable, T, ACC, OUT any] struct {
	stateWindowBase[K, T, ACC, OUT]
	accs *MapState[K, int64, ACC]
	// the batch's accumulators: cache indexes dirty
	cache map[stateWinKey[K]]int32
	dirty []stateWinDirty[K, ACC]
}

// stateWinKey is a key's window, by its end (ms).
type stateWinKey[K comparable] struct {
	key K
	end int64
}

// stateWinDirty is an accumulator of the batch, to write back (gone: its
// window left the state).
type stateWinDirty[K comparable, ACC any] struct {
	ref  KeyRef[K]
	end  int64
	acc  ACC
	gone bool
}

func (f *alignedStateWindow[K, T, ACC, OUT]) Open(rc *RuntimeContext[K]) error {
	f.accs = NewMapState[int64, ACC](rc, "windows")
	f.cache = map[stateWinKey[K]]int32{}
	return nil
}

// get returns the batch's entry of the current key's window ending at end,
// reading it from the state the first time; nil if the window is not open.
func (f *alignedStateWindow[K, T, ACC, OUT]) get(ctx *KeyedContext[K, WindowResult[K, OUT]], end int64) *stateWinDirty[K, ACC] {
	if i, ok := f.cache[stateWinKey[K]{ctx.Key(), end}]; ok {
		if d := &f.dirty[i]; !d.gone {
			return d
		}
		return nil
	}
	acc, ok := f.accs.Get(end)
	if !ok {
		return nil
	}
	return f.put(ctx, end, acc)
}

// put makes acc the batch's entry of the current key's window ending at end.
func (f *alignedStateWindow[K, T, ACC, OUT]) put(ctx *KeyedContext[K, WindowResult[K, OUT]], end int64, acc ACC) *stateWinDirty[K, ACC] {
	k := stateWinKey[K]{ctx.Key(), end}
	if i, ok := f.cache[k]; ok {
		f.dirty[i] = stateWinDirty[K, ACC]{ref: ctx.KeyRef(), end: end, acc: acc}
		return &f.dirty[i]
	}
	f.cache[k] = int32(len(f.dirty))
	f.dirty = append(f.dirty, stateWinDirty[K, ACC]{ref: ctx.KeyRef(), end: end, acc: acc})
	return &f.dirty[len(f.dirty)-1]
}

func (f *alignedStateWindow[K, T, ACC, OUT]) ProcessElement(ctx *KeyedContext[K, WindowResult[K, OUT]], in T) error {
	ts, wm := ctx.op.curTS, ctx.op.wm
	size, slide, late := f.w.size, f.w.slide, f.lateness
	last := f.w.lastStart(ts)
	accepted := false
	// the windows holding ts, latest first, as the heap operators assign
	// them; those whose lateness passed are left out
	for s := last; s > ts-size; s -= slide {
		end := s + size
		if end-1+late <= wm {
			break // this window is gone, and every earlier one too
		}
		accepted = true
		fired := end-1 <= wm
		d := f.get(ctx, end)
		if d == nil {
			if !fired {
				ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
			}
			if late > 0 {
				ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1 + late))
			}
			d = f.put(ctx, end, f.agg.Add(f.agg.Create(), in))
			if fired { // first event of a window within its lateness
				f.emit(ctx, Insert, s, end, f.result(&d.acc))
			}
			continue
		}
		if !fired {
			d.acc = f.agg.Add(d.acc, in)
			continue
		}
		// a late firing
		var prev OUT
		if f.retract {
			prev = f.result(&d.acc)
		}
		d.acc = f.agg.Add(d.acc, in)
		f.refire(ctx, s, end, prev, f.result(&d.acc))
	}
	if !accepted {
		f.out.dropLate(ctx, in, last, last+size)
	}
	return nil
}

// OnTimer fires the window ending at t+1 and, with allowed lateness,
// removes the one whose lateness ends at t. Within a batch (the watermark
// moves with its records) the window may be the batch's; after it (the
// batch's watermark) it is in the state, and stays out of the batch's
// entries, which EndBatch has written already.
func (f *alignedStateWindow[K, T, ACC, OUT]) OnTimer(ctx *KeyedContext[K, WindowResult[K, OUT]], t time.Time) error {
	end := t.UnixMilli() + 1
	if d, ok := f.cached(ctx, end); ok {
		if d != nil {
			f.emit(ctx, Insert, end-f.w.size, end, f.result(&d.acc))
			if f.lateness == 0 {
				f.remove(d)
			}
		}
	} else if acc, ok := f.accs.Get(end); ok {
		f.emit(ctx, Insert, end-f.w.size, end, f.result(&acc))
		if f.lateness == 0 {
			f.accs.Remove(end)
		}
	}
	if f.lateness > 0 {
		end -= f.lateness
		if d, ok := f.cached(ctx, end); ok {
			if d != nil {
				f.remove(d)
			}
		} else {
			f.accs.Remove(end)
		}
	}
	return nil
}

// cached returns the batch's entry of the current key's window ending at
// end (nil if it left the state) and whether the batch has one.
func (f *alignedStateWindow[K, T, ACC, OUT]) cached(ctx *KeyedContext[K, WindowResult[K, OUT]], end int64) (*stateWinDirty[K, ACC], bool) {
	i, ok := f.cache[stateWinKey[K]{ctx.Key(), end}]
	if !ok {
		return nil, false
	}
	if d := &f.dirty[i]; !d.gone {
		return d, true
	}
	return nil, true
}

// remove takes the batch's window d out of the state.
func (f *alignedStateWindow[K, T, ACC, OUT]) remove(d *stateWinDirty[K, ACC]) {
	var zero ACC
	d.acc, d.gone = zero, true
	f.accs.Remove(d.end)
}

// EndBatch writes the batch's accumulators back to the state.
func (f *alignedStateWindow[K, T, ACC, OUT]) EndBatch(ctx *KeyedContext[K, WindowResult[K, OUT]]) error {
	ts := time.UnixMilli(ctx.op.curTS)
	for i := range f.dirty {
		d := &f.dirty[i]
		if !d.gone {
			ctx.SetKey(d.ref, ts)
			f.accs.Put(d.end, d.acc)
		}
		*d = stateWinDirty[K, ACC]{}
	}
	f.dirty = f.dirty[:0]
	clear(f.cache)
	return f.out.flushLate(ctx)
}

// stateSession is an open session of a key: its bounds (ms) and
// accumulator.
type stateSession[ACC any] struct {
	Start, End int64
	Acc        ACC
}

func (s *stateSession[ACC]) bounds() (int64, int64) { return s.Start, s.End }

// sessionStateWindow is a session window aggregation per key: the key's
// open sessions in one ValueState (a key has few open at a time: those
// whose lateness has not passed), each with an event-time timer at its
// end-1 and, with allowed lateness, one at end-1+lateness.
type sessionStateWindow[K comparable, T, ACC, OUT any] struct {
	stateWindowBase[K, T, ACC, OUT]
	wins   keyWindows[K, stateSession[ACC]]
	merged []int
}

func (f *sessionStateWindow[K, T, ACC, OUT]) Open(rc *RuntimeContext[K]) error {
	f.wins.open(rc, "sessions")
	return nil
}

func (f *sessionStateWindow[K, T, ACC, OUT]) ProcessElement(ctx *KeyedContext[K, WindowResult[K, OUT]], in T) error {
	ts, wm, late := ctx.op.curTS, ctx.op.wm, f.lateness
	d := f.wins.of(ctx.KeyRef())
	ws := d.ws
	// the sessions that overlap or touch [ts, ts+gap) merge with it
	merged, start, end := overlapping(ws, ts, ts+f.w.size, f.merged[:0])
	f.merged = merged
	if end-1+late <= wm {
		f.out.dropLate(ctx, in, ts, ts+f.w.size)
		return nil
	}
	fired := end-1 <= wm
	if len(merged) == 1 && ws[merged[0]].Start == start && ws[merged[0]].End == end {
		// within a session: it stays where it is
		w := &ws[merged[0]]
		var prev OUT
		if fired && f.retract {
			prev = f.result(&w.Acc)
		}
		w.Acc = f.agg.Add(w.Acc, in)
		if fired {
			f.refire(ctx, start, end, prev, f.result(&w.Acc))
		}
		return nil
	}
	// a new session, or the merge of those it touches: theirs leave the
	// list and the merged one comes last, with their accumulators merged
	// in list order; the results of those that fired are deleted
	acc := f.agg.Create()
	for _, i := range merged {
		m := &ws[i]
		if m.End-1 <= wm {
			f.emit(ctx, Delete, m.Start, m.End, f.result(&m.Acc))
		}
		acc = f.agg.Merge(acc, m.Acc)
	}
	dropMergedTimers(ctx, ws, merged, end, wm, late)
	d.ws = append(withoutMerged(ws, merged), stateSession[ACC]{Start: start, End: end, Acc: f.agg.Add(acc, in)})
	if !fired {
		ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
	}
	if late > 0 {
		ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1 + late))
	}
	if fired { // merged, or new, within its lateness
		w := &d.ws[len(d.ws)-1]
		f.emit(ctx, Insert, start, end, f.result(&w.Acc))
	}
	return nil
}

// OnTimer fires the session ending at t+1 and, with allowed lateness,
// removes the one whose lateness ends at t. Within a batch, the key's
// sessions may be the batch's; after it (the batch's watermark), they are
// in the state.
func (f *sessionStateWindow[K, T, ACC, OUT]) OnTimer(ctx *KeyedContext[K, WindowResult[K, OUT]], t time.Time) error {
	at := t.UnixMilli()
	ws, i, cached := f.wins.forTimer(ctx.Key())
	changed := false
	for j := 0; j < len(ws); j++ {
		w := &ws[j]
		if w.End-1 == at {
			f.emit(ctx, Insert, w.Start, w.End, f.result(&w.Acc))
		}
		if w.End-1+f.lateness == at {
			ws = slices.Delete(ws, j, j+1)
			j--
			changed = true
		}
	}
	f.wins.putForTimer(ws, i, cached, changed)
	return nil
}

// EndBatch writes the batch's sessions back to the state.
func (f *sessionStateWindow[K, T, ACC, OUT]) EndBatch(ctx *KeyedContext[K, WindowResult[K, OUT]]) error {
	writeBackWindows(ctx, &f.wins)
	return f.out.flushLate(ctx)
}
