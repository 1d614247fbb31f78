package planner

import (
	"math"
	"slices"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// Event-time window aggregations (TUMBLE, HOP, SESSION) with their state
// in the job's state backend.
//
// On the heap backend they run on weir's window operators (weir.Window
// and weir.Aggregate, window.go and window_intkey.go), the fast path,
// whose state is Go memory whatever the backend. When the job keeps keyed
// state in Pebble (weir.PebbleState; 'state.backend.type' = 'rocksdb'),
// they run instead on keyed process functions whose accumulators and
// timers are weir state, so in Pebble, as Flink runs its window
// aggregation on RocksDB:
//
//   - TUMBLE and HOP: per key, a MapState from each open window's end to
//     its accumulator, and an event-time timer at the window's end - 1 ms
//     that emits the window's row and removes the accumulator. A row is
//     added to every window it falls in whose end - 1 ms the watermark has
//     not reached (Flink's non-sliced assignment: a HOP row updates
//     size/slide accumulators, each of the aggregation's own making, so
//     that the results are those of the heap operator to the bit, floating
//     point sums and FIRST_VALUE included).
//   - SESSION: per key, a ValueState with the key's open sessions (bounds
//     and accumulator), in the heap operator's order; a row's window [t,
//     t+gap) merges with the sessions it overlaps or touches (Flink's
//     MergingWindowSet), their accumulators merged in that order, and the
//     merged session's timer replaces theirs.
//
// Both read a key's state once per input batch and write it back when the
// batch ends (a write-back cache, emptied before the batch's watermark and
// any checkpoint barrier): a key with many rows in a batch costs one read
// and one write.
//
// Everything the heap operators decide is decided alike: the record's
// event time (not the time column) places it, window bounds are in
// milliseconds from the epoch plus the offset (taken modulo the slide),
// a row late for all its windows is dropped and counted in the operator's
// late_records_dropped_total (KeyedContext.DropLate; allowed lateness is
// 0 in SQL), and a window's row is stamped end - 1 ms and emitted when the
// watermark reaches that, before the watermark is forwarded. Only the
// order of rows emitted at one watermark differs: the heap operators walk
// a window's keys in hash order, timers fire in registration order.
//
// HOP windows whose accumulators merge exactly (integer key; COUNT, MIN,
// MAX of integers: Nexmark q5) are sliced instead (Flink's FLIP-145):
// window_state_sliced.go. For the others, merging slices would change the
// order floating-point sums add in, or which row a FIRST_VALUE keeps, so
// they keep one accumulator per window here.

// stateWindows reports whether windowAggRel plans w on the process
// functions of this file.
func (b *builder) stateWindows(w *windowSpec) bool {
	if !b.pebble || w.proctime {
		return false
	}
	switch w.kind {
	case "TUMBLE":
		return true
	case "HOP":
		// a slide larger than the size is an error of weir.Hopping, which
		// the heap path reports
		return w.slide <= w.size
	case "SESSION":
		return true
	}
	return false
}

// stateWindowAgg is windowAggRel's aggregation on a keyed process
// function (stateWindows). The integer keys and compact accumulators of
// the heap path are kept: an intKey encodes smaller than a types.Key, an
// intAcc or a count much smaller than an accumulator row.
func stateWindowAgg(b *builder, s *weir.Stream[types.Row], w *windowSpec, keys []expr.Expr, keyEvals []expr.EvalFn, layout *expr.AggLayout) *weir.Stream[types.Row] {
	nk := len(keyEvals)
	agg := rowAgg{layout: layout, keys: keyEvals}
	base := nk + len(layout.Calls)
	rowOut := func(acc types.Row, start, end int64) types.Row {
		vs := agg.Result(acc).Values
		vs[base], vs[base+1], vs[base+2] = types.IntValue(start*1000), types.IntValue(end*1000), types.IntValue((end-1)*1000)
		return types.Row{Values: vs}
	}
	if nk == 1 && keys[0].Type.IsInteger() {
		key := keyEvals[0]
		ks := weir.KeyBy(s, func(row types.Row) intKey {
			v := key(row.Values)
			return intKey{V: v.I, Null: v.Null}
		})
		calls := layout.Calls
		if pane, ok := slicedHop(w); ok && !b.noSlices && compactCalls(layout) {
			// exact merges: one accumulator per slice, not per window
			// (window_state_sliced.go)
			if countStarOnly(calls) {
				return stateSlicedProcess(b, ks, w, pane, weir.Count[types.Row](), func(k intKey, n int64, start, end int64) types.Row {
					return compactRow(calls, k, intAcc{V: [maxCompactCalls]int64{n}}, start, end)
				})
			}
			return stateSlicedProcess(b, ks, w, pane, weir.AggregateFunction[types.Row, intAcc, intAcc](intAgg{calls: calls}), func(k intKey, acc intAcc, start, end int64) types.Row {
				return compactRow(calls, k, acc, start, end)
			})
		}
		if w.kind != "SESSION" && compactCalls(layout) {
			if countStarOnly(calls) {
				return stateWindowProcess(b, ks, w, weir.Count[types.Row](), func(k intKey, n int64, start, end int64) types.Row {
					return compactRow(calls, k, intAcc{V: [maxCompactCalls]int64{n}}, start, end)
				})
			}
			return stateWindowProcess(b, ks, w, weir.AggregateFunction[types.Row, intAcc, intAcc](intAgg{calls: calls}), func(k intKey, acc intAcc, start, end int64) types.Row {
				return compactRow(calls, k, acc, start, end)
			})
		}
		return stateWindowProcess(b, ks, w, weir.AggregateFunction[types.Row, types.Row, types.Row](agg), func(_ intKey, acc types.Row, start, end int64) types.Row {
			return rowOut(acc, start, end)
		})
	}
	ks := weir.KeyBy(s, func(row types.Row) string {
		if nk == 0 {
			return ""
		}
		var buf [4]types.Value
		vs := buf[:0]
		for _, f := range keyEvals {
			vs = append(vs, f(row.Values))
		}
		return types.Key(vs)
	})
	return stateWindowProcess(b, ks, w, weir.AggregateFunction[types.Row, types.Row, types.Row](agg), func(_ string, acc types.Row, start, end int64) types.Row {
		return rowOut(acc, start, end)
	})
}

// stateWindowProcess runs w's process function over ks: agg folds the
// rows, render makes a window's row from its key, accumulator and bounds
// (ms).
func stateWindowProcess[K comparable, ACC any](b *builder, ks *weir.KeyedStream[K, types.Row], w *windowSpec, agg weir.AggregateFunction[types.Row, ACC, ACC],
	render func(key K, acc ACC, start, end int64) types.Row) *weir.Stream[types.Row] {
	if w.kind == "SESSION" {
		gap := w.gap.Milliseconds()
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[K, types.Row, types.Row] {
			return &sessionStateFn[K, ACC]{gap: gap, agg: agg, render: render}
		}, b.uid("window-agg-state"))
	}
	size := w.size.Milliseconds()
	slide := size
	if w.kind == "HOP" {
		slide = w.slide.Milliseconds()
	}
	off := mod(w.offset.Milliseconds(), slide) // as weir's WithOffset
	return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[K, types.Row, types.Row] {
		return &alignedStateFn[K, ACC]{size: size, slide: slide, off: off, agg: agg, render: render}
	}, b.uid("window-agg-state"))
}

// noWatermark is below every watermark a job sends: the operator's
// watermark before the first one is the smallest int64, which time.Time
// does not carry back to milliseconds.
var noWatermark = time.UnixMilli(math.MinInt64 / 2)

// watermarkMillis is ctx's watermark in ms (math.MinInt64 before the
// first).
func watermarkMillis(wm time.Time) int64 {
	if wm.Before(noWatermark) {
		return math.MinInt64
	}
	return wm.UnixMilli()
}

// alignedStateFn is a TUMBLE or HOP aggregation per key: one accumulator
// per open window in MapState, by window end (ms); an event-time timer at
// end - 1 emits the window and removes its accumulator.
//
// The accumulators a batch of input touches are read from the state once
// and written back once, when the batch ends (EndBatch, before the
// batch's watermark and any checkpoint barrier): a key with several rows
// in a batch (a global window's one key, a hot auction) costs a state
// read and write for all of them, not for each. A timer that fires within
// the batch (the watermark moves with its rows) finds its window there.
type alignedStateFn[K comparable, ACC any] struct {
	size, slide, off int64 // ms
	agg              weir.AggregateFunction[types.Row, ACC, ACC]
	render           func(K, ACC, int64, int64) types.Row
	accs             *weir.MapState[K, int64, ACC]
	// the batch's accumulators: cache indexes dirty
	cache map[windowKey[K]]int32
	dirty []dirtyWindow[K, ACC]
}

// windowKey is a key's window, by its end (ms).
type windowKey[K comparable] struct {
	key K
	end int64
}

// dirtyWindow is an accumulator of the batch, to write back (gone: its
// window fired and left the state).
type dirtyWindow[K comparable, ACC any] struct {
	ref  weir.KeyRef[K]
	end  int64
	acc  ACC
	gone bool
}

func (f *alignedStateFn[K, ACC]) Open(rc *weir.RuntimeContext[K]) error {
	f.accs = weir.NewMapState[int64, ACC](rc, "windows")
	f.cache = map[windowKey[K]]int32{}
	return nil
}

func (f *alignedStateFn[K, ACC]) ProcessElement(ctx *weir.KeyedContext[K, types.Row], in types.Row) error {
	ts := ctx.Timestamp().UnixMilli()
	wm := watermarkMillis(ctx.Watermark())
	key := ctx.Key()
	// the windows holding ts, latest first, as the heap operator assigns
	// them; a row none of whose windows is open (its latest fired, and
	// every earlier one with it) is late, dropped and counted
	last := ts - mod(ts-f.off, f.slide)
	if last+f.size-1 <= wm {
		ctx.DropLate()
		return nil
	}
	for s := last; s > ts-f.size; s -= f.slide {
		end := s + f.size
		if end-1 <= wm {
			break // this window fired, and every earlier one too
		}
		if i, ok := f.cache[windowKey[K]{key, end}]; ok {
			d := &f.dirty[i]
			d.acc = f.agg.Add(d.acc, in)
			continue
		}
		acc, ok := f.accs.Get(end)
		if !ok {
			acc = f.agg.Create()
			ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
		}
		f.cache[windowKey[K]{key, end}] = int32(len(f.dirty))
		f.dirty = append(f.dirty, dirtyWindow[K, ACC]{ref: ctx.KeyRef(), end: end, acc: f.agg.Add(acc, in)})
	}
	return nil
}

func (f *alignedStateFn[K, ACC]) OnTimer(ctx *weir.KeyedContext[K, types.Row], t time.Time) error {
	end := t.UnixMilli() + 1
	key := ctx.Key()
	var acc ACC
	if i, ok := f.cache[windowKey[K]{key, end}]; ok {
		d := &f.dirty[i]
		acc, d.gone = d.acc, true
		delete(f.cache, windowKey[K]{key, end})
	} else {
		var ok bool
		if acc, ok = f.accs.Get(end); !ok {
			return nil
		}
	}
	ctx.Emit(f.render(key, acc, end-f.size, end))
	f.accs.Remove(end)
	return nil
}

// EndBatch writes the batch's accumulators back to the state.
func (f *alignedStateFn[K, ACC]) EndBatch(ctx *weir.KeyedContext[K, types.Row]) error {
	ts := ctx.Timestamp()
	for i := range f.dirty {
		d := &f.dirty[i]
		if !d.gone {
			ctx.SetKey(d.ref, ts)
			f.accs.Put(d.end, d.acc)
		}
		*d = dirtyWindow[K, ACC]{}
	}
	f.dirty = f.dirty[:0]
	clear(f.cache)
	return nil
}

// sessionWin is an open session of a key: its bounds (ms) and
// accumulator.
type sessionWin[ACC any] struct {
	Start, End int64
	Acc        ACC
}

// sessionStateFn is a SESSION aggregation per key: the key's open
// sessions in one ValueState (a key has few open at a time: those the
// watermark has not closed), each with an event-time timer at its end - 1.
// As alignedStateFn, it reads a key's sessions once a batch and writes
// them back when the batch ends.
type sessionStateFn[K comparable, ACC any] struct {
	gap    int64 // ms
	agg    weir.AggregateFunction[types.Row, ACC, ACC]
	render func(K, ACC, int64, int64) types.Row
	wins   *weir.ValueState[K, []sessionWin[ACC]]
	merged []int
	// the batch's keys: cache indexes dirty
	cache map[K]int32
	dirty []dirtySessions[K, ACC]
}

// dirtySessions are a key's sessions in the batch, to write back.
type dirtySessions[K comparable, ACC any] struct {
	ref weir.KeyRef[K]
	ws  []sessionWin[ACC]
}

func (f *sessionStateFn[K, ACC]) Open(rc *weir.RuntimeContext[K]) error {
	f.wins = weir.NewValueState[[]sessionWin[ACC]](rc, "sessions")
	f.cache = map[K]int32{}
	return nil
}

// sessions returns the current key's sessions, the batch's: the caller
// changes them in place, or sets the returned entry's.
func (f *sessionStateFn[K, ACC]) sessions(ctx *weir.KeyedContext[K, types.Row]) (*dirtySessions[K, ACC], []sessionWin[ACC]) {
	key := ctx.Key()
	if i, ok := f.cache[key]; ok {
		return &f.dirty[i], f.dirty[i].ws
	}
	ws, _ := f.wins.Value()
	f.cache[key] = int32(len(f.dirty))
	f.dirty = append(f.dirty, dirtySessions[K, ACC]{ref: ctx.KeyRef(), ws: ws})
	return &f.dirty[len(f.dirty)-1], ws
}

func (f *sessionStateFn[K, ACC]) ProcessElement(ctx *weir.KeyedContext[K, types.Row], in types.Row) error {
	ts := ctx.Timestamp().UnixMilli()
	start, end := ts, ts+f.gap
	d, ws := f.sessions(ctx)
	// the sessions that overlap or touch [ts, ts+gap) merge with it (open
	// sessions are apart from one another, so one pass finds them all)
	merged := f.merged[:0]
	for i, w := range ws {
		if w.Start <= end && start <= w.End {
			merged = append(merged, i)
			start, end = min(start, w.Start), max(end, w.End)
		}
	}
	f.merged = merged
	if end-1 <= watermarkMillis(ctx.Watermark()) {
		ctx.DropLate() // the session it would be in has fired
		return nil
	}
	if len(merged) == 1 && ws[merged[0]].Start == start && ws[merged[0]].End == end {
		// within a session: it stays where it is
		w := &ws[merged[0]]
		w.Acc = f.agg.Add(w.Acc, in)
		return nil
	}
	// a new session, or the merge of those it touches: theirs leave the
	// list and the merged one comes last, with their accumulators merged
	// in list order (the heap operator's order)
	acc := f.agg.Create()
	for _, i := range merged {
		acc = f.agg.Merge(acc, ws[i].Acc)
		if ws[i].End != end {
			ctx.DeleteEventTimeTimer(time.UnixMilli(ws[i].End - 1))
		}
	}
	keep := ws[:0]
	for i, w := range ws {
		if !slices.Contains(merged, i) {
			keep = append(keep, w)
		}
	}
	d.ws = append(keep, sessionWin[ACC]{Start: start, End: end, Acc: f.agg.Add(acc, in)})
	ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
	return nil
}

func (f *sessionStateFn[K, ACC]) OnTimer(ctx *weir.KeyedContext[K, types.Row], t time.Time) error {
	end := t.UnixMilli() + 1
	// within a batch, the key's sessions may be the batch's; after it (the
	// batch's watermark), they are in the state
	var ws []sessionWin[ACC]
	i, cached := f.cache[ctx.Key()]
	if cached {
		ws = f.dirty[i].ws
	} else {
		ws, _ = f.wins.Value()
	}
	for j, w := range ws {
		if w.End != end {
			continue
		}
		ctx.Emit(f.render(ctx.Key(), w.Acc, w.Start, w.End))
		ws = slices.Delete(ws, j, j+1)
		switch {
		case cached:
			f.dirty[i].ws = ws
		case len(ws) == 0:
			f.wins.Clear()
		default:
			f.wins.Update(ws)
		}
		return nil
	}
	return nil
}

// EndBatch writes the batch's sessions back to the state.
func (f *sessionStateFn[K, ACC]) EndBatch(ctx *weir.KeyedContext[K, types.Row]) error {
	ts := ctx.Timestamp()
	for i := range f.dirty {
		d := &f.dirty[i]
		ctx.SetKey(d.ref, ts)
		if len(d.ws) == 0 {
			f.wins.Clear()
		} else {
			f.wins.Update(d.ws)
		}
		*d = dirtySessions[K, ACC]{}
	}
	f.dirty = f.dirty[:0]
	clear(f.cache)
	return nil
}
