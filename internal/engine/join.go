package engine

import (
	"fmt"
	"time"
)

// Joins of two keyed streams. Every join here is a keyed operator with two
// inputs: both streams are tagged with their side, merged into one keyed
// edge (Flink's CoGroup does the same with its TaggedUnion) and handled by
// the same machinery as Process or ProcessWindow, so joins checkpoint,
// restore at another parallelism and run on either state backend like any
// other keyed operator. The watermark of a join is the minimum of its two
// inputs' watermarks.
//
// Which join to use, as in Flink:
//
//   - WindowJoin / CoGroup: both sides cut into the same windows (tumbling,
//     hopping, session); a pair joins if the keys match and both fall in the
//     same window. State lives as long as the window.
//   - IntervalJoin: a pair joins if the keys match and the right time is
//     within [left+lower, left+upper]. State lives until the watermark
//     passes the interval.
//   - Join: a regular (unbounded) inner join: every pair with matching keys
//     and a true predicate, whenever its two sides arrive. State is kept
//     forever (Flink's default with no state TTL).
//   - JoinChanges: a regular inner join of changelog streams (inputs with
//     retractions, such as the results of AggregateChanges), emitting a
//     changelog.

// tagged carries a record of either input of a two-input keyed operator.
// Fields are exported for the state snapshots (gob).
type tagged[L, R any] struct {
	IsRight bool
	Left    L
	Right   R
}

// connectTwo merges two keyed streams into one keyed stream of tagged
// records, keyed by the same key.
func connectTwo[K comparable, L, R any](left *KeyedStream[K, L], right *KeyedStream[K, R], what string) *KeyedStream[K, tagged[L, R]] {
	j := left.src.job
	if right.src.job != j {
		j.fail(fmt.Errorf("weir: %s: streams of different jobs", what))
	}
	l := Map(left.src, func(v L) tagged[L, R] { return tagged[L, R]{Left: v} }, Name(what+"-left"))
	r := Map(right.src, func(v R) tagged[L, R] { return tagged[L, R]{IsRight: true, Right: v} }, Name(what+"-right"))
	lk, rk := left.key, right.key
	return &KeyedStream[K, tagged[L, R]]{
		src: Union(l, r),
		key: func(t tagged[L, R]) K {
			if t.IsRight {
				return rk(t.Right)
			}
			return lk(t.Left)
		},
		hash: left.hash,
	}
}

// CoGroup cuts both keyed streams into the same windows and calls fn once
// per key and window that has events on either side, with the events of
// each side in arrival order (Flink's coGroup). A side without events in
// the window gets an empty slice, so outer joins are built with CoGroup.
// Options are those of Window (AllowedLateness, Trigger) and of any
// operator (Name, UID, Parallelism); events late for every window they
// belong to are dropped and counted, as in a windowed aggregate. fn may
// keep the slices it is given and append to them; a kept slice may keep
// alive memory that other calls' slices were cut from (up to 16 KiB). On
// PebbleState, over event-time Tumbling, Hopping and Session windows with
// the default trigger, the windows' events are keyed state in Pebble, as
// for ProcessWindow (and so for WindowJoin).
func CoGroup[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], w Windows,
	fn func(key K, win WindowInfo, l []L, r []R, emit func(OUT)) error, opts ...WindowOption) *Stream[OUT] {
	ks := connectTwo(left, right, "CoGroup")
	ws := Window(ks, w, append([]WindowOption{Name("CoGroup")}, opts...)...)
	// The function below only reads a window's events (into the lists it
	// passes on), so its accumulators are append-only and a checkpoint
	// defers their encoding (readOnlyCollect).
	return processWindow(ws, coGroupFn(fn),
		AggregateFunction[tagged[L, R], []tagged[L, R], []tagged[L, R]](readOnlyCollect[tagged[L, R]]{}), nil)
}

// coGroupFn is CoGroup's window function: it splits a window's tagged
// events into the two sides' lists and calls fn.
func coGroupFn[K comparable, L, R, OUT any](fn func(key K, win WindowInfo, l []L, r []R, emit func(OUT)) error) func(K, WindowInfo, []tagged[L, R], func(OUT)) error {
	var slabs coSlabPool[L, R]
	return func(key K, win WindowInfo, evs []tagged[L, R], emit func(OUT)) error {
		ls, rs := slabs.split(evs)
		return fn(key, win, ls, rs, emit)
	}
}

// WindowJoin is the inner join of two keyed streams over windows (Flink's
// DataStream join ... window ... apply): fn is called for every pair of a
// left and a right event with the same key in the same window. A pair in
// several hopping windows is joined once per window. Results carry the
// window's last millisecond as their timestamp.
func WindowJoin[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], w Windows,
	fn func(key K, win WindowInfo, l L, r R) OUT, opts ...WindowOption) *Stream[OUT] {
	return CoGroup(left, right, w, func(key K, win WindowInfo, ls []L, rs []R, emit func(OUT)) error {
		for _, l := range ls {
			for _, r := range rs {
				emit(fn(key, win, l, r))
			}
		}
		return nil
	}, append([]WindowOption{Name("WindowJoin")}, opts...)...)
}

// IntervalJoin joins each left event at time t with every right event of
// the same key whose time lies in [t+lower, t+upper], bounds included
// (Flink's intervalJoin ... between(lower, upper)). lower must not exceed
// upper; both may be negative. A pair is emitted once, when its second
// event arrives, stamped with the later of the two times.
//
// Events are buffered in keyed state until the watermark passes the last
// time they can still match, then removed by an event-time timer. An event
// below the watermark when it arrives is late: it is dropped and counted
// (weir_late_records_dropped_total), as in Flink. weir removes a left event
// only once the watermark is beyond t+upper (Flink removes it at t+upper,
// which can miss a right event at exactly t+upper that is not late).
func IntervalJoin[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], lower, upper time.Duration,
	fn func(key K, l L, r R) OUT, opts ...OperatorOption) *Stream[OUT] {
	j := left.src.job
	lo, hi := lower.Milliseconds(), upper.Milliseconds()
	if lo > hi {
		j.fail(fmt.Errorf("weir: IntervalJoin: lower bound %v is above upper bound %v", lower, upper))
	}
	ks := connectTwo(left, right, "IntervalJoin")
	return ProcessWith(ks, func() KeyedProcessFunction[K, tagged[L, R], OUT] {
		return &intervalJoin[K, L, R, OUT]{lower: lo, upper: hi, fn: fn}
	}, append([]OperatorOption{Name("IntervalJoin")}, opts...)...)
}

type intervalJoin[K comparable, L, R, OUT any] struct {
	lower, upper int64
	fn           func(K, L, R) OUT
	left         *MapState[K, int64, []L] // event time -> events at that time
	right        *MapState[K, int64, []R]
	expired      []int64
}

func (f *intervalJoin[K, L, R, OUT]) Open(rc *RuntimeContext[K]) error {
	f.left = NewMapState[int64, []L](rc, "left-buffer")
	f.right = NewMapState[int64, []R](rc, "right-buffer")
	return nil
}

// leftExpiry is the first watermark at which a left event at t can no
// longer be joined: every right event it could match (up to t+upper) is
// then late. Likewise for a right event at t, whose partners are left
// events up to t-lower.
func (f *intervalJoin[K, L, R, OUT]) leftExpiry(t int64) int64  { return max(t, t+f.upper) + 1 }
func (f *intervalJoin[K, L, R, OUT]) rightExpiry(t int64) int64 { return max(t, t-f.lower) + 1 }

func (f *intervalJoin[K, L, R, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in tagged[L, R]) error {
	t := ctx.op.curTS
	if t < ctx.op.wm {
		ctx.op.m.LateDropped.Add(1)
		return nil
	}
	key := ctx.Key()
	if !in.IsRight {
		ls, _ := f.left.Get(t)
		f.left.Put(t, append(ls, in.Left))
		for rt, rs := range f.right.All() {
			if rt >= t+f.lower && rt <= t+f.upper {
				for _, r := range rs {
					ctx.emitAt(f.fn(key, in.Left, r), max(t, rt))
				}
			}
		}
		ctx.RegisterEventTimeTimer(time.UnixMilli(f.leftExpiry(t)))
		return nil
	}
	rs, _ := f.right.Get(t)
	f.right.Put(t, append(rs, in.Right))
	for lt, ls := range f.left.All() {
		if t >= lt+f.lower && t <= lt+f.upper {
			for _, l := range ls {
				ctx.emitAt(f.fn(key, l, in.Right), max(t, lt))
			}
		}
	}
	ctx.RegisterEventTimeTimer(time.UnixMilli(f.rightExpiry(t)))
	return nil
}

// OnTimer removes the events of the key that can no longer join.
func (f *intervalJoin[K, L, R, OUT]) OnTimer(ctx *KeyedContext[K, OUT], at time.Time) error {
	now := at.UnixMilli()
	f.expired = f.expired[:0]
	for t := range f.left.All() {
		if f.leftExpiry(t) <= now {
			f.expired = append(f.expired, t)
		}
	}
	for _, t := range f.expired {
		f.left.Remove(t)
	}
	f.expired = f.expired[:0]
	for t := range f.right.All() {
		if f.rightExpiry(t) <= now {
			f.expired = append(f.expired, t)
		}
	}
	for _, t := range f.expired {
		f.right.Remove(t)
	}
	return nil
}

// Join is the regular inner join of two keyed streams (a SQL join on the
// key without time bounds): every left and right event with the same key
// for which pred returns true yields fn's result once, when the later of
// the two arrives, stamped with the later of their event times. Both sides
// are kept in keyed state for ever (Flink's default without a state TTL)
// unless StateRetention bounds them, so use it where keys are bounded or
// the job is bounded; WindowJoin and IntervalJoin bound their state by
// event time. The output is append-only; for
// inputs with retractions use JoinChanges.
func Join[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R],
	fn func(key K, l L, r R) (OUT, bool), opts ...RetentionOption) *Stream[OUT] {
	return JoinWith(left, right, func() func(K, L, R) (OUT, bool) { return fn }, opts...)
}

// JoinWith is Join with a function made once per parallel subtask by
// newFn, so that it may keep memory of its own between calls (SQL's join
// reuses the rows it lends to the operator after it).
func JoinWith[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R],
	newFn func() func(key K, l L, r R) (OUT, bool), opts ...RetentionOption) *Stream[OUT] {
	ks := connectTwo(left, right, "Join")
	rest, ttl := retention(ks.src.job, "Join", opts)
	return ProcessWith(ks, func() KeyedProcessFunction[K, tagged[L, R], OUT] {
		return &regularJoin[K, L, R, OUT]{fn: newFn(), ttl: ttl}
	}, append([]OperatorOption{Name("Join")}, rest...)...)
}

// timed is a value with its event time (ms), as kept in a join's state.
type timed[T any] struct {
	V  T
	TS int64
}

type regularJoin[K comparable, L, R, OUT any] struct {
	fn    func(K, L, R) (OUT, bool)
	ttl   []StateOption
	left  *ListState[K, timed[L]]
	right *ListState[K, timed[R]]
}

func (f *regularJoin[K, L, R, OUT]) Open(rc *RuntimeContext[K]) error {
	f.left = NewListState[timed[L]](rc, "left", f.ttl...)
	f.right = NewListState[timed[R]](rc, "right", f.ttl...)
	return nil
}

func (f *regularJoin[K, L, R, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in tagged[L, R]) error {
	t, key := ctx.op.curTS, ctx.Key()
	if !in.IsRight {
		f.left.Add(timed[L]{in.Left, t})
		for r := range f.right.All() {
			if out, ok := f.fn(key, in.Left, r.V); ok {
				ctx.emitAt(out, max(t, r.TS))
			}
		}
		return nil
	}
	f.right.Add(timed[R]{in.Right, t})
	for l := range f.left.All() {
		if out, ok := f.fn(key, l.V, in.Right); ok {
			ctx.emitAt(out, max(t, l.TS))
		}
	}
	return nil
}
