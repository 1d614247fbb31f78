package planner

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// Sliced HOP windows on state (Flink's window-TVF slicing, FLIP-145:
// SliceSharedAssigner and SliceSharedWindowAggProcessor).
//
// A HOP window of size/slide overlaps size/slide others, so the
// per-window functions of window_state.go add a row to that many
// accumulators, each a state entry with its own timer: for Nexmark q5's
// 10 s / 2 s windows, five state reads, writes and timer registrations
// per row. Here a key's windows are cut into slices of gcd(size, slide)
// (a window is size/gcd of them), a row is added to the one slice it
// falls in, and a window's result is the merge of its slices when it
// fires:
//
//   - per key, one ValueState holds the key's open slices (end and
//     accumulator, by end) and the end of the window its one event-time
//     timer fires (at end - 1 ms);
//   - a row adds to its slice; if the first open window holding that
//     slice ends before the key's timer (or the key has none), the timer
//     moves there;
//   - the timer of window end E merges the slices ending in (E-size, E],
//     emits the window's row if there were any (a window no row reached
//     emits nothing, as on the heap), drops the slices that no later
//     window holds (those ending at or before E+slide-size), and, if any
//     are left, sets the timer to the next window holding one.
//
// So a row costs one state read and write of its key per input batch (the
// write-back cache of window_state.go, keyed by key), and a key's timer
// one registration per window it fires; the per-window path's timers and
// state entries per window and row are gone. Results are those of the heap
// operator: a window's row holds exactly the rows that reached it before
// it fired (a row late for some of its windows reaches only the open
// ones: its slice is merged into no fired window again), and the window
// columns and lateness are decided alike.
//
// Only accumulators whose merge is exact in any grouping take this path:
// the compact integer ones (COUNT, COUNT(*), MIN and MAX of integers:
// compactCalls), keyed by one integer. A floating-point SUM or a
// FIRST_VALUE could differ in the last bit or in which row comes first
// from the heap's per-window accumulation, so they keep one accumulator
// per window (alignedStateFn), as does a HOP whose size is more than
// maxSlicesPerWindow slices (a key's value would hold as many).
//
// The operator's UID is "window-agg-sliced", not the per-window
// function's "window-agg-state": a checkpoint taken with the per-window
// layout names an operator this plan does not have, and the restore fails
// saying so (weir.AllowNonRestoredState drops that state instead).

// slicedPlans counts the aggregations planned on the sliced path (tests
// check which path a query takes).
var slicedPlans atomic.Int64

// maxSlicesPerWindow is the most slices a window may be cut into for the
// sliced path: a key's state holds up to this many accumulators, read and
// written whole.
const maxSlicesPerWindow = 32

// slicedHop reports whether w, a HOP or TUMBLE on state, takes the sliced
// path with exact-merging accumulators, and its slice length (ms).
func slicedHop(w *windowSpec) (pane int64, ok bool) {
	if w.kind != "HOP" {
		return 0, false
	}
	size, slide := w.size.Milliseconds(), w.slide.Milliseconds()
	if size <= 0 || slide <= 0 || slide >= size {
		return 0, false
	}
	pane = gcd(size, slide)
	if size/pane > maxSlicesPerWindow {
		return 0, false
	}
	return pane, true
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// stateSlicedProcess runs w's sliced function over ks (slicedHop said
// so): agg folds and merges the rows exactly, render makes a window's row
// from its key, accumulator and bounds (ms).
func stateSlicedProcess[K comparable, ACC any](b *builder, ks *weir.KeyedStream[K, types.Row], w *windowSpec, pane int64, agg weir.AggregateFunction[types.Row, ACC, ACC],
	render func(key K, acc ACC, start, end int64) types.Row) *weir.Stream[types.Row] {
	slicedPlans.Add(1)
	size, slide := w.size.Milliseconds(), w.slide.Milliseconds()
	off := mod(w.offset.Milliseconds(), slide) // as weir's WithOffset
	return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[K, types.Row, types.Row] {
		return &slicedStateFn[K, ACC]{size: size, slide: slide, pane: pane, off: off, agg: agg, render: render}
	}, b.uid("window-agg-sliced"))
}

// keySlices is a key's state on the sliced path: its open slices, by end,
// and the end of the window its timer fires (ms).
type keySlices[ACC any] struct {
	Next   int64
	Slices []sliceAcc[ACC]
}

// sliceAcc is a slice's accumulator; the slice is [End-pane, End).
type sliceAcc[ACC any] struct {
	End int64
	Acc ACC
}

// slicedStateFn is a HOP aggregation per key over slices (see above).
type slicedStateFn[K comparable, ACC any] struct {
	size, slide, pane, off int64 // ms; off: windows start at off modulo slide
	agg                    weir.AggregateFunction[types.Row, ACC, ACC]
	render                 func(K, ACC, int64, int64) types.Row
	st                     *weir.ValueState[K, keySlices[ACC]]
	// the batch's keys: cache indexes dirty
	cache map[K]int32
	dirty []dirtySlices[K, ACC]
}

// dirtySlices is a key's state in the batch, to write back.
type dirtySlices[K comparable, ACC any] struct {
	ref weir.KeyRef[K]
	ks  keySlices[ACC]
}

func (f *slicedStateFn[K, ACC]) Open(rc *weir.RuntimeContext[K]) error {
	f.st = weir.NewValueState[keySlices[ACC]](rc, "slices")
	f.cache = map[K]int32{}
	return nil
}

// firstEnd is the end of the first window that holds the slice ending at
// sliceEnd and has not fired at watermark wm (ms). Window ends are
// off + size modulo slide.
func (f *slicedStateFn[K, ACC]) firstEnd(sliceEnd, wm int64) int64 {
	e := sliceEnd + mod(f.off+f.size-sliceEnd, f.slide)
	if e-1 <= wm {
		// (wm - (e-1)) / slide + 1 slides later is the first with e-1 > wm
		e += ((wm-(e-1))/f.slide + 1) * f.slide
	}
	return e
}

func (f *slicedStateFn[K, ACC]) ProcessElement(ctx *weir.KeyedContext[K, types.Row], in types.Row) error {
	ts := ctx.Timestamp().UnixMilli()
	wm := watermarkMillis(ctx.Watermark())
	// the latest window holding ts; if it fired, so did every other one:
	// the row is late, dropped and counted (as alignedStateFn)
	if last := ts - mod(ts-f.off, f.slide); last+f.size-1 <= wm {
		ctx.DropLate()
		return nil
	}
	sliceEnd := ts - mod(ts-f.off, f.pane) + f.pane
	var d *dirtySlices[K, ACC]
	if i, ok := f.cache[ctx.Key()]; ok {
		d = &f.dirty[i]
	} else {
		ks, _ := f.st.Value()
		f.cache[ctx.Key()] = int32(len(f.dirty))
		f.dirty = append(f.dirty, dirtySlices[K, ACC]{ref: ctx.KeyRef(), ks: ks})
		d = &f.dirty[len(f.dirty)-1]
	}
	ss := d.ks.Slices
	// the slice, or where it goes: rows come mostly in time order, so
	// from the latest slice back
	i := len(ss)
	for i > 0 && ss[i-1].End > sliceEnd {
		i--
	}
	if i > 0 && ss[i-1].End == sliceEnd {
		ss[i-1].Acc = f.agg.Add(ss[i-1].Acc, in)
	} else {
		d.ks.Slices = slices.Insert(ss, i, sliceAcc[ACC]{End: sliceEnd, Acc: f.agg.Add(f.agg.Create(), in)})
	}
	// the key's timer fires the first open window holding any of its
	// slices
	if e := f.firstEnd(sliceEnd, wm); len(ss) == 0 || e < d.ks.Next {
		if len(ss) > 0 {
			ctx.DeleteEventTimeTimer(time.UnixMilli(d.ks.Next - 1))
		}
		ctx.RegisterEventTimeTimer(time.UnixMilli(e - 1))
		d.ks.Next = e
	}
	return nil
}

func (f *slicedStateFn[K, ACC]) OnTimer(ctx *weir.KeyedContext[K, types.Row], t time.Time) error {
	end := t.UnixMilli() + 1
	// within a batch, the key's state may be the batch's; after it (the
	// batch's watermark), it is in the state
	var ks keySlices[ACC]
	i, cached := f.cache[ctx.Key()]
	if cached {
		ks = f.dirty[i].ks
	} else {
		ks, _ = f.st.Value()
	}
	if len(ks.Slices) == 0 || ks.Next != end {
		return nil // not this key's timer (it registers one at a time)
	}
	// this window, and the key's next ones while the watermark has passed
	// them too: a timer registered for them would fire in this same
	// advance of the watermark (the heap operator fires them in it too)
	wm := watermarkMillis(ctx.Watermark())
	for {
		f.fire(ctx, &ks, end)
		if len(ks.Slices) == 0 {
			break
		}
		// the next window holding a slice: the one after this, or the
		// first of the earliest slice left
		end = max(end+f.slide, f.firstEnd(ks.Slices[0].End, end-1))
		if end-1 > wm {
			ks.Next = end
			ctx.RegisterEventTimeTimer(time.UnixMilli(end - 1))
			break
		}
	}
	switch {
	case cached:
		f.dirty[i].ks = ks
	case len(ks.Slices) == 0:
		f.st.Clear()
	default:
		f.st.Update(ks)
	}
	return nil
}

// fire emits the window ending at end from the key's slices ks (if any
// row reached it) and drops the slices that no later window holds.
func (f *slicedStateFn[K, ACC]) fire(ctx *weir.KeyedContext[K, types.Row], ks *keySlices[ACC], end int64) {
	// the window [end-size, end): the slices ending in (end-size, end]
	acc, seen := f.agg.Create(), false
	for _, s := range ks.Slices {
		if s.End > end-f.size && s.End <= end {
			acc, seen = f.agg.Merge(acc, s.Acc), true
		}
	}
	if seen {
		// stamped end - 1, as the heap operator stamps a window's row
		ctx.SetKey(ctx.KeyRef(), time.UnixMilli(end-1))
		ctx.Emit(f.render(ctx.Key(), acc, end-f.size, end))
	}
	n := 0
	for n < len(ks.Slices) && ks.Slices[n].End <= end+f.slide-f.size {
		n++
	}
	ks.Slices = slices.Delete(ks.Slices, 0, n)
}

// EndBatch writes the batch's keys' slices back to the state.
func (f *slicedStateFn[K, ACC]) EndBatch(ctx *weir.KeyedContext[K, types.Row]) error {
	ts := ctx.Timestamp()
	for i := range f.dirty {
		d := &f.dirty[i]
		ctx.SetKey(d.ref, ts)
		if len(d.ks.Slices) == 0 {
			f.st.Clear()
		} else {
			f.st.Update(d.ks)
		}
		*d = dirtySlices[K, ACC]{}
	}
	f.dirty = f.dirty[:0]
	clear(f.cache)
	return nil
}
