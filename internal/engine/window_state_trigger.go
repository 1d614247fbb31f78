package engine

import (
	"fmt"
	"github.com/weirstream/weir/internal/codec"
	"reflect"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/watermark"
)

// Window aggregations with any trigger, and over Global windows, with
// their state in the job's state backend (PebbleState).
//
// trigStateWindow is the general window operator of window_general.go
// (genWindowOp) as a keyed process function: per key, a ValueState with
// the key's open windows in the heap operator's order (that of their
// creation: a merged session comes last), each with what genWindowOp
// keeps of a window (accumulator, events since the last firing, whether
// its pane fired and changed since, its pending processing-time timers),
// and the windows' timers in the process function's timer service, so in
// the backend too:
//
//   - event time: a window's firing at end-1 (EventTimeTrigger) and its
//     cleanup at end-1+lateness, which fires its pending events and
//     removes it; the Global window's cleanup is at the final watermark
//     (the end of a bounded input), as genWindowOp fires and removes it
//     then. A window created after its end-1 (within its lateness) has
//     its firing timer in the past, which fires at the next watermark, as
//     genWindowOp's does.
//   - processing time (the job's clock): ProcessingTimeTrigger's firing at
//     end-1, early firings (WithEarlyFirings) and gathered late firings
//     (WithLateFirings) at the time the event that asked for them arrived
//     plus their interval. A window records which of them it waits for
//     and when.
//
// The timer service keeps one timer per key and time: a timer runs every
// firing of the key's windows due at its time, in genWindowOp's order
// (event time: firings before cleanups; processing time:
// ProcessingTimeTrigger's, early, late; then the windows' order).
// Timers of sessions merged away are deleted unless a window still needs
// their time; processing-time timers of windows gone are left to fire and
// find nothing, as genWindowOp's are.
//
// The result last emitted (for UpdateBefore when retracting and Delete
// when a session absorbs a fired one) is Result of the window's
// accumulator while the window has not changed since it fired; it is
// kept in the state only from the event that changes such a window until
// it fires again (Last). So the accumulator and the result types must be
// encodable.
//
// As in window_state.go, a batch's keys are read from the state once and
// written back when it ends. Where the results differ from genWindowOp's:
// the order of results emitted at one watermark or one processing time;
// and after a restore, early and late firings pending come when they were
// due, where genWindowOp schedules them again an interval after the
// restore.

// trigWin is one window of a key (exported fields: the value codec
// writes them).
type trigWin[ACC, OUT any] struct {
	Start, End int64
	Acc        ACC
	Count      int64 // events since the last firing (CountTrigger)
	// Last is the result last emitted while Fired && Dirty (lastOf).
	Last         OUT
	Fired, Dirty bool
	// pending processing-time timers: ProcessingTimeTrigger's (at End-1),
	// an early and a late firing (at EarlyAt, LateAt)
	Proc, Early, Late bool
	EarlyAt, LateAt   int64
}

// trigStateWindow is a window aggregation with any trigger, over
// tumbling, hopping, session or global windows.
type trigStateWindow[K comparable, T, ACC, OUT any] struct {
	stateWindowBase[K, T, ACC, OUT]
	trig   WindowTrigger
	wins   keyWindows[K, trigWin[ACC, OUT]]
	buf    [][2]int64
	merged []int
	ends   []int64
}

func (f *trigStateWindow[K, T, ACC, OUT]) Open(rc *RuntimeContext[K]) error {
	f.wins.open(rc, "trigger-windows")
	return nil
}

// windowsOf lists the windows an event at ts belongs to, latest first
// (sessions: its own [ts, ts+gap) before merging), as genWindowOp does.
func (f *trigStateWindow[K, T, ACC, OUT]) windowsOf(ts int64) [][2]int64 {
	dst := f.buf[:0]
	switch f.w.kind {
	case sessionWindows:
		dst = append(dst, [2]int64{ts, ts + f.w.size})
	case globalWindows:
		dst = append(dst, [2]int64{watermark.Min, watermark.Max})
	default:
		for s := f.w.lastStart(ts); s > ts-f.w.size; s -= f.w.slide {
			dst = append(dst, [2]int64{s, s + f.w.size})
		}
	}
	f.buf = dst
	return dst
}

// cleanupAt is the event time at which a window ending at end is fired
// if it has pending events and removed.
func (f *trigStateWindow[K, T, ACC, OUT]) cleanupAt(end int64) int64 {
	if end == watermark.Max {
		return watermark.Max // the global window: at the end of the input
	}
	return end - 1 + f.lateness
}

func (f *trigStateWindow[K, T, ACC, OUT]) isLate(end, wm int64) bool {
	return end != watermark.Max && end-1+f.lateness <= wm
}

func (f *trigStateWindow[K, T, ACC, OUT]) ProcessElement(ctx *KeyedContext[K, WindowResult[K, OUT]], in T) error {
	ts, wm := ctx.op.curTS, ctx.op.wm
	wins := f.windowsOf(ts)
	d := f.wins.of(ctx.KeyRef())
	accepted := false
	for _, se := range wins {
		start, end := se[0], se[1]
		merged := f.merged[:0]
		if f.w.kind == sessionWindows {
			// windows that overlap or touch [start, end) merge with it
			for i, w := range d.ws {
				if w.Start <= end && start <= w.End {
					merged = append(merged, i)
					start, end = min(start, w.Start), max(end, w.End)
				}
			}
		}
		f.merged = merged
		if f.isLate(end, wm) {
			continue
		}
		i, created := f.findWin(ctx, d, start, end, merged)
		w := &d.ws[i]
		if !w.Dirty && !created { // it fired (and maybe purged)
			if w.Fired {
				w.Last = f.result(&w.Acc) // what it fired with, before it changes
			}
			if f.trig.kind == eventTimeTrigger && end != watermark.Max && end-1 > wm {
				// fired before its end: by an early firing (its firing
				// timer is pending), or before a restore whose watermark
				// is behind the window's end (its timer ran): it fires
				// again at its end, as genWindowOp's restored timer does
				ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
			}
		}
		w.Acc = f.agg.Add(w.Acc, in)
		w.Dirty = true
		w.Count++
		accepted = true
		f.onElement(ctx, w)
	}
	if !accepted {
		f.out.dropLate(ctx, in, wins[0][0], wins[0][1])
	}
	return nil
}

// findWin returns the index in d of the window [start, end), creating it,
// or merging the windows of d at merged into it (deleting the results
// they emitted), as genWindowOp.findWin does; created: a new window (new
// or merged).
func (f *trigStateWindow[K, T, ACC, OUT]) findWin(ctx *KeyedContext[K, WindowResult[K, OUT]], d *keyWindowList[K, trigWin[ACC, OUT]], start, end int64, merged []int) (int, bool) {
	if len(merged) == 1 && d.ws[merged[0]].Start == start && d.ws[merged[0]].End == end {
		return merged[0], false
	}
	if len(merged) == 0 {
		for i := range d.ws {
			if d.ws[i].Start == start && d.ws[i].End == end {
				return i, false
			}
		}
		d.ws = append(d.ws, trigWin[ACC, OUT]{Start: start, End: end, Acc: f.agg.Create()})
		f.addTimers(ctx, start, end)
		return len(d.ws) - 1, true
	}
	acc, count, dirty := f.agg.Create(), int64(0), false
	for _, i := range merged {
		m := &d.ws[i]
		acc = f.agg.Merge(acc, m.Acc)
		count += m.Count
		if m.Fired {
			// the merged session replaces a result already emitted
			f.emit(ctx, Delete, m.Start, m.End, f.lastOf(m))
		}
		dirty = dirty || m.Dirty || m.Fired
	}
	ws := d.ws
	ends := f.ends[:0]
	keep := ws[:0]
	for i, w := range ws {
		if slices.Contains(merged, i) {
			ends = append(ends, w.End)
		} else {
			keep = append(keep, w)
		}
	}
	f.ends = ends
	clear(ws[len(keep):])
	d.ws = append(keep, trigWin[ACC, OUT]{Start: start, End: end, Acc: acc, Count: count, Dirty: dirty})
	// the event-time timers of the merged sessions that no window needs
	// any more (their processing-time timers will find nothing)
	for _, e := range ends {
		for k, t := range [2]int64{e - 1, f.cleanupAt(e)} {
			if (k == 1 || f.trig.kind == eventTimeTrigger) && !f.needs(d.ws, t) {
				ctx.DeleteEventTimeTimer(time.UnixMilli(t))
			}
		}
	}
	f.addTimers(ctx, start, end)
	return len(d.ws) - 1, true
}

// needs reports whether a window of ws has an event-time timer at t.
func (f *trigStateWindow[K, T, ACC, OUT]) needs(ws []trigWin[ACC, OUT], t int64) bool {
	for i := range ws {
		e := ws[i].End
		if f.cleanupAt(e) == t || f.trig.kind == eventTimeTrigger && e-1 == t {
			return true
		}
	}
	return false
}

// addTimers registers the event-time timers of a new window [start, end)
// of the current key.
func (f *trigStateWindow[K, T, ACC, OUT]) addTimers(ctx *KeyedContext[K, WindowResult[K, OUT]], start, end int64) {
	if f.trig.kind == eventTimeTrigger {
		ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
	}
	ctx.RegisterEventTimeTimer(time.UnixMilli(f.cleanupAt(end)))
}

// onElement runs the trigger after an event was added to w
// (genWindowOp.onElement).
func (f *trigStateWindow[K, T, ACC, OUT]) onElement(ctx *KeyedContext[K, WindowResult[K, OUT]], w *trigWin[ACC, OUT]) {
	switch f.trig.kind {
	case eventTimeTrigger:
		if w.End != watermark.Max && w.End-1 <= ctx.op.wm {
			// late but within the allowed lateness: a late firing
			if f.trig.late == 0 {
				f.fire(ctx, w)
			} else if !w.Late {
				w.Late, w.LateAt = true, ctx.op.procNow()+f.trig.late
				ctx.RegisterProcessingTimeTimer(time.UnixMilli(w.LateAt))
			}
			return
		}
		if f.trig.early > 0 && !w.Early {
			w.Early, w.EarlyAt = true, ctx.op.procNow()+f.trig.early
			ctx.RegisterProcessingTimeTimer(time.UnixMilli(w.EarlyAt))
		}
	case processingTimeTrigger:
		if !w.Proc {
			w.Proc = true
			ctx.RegisterProcessingTimeTimer(time.UnixMilli(w.End - 1))
		}
	case countTrigger:
		if w.Count >= f.trig.count {
			f.fire(ctx, w)
		}
	}
}

// lastOf is the result w last emitted (w fired).
func (f *trigStateWindow[K, T, ACC, OUT]) lastOf(w *trigWin[ACC, OUT]) OUT {
	if w.Dirty {
		return w.Last
	}
	return f.result(&w.Acc)
}

// fire emits w's result if it changed since it last fired: Insert the
// first time in a pane, then UpdateAfter (after UpdateBefore with the
// previous result when retracting); a purging trigger then empties it
// (genWindowOp.fire).
func (f *trigStateWindow[K, T, ACC, OUT]) fire(ctx *KeyedContext[K, WindowResult[K, OUT]], w *trigWin[ACC, OUT]) {
	if !w.Dirty {
		return
	}
	v := f.result(&w.Acc)
	if !w.Fired {
		f.emit(ctx, Insert, w.Start, w.End, v)
	} else {
		f.refire(ctx, w.Start, w.End, w.Last, v)
	}
	var zero OUT
	w.Last, w.Fired, w.Dirty, w.Count = zero, true, false, 0
	if f.trig.purge {
		w.Acc, w.Fired, w.Proc = f.agg.Create(), false, false
	}
}

// OnTimer runs the firings of the current key's windows due at t, in
// genWindowOp's order (see the file's comment). Within a batch, the key's
// windows may be the batch's; after it, they are in the state.
func (f *trigStateWindow[K, T, ACC, OUT]) OnTimer(ctx *KeyedContext[K, WindowResult[K, OUT]], t time.Time) error {
	at := t.UnixMilli()
	ws, i, cached := f.wins.forTimer(ctx.Key())
	if len(ws) == 0 {
		return nil
	}
	changed := false
	if ctx.TimeDomain() == EventTime {
		if f.trig.kind == eventTimeTrigger {
			for j := range ws {
				if w := &ws[j]; w.End-1 == at && w.Dirty {
					f.fire(ctx, w)
					changed = true
				}
			}
		}
		for j := 0; j < len(ws); j++ {
			if w := &ws[j]; f.cleanupAt(w.End) == at {
				// whatever the trigger, a window's pending events are not
				// dropped: they fire when it is removed
				f.fire(ctx, w)
				ws = slices.Delete(ws, j, j+1)
				j--
				changed = true
			}
		}
	} else {
		wm := ctx.op.wm
		for j := 0; j < len(ws); j++ {
			if w := &ws[j]; w.Proc && w.End-1 == at {
				w.Proc = false
				f.fire(ctx, w)
				if f.trig.purge && f.w.kind != globalWindows {
					ws = slices.Delete(ws, j, j+1)
					j--
				}
				changed = true
			}
		}
		for j := range ws {
			if w := &ws[j]; w.Early && w.EarlyAt == at {
				w.Early = false
				if w.End-1 > wm { // else the on-time firing happened
					f.fire(ctx, w)
				}
				changed = true
			}
		}
		for j := range ws {
			if w := &ws[j]; w.Late && w.LateAt == at {
				w.Late = false
				f.fire(ctx, w)
				changed = true
			}
		}
	}
	f.wins.putForTimer(ws, i, cached, changed)
	return nil
}

// EndBatch writes the batch's windows back to the state.
func (f *trigStateWindow[K, T, ACC, OUT]) EndBatch(ctx *KeyedContext[K, WindowResult[K, OUT]]) error {
	writeBackWindows(ctx, &f.wins)
	return f.out.flushLate(ctx)
}

// stateWindowCodecErr is why a window aggregation of w with trigger trig,
// keyed by K, of events T, accumulators ACC and results OUT cannot keep
// its state in a serializing backend (nil if it can): the default trigger
// over tumbling, hopping and session windows stores accumulators
// (window_state.go); other triggers and Global windows their last results
// too (trigWin.Last); Sliding windows the events.
func stateWindowCodecErr[K comparable, T, ACC, OUT any](w Windows, trig WindowTrigger) error {
	if w.kind == slidingWindows { // stores the events (window_state_sliding.go)
		if err := stateCodecErr[K, struct{}](); err != nil {
			return err
		}
		if _, err := codec.For(reflect.TypeFor[T](), codec.Value); err != nil {
			return fmt.Errorf("its input type %v cannot be stored: %w", reflect.TypeFor[T](), err)
		}
		return nil
	}
	if err := stateCodecErr[K, ACC](); err != nil {
		return err
	}
	if trig != EventTimeTrigger() || w.kind == globalWindows {
		if _, err := codec.For(reflect.TypeFor[OUT](), codec.Value); err != nil {
			return fmt.Errorf("its result type %v cannot be stored: %w", reflect.TypeFor[OUT](), err)
		}
	}
	return nil
}
