package engine

import (
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/state"
)

// ProcessWindow, CoGroup and WindowJoin with their windows in the job's
// state backend.
//
// On the heap backend they run on the general window operator
// (window_general.go) with an accumulator that collects the window's
// events, in Go memory whatever the backend. When the job keeps keyed
// state in Pebble (PebbleState), a ProcessWindow over event-time tumbling,
// hopping or session windows (the default EventTimeTrigger, with or
// without AllowedLateness, with or without LateEvents), and so a CoGroup
// or WindowJoin, which are ProcessWindows over both sides' tagged events,
// runs instead on a keyed process function (Process's operator) whose
// events and timers are keyed state, as the aggregations of
// window_state.go do:
//
//   - A window's events are a list in a ListState namespaced by the
//     window (Flink's WindowOperator keeps a window's contents as
//     ListState in the window's namespace): each event is appended, which
//     on Pebble is a merge that does not read the list, so a window of n
//     events costs n appends, not n rewrites of a growing list. Firing
//     reads the list once, calls the window function with it, and removes
//     it when the window's lateness has passed.
//   - Tumbling and hopping: the namespace is the window's end; an
//     event-time timer at end-1 fires the window and one at end-1+lateness
//     removes it (one timer when the lateness is 0). The timers of a key's
//     window are registered once per input batch (a registration reads the
//     timer index on Pebble).
//   - Session: per key, a ValueState with the key's open sessions (bounds
//     and the namespace of their list) in the heap operator's order, read
//     once a batch and written back when it ends, as window_state.go does
//     for the accumulators. A session's namespace is the time of the event
//     that opened it, which every later form of the session still covers:
//     open sessions of a key are apart, so their namespaces differ. A
//     merge keeps the list of the first session it absorbs (in list
//     order) and appends the others' lists to it, in list order, then the
//     event, which is the order in which the heap operator's collecting
//     accumulator merges them.
//
// The window function sees what it sees on the heap: a window's events in
// arrival order (a merged session's in the order above), once when the
// watermark reaches the window's end-1 and again, with all its events so
// far, for each event within the allowed lateness after that; its output
// is stamped end-1. An event late for all its windows is dropped, counted
// in late_records_dropped_total and sent to LateEvents (where the output
// type lets one ask for it) with the latest window it missed. Only the
// order of the windows fired at one watermark may differ (timers fire in
// time and registration order). On Pebble the events given to the window
// function are decoded for the call: changing them changes nothing kept
// (on the heap, ProcessWindow's function is given the stored slice).
//
// After a restore at another parallelism whose watermark is behind the one
// a window had fired at (the lowest of the old subtasks'), an event within
// the allowed lateness registers the window's timer at end-1 again, and
// the window fires again with all its events when the watermark gets
// there (the heap operator, which keeps a fired flag, fires it at once
// instead, window_state.go and docs/time-and-windows.md).
//
// Not covered (these stay on the heap, and HeapStateOperators names them):
// other triggers (count, processing time, early or late firings,
// purging) and Global windows.

// stateProcessWindows reports whether ProcessWindow over w with trigger
// trig can keep its windows in the backend (the functions of this file).
func stateProcessWindows(w Windows, trig WindowTrigger) bool {
	if trig != EventTimeTrigger() {
		return false
	}
	switch w.kind {
	case tumblingWindows, hoppingWindows, sessionWindows:
		return true
	}
	return false
}

// stateEventsErr is why a ProcessWindow keyed by K over events T cannot
// keep its windows in a serializing backend (nil if it can): the key is
// written with the key codec, the events with the value codec.
func stateEventsErr[K comparable, T any]() error {
	if _, err := codec.For(reflect.TypeFor[K](), codec.Key); err != nil {
		return fmt.Errorf("its key type %v cannot be stored: %w", reflect.TypeFor[K](), err)
	}
	if _, err := codec.For(reflect.TypeFor[T](), codec.Value); err != nil {
		return fmt.Errorf("its event type %v cannot be stored: %w", reflect.TypeFor[T](), err)
	}
	return nil
}

// onStateProcessWindow makes the process-window node of s (built by
// windowOperator for ws with opts) run, on PebbleState, on a process
// function with its windows in the backend, when its windows and trigger
// allow it. The heap operator stays the build on the heap backend; the
// backend is read when the job builds its subtasks.
func onStateProcessWindow[K comparable, T, OUT any](ws *WindowedStream[K, T], s *Stream[OUT], fn func(key K, w WindowInfo, events []T, emit func(OUT)) error, opts []WindowOption) {
	cfg := ws.cfg
	applyWindowOptions(&cfg, opts)
	trig := EventTimeTrigger()
	if cfg.trigger != nil {
		trig = *cfg.trigger
	}
	if !stateProcessWindows(ws.w, trig) || cfg.lateness < 0 {
		return
	}
	n := s.node
	n.stateWindow = true
	n.stateErr = stateEventsErr[K, T]()
	heap := n.build
	w, lateness := ws.w, cfg.lateness
	n.build = func(st *subtask, o any) ([]any, error) {
		if n.inBackend(st.cfg().stateBackend) {
			return buildStateProcessWindow[K, T, OUT](st, n, o, w, fn, lateness)
		}
		return heap(st, o) // checks that the restore is not from Pebble (n.stateWindow)
	}
}

// buildStateProcessWindow builds the process-window node n for one subtask
// on a process operator whose function keeps the windows' events in keyed
// state.
func buildStateProcessWindow[K comparable, T, OUT any](st *subtask, n *node, o any, w Windows, fn func(K, WindowInfo, []T, func(OUT)) error, lateness int64) ([]any, error) {
	if err := checkWindowRestore(st, n, true); err != nil {
		return nil, err
	}
	out := &stateWindowOut[K, T, OUT]{out: o.(consumer[OUT])}
	if n.side != nil {
		lo, err := st.plan.output(n.side, st)
		if err != nil {
			return nil, err
		}
		out.late = &passOp[LateEvent[K, T]]{out: lo.(consumer[LateEvent[K, T]]), m: st.metrics(n.side)}
		out.lb = newBatch[LateEvent[K, T]](st.cfg().batchSize)
	}
	base := procWinBase[K, T, OUT]{w: w, fn: fn, lateness: lateness, out: out}
	var pf KeyedProcessFunction[K, T, OUT]
	if w.kind == sessionWindows {
		pf = &sessionProcWindow[K, T, OUT]{procWinBase: base}
	} else {
		pf = &alignedProcWindow[K, T, OUT]{procWinBase: base}
	}
	op, err := buildProcess(st, n, out, pf)
	if err != nil {
		return nil, err
	}
	return []any{consumer[keyed[K, T]](&stateWindowIn[K, T, OUT]{processOp: op, out: out})}, nil
}

// windowEvents is the lists of the current key's windows' events, by
// namespace (a window's end, or a session's first event time).
type windowEvents[K comparable, T any] struct {
	keys *currentKey[K]
	st   state.ListStore[K, int64, T]
	one  [1]T
}

func (l *windowEvents[K, T]) add(ns int64, e T) { l.st.Add(l.keys.hash, l.keys.key, ns, e) }

// start makes e the list of ns, which has none: Add would do, but on
// Pebble a merge into a list the record cache does not hold goes to the
// database, where a new list's write stays in the cache, and so do the
// merges into it that follow.
func (l *windowEvents[K, T]) start(ns int64, e T) {
	l.one[0] = e
	l.st.Update(l.keys.hash, l.keys.key, ns, l.one[:])
	var zero T
	l.one[0] = zero
}

func (l *windowEvents[K, T]) addAll(ns int64, es []T) {
	l.st.AddAll(l.keys.hash, l.keys.key, ns, es)
}
func (l *windowEvents[K, T]) get(ns int64) []T { return l.st.Get(l.keys.hash, l.keys.key, ns) }
func (l *windowEvents[K, T]) del(ns int64)     { l.st.Delete(l.keys.hash, l.keys.key, ns) }

// procWinBase is what the aligned and the session function share.
type procWinBase[K comparable, T, OUT any] struct {
	w        Windows
	fn       func(K, WindowInfo, []T, func(OUT)) error
	lateness int64
	out      *stateWindowOut[K, T, OUT]
	events   windowEvents[K, T]
	// inPlace: the backend returns its own lists (the heap), which the
	// window function must not be given
	inPlace bool
	// the window function's emit, made once: it stamps with outTS
	ctx    *KeyedContext[K, OUT]
	outTS  int64
	emitFn func(OUT)
}

// open creates the events' list state, named name.
func (f *procWinBase[K, T, OUT]) open(rc *RuntimeContext[K], name string) {
	rc.begin("NewListState", name, nil)
	st, err := state.NewListStore[K, int64, T](rc.backend, name, state.Options{})
	rc.check(err)
	f.events = windowEvents[K, T]{keys: rc.keys, st: st}
	f.inPlace = rc.ValuesInPlace()
	f.emitFn = func(v OUT) { f.ctx.emitAt(v, f.outTS) }
}

// fire calls the window function for the current key's window [start,
// end) with its events; what it emits is stamped end-1 (Flink's
// window.maxTimestamp()).
func (f *procWinBase[K, T, OUT]) fire(ctx *KeyedContext[K, OUT], start, end int64, evs []T) error {
	if len(evs) == 0 {
		return nil
	}
	if f.inPlace {
		evs = slices.Clone(evs)
	}
	f.ctx, f.outTS = ctx, end-1
	return f.fn(ctx.Key(), WindowInfo{time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC()}, evs, f.emitFn)
}

// alignedProcWindow is a ProcessWindow over tumbling or hopping windows
// per key: each open window's events in a list namespaced by its end (ms).
type alignedProcWindow[K comparable, T, OUT any] struct {
	procWinBase[K, T, OUT]
	// seen are the key's windows whose timers this batch registered
	seen map[stateWinKey[K]]struct{}
}

func (f *alignedProcWindow[K, T, OUT]) Open(rc *RuntimeContext[K]) error {
	f.open(rc, "window-events")
	f.seen = map[stateWinKey[K]]struct{}{}
	return nil
}

func (f *alignedProcWindow[K, T, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in T) error {
	ts, wm := ctx.op.curTS, ctx.op.wm
	size, slide, late := f.w.size, f.w.slide, f.lateness
	last := f.w.lastStart(ts)
	accepted := false
	// the windows holding ts, latest first, as the heap operator assigns
	// them; those whose lateness passed are left out
	for s := last; s > ts-size; s -= slide {
		end := s + size
		if end-1+late <= wm {
			break // this window is gone, and every earlier one too
		}
		accepted = true
		fired := end-1 <= wm
		added := false
		k := stateWinKey[K]{ctx.Key(), end}
		if _, ok := f.seen[k]; !ok {
			f.seen[k] = struct{}{}
			// Registering a timer that is there already changes nothing.
			if late > 0 && !fired {
				ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
			}
			// A window has its timer at end-1+lateness, which removes it,
			// from its first event on, and nothing deletes it before it
			// fires: if this registers it, the window has no list yet.
			// (Not so for the timer at end-1 with allowed lateness: after a
			// restore at another parallelism, the watermark may be behind
			// the one that fired it, and the window still there.)
			if ctx.op.event.Register(ctx.op.cur.hash, ctx.op.cur.key, void, end-1+late) {
				f.events.start(end, in)
				added = true
			}
		}
		if !added {
			f.events.add(end, in)
		}
		if fired { // a late firing, with all the window's events so far
			if err := f.fire(ctx, s, end, f.events.get(end)); err != nil {
				return err
			}
		}
	}
	if !accepted {
		f.out.dropLate(ctx, in, last, last+size)
	}
	return nil
}

// OnTimer fires the window ending at t+1 and removes it (with allowed
// lateness, removes instead the one whose lateness ends at t).
func (f *alignedProcWindow[K, T, OUT]) OnTimer(ctx *KeyedContext[K, OUT], t time.Time) error {
	end := t.UnixMilli() + 1
	if evs := f.events.get(end); len(evs) > 0 {
		if err := f.fire(ctx, end-f.w.size, end, evs); err != nil {
			return err
		}
		if f.lateness == 0 {
			f.events.del(end)
		}
	}
	if f.lateness > 0 {
		f.events.del(end - f.lateness)
	}
	return nil
}

// EndBatch forgets the batch's registrations and sends its late events.
func (f *alignedProcWindow[K, T, OUT]) EndBatch(ctx *KeyedContext[K, OUT]) error {
	clear(f.seen)
	return f.out.flushLate(ctx)
}

// procSession is an open session of a key: its bounds (ms) and the
// namespace of its events' list (the time of the event that opened it).
type procSession struct {
	Start, End, NS int64
}

func (s *procSession) bounds() (int64, int64) { return s.Start, s.End }

// sessionProcWindow is a ProcessWindow over session windows per key: the
// key's open sessions in one ValueState, each session's events in a list,
// an event-time timer at each session's end-1 and, with allowed lateness,
// one at end-1+lateness.
type sessionProcWindow[K comparable, T, OUT any] struct {
	procWinBase[K, T, OUT]
	wins   keyWindows[K, procSession]
	merged []int
}

func (f *sessionProcWindow[K, T, OUT]) Open(rc *RuntimeContext[K]) error {
	f.wins.open(rc, "sessions")
	f.open(rc, "session-events")
	return nil
}

func (f *sessionProcWindow[K, T, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in T) error {
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
		ns := ws[merged[0]].NS
		f.events.add(ns, in)
		if fired {
			return f.fire(ctx, start, end, f.events.get(ns))
		}
		return nil
	}
	// a new session, or the merge of those it touches: theirs leave the
	// list and the merged one comes last, with the events of the first
	// followed by the others', in list order, and the event
	ns := ts
	if len(merged) > 0 {
		ns = ws[merged[0]].NS
		for _, i := range merged[1:] {
			m := ws[i].NS
			f.events.addAll(ns, f.events.get(m))
			f.events.del(m)
		}
		f.events.add(ns, in)
	} else {
		f.events.start(ns, in) // a new session: its namespace has no list
	}
	dropMergedTimers(ctx, ws, merged, end, wm, late)
	d.ws = append(withoutMerged(ws, merged), procSession{Start: start, End: end, NS: ns})
	if !fired {
		ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
	}
	if late > 0 {
		ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1 + late))
	}
	if fired { // merged, or new, within its lateness
		return f.fire(ctx, start, end, f.events.get(ns))
	}
	return nil
}

// OnTimer fires the session ending at t+1 and removes the one whose
// lateness ends at t (the same one, without allowed lateness). Within a
// batch, the key's sessions may be the batch's; after it (the batch's
// watermark), they are in the state.
func (f *sessionProcWindow[K, T, OUT]) OnTimer(ctx *KeyedContext[K, OUT], t time.Time) error {
	at := t.UnixMilli()
	ws, i, cached := f.wins.forTimer(ctx.Key())
	changed := false
	for j := 0; j < len(ws); j++ {
		w := ws[j]
		if w.End-1 == at {
			if err := f.fire(ctx, w.Start, w.End, f.events.get(w.NS)); err != nil {
				return err
			}
		}
		if w.End-1+f.lateness == at {
			f.events.del(w.NS)
			ws = slices.Delete(ws, j, j+1)
			j--
			changed = true
		}
	}
	f.wins.putForTimer(ws, i, cached, changed)
	return nil
}

// EndBatch writes the batch's sessions back to the state.
func (f *sessionProcWindow[K, T, OUT]) EndBatch(ctx *KeyedContext[K, OUT]) error {
	writeBackWindows(ctx, &f.wins)
	return f.out.flushLate(ctx)
}
