package engine

import (
	"fmt"
	"time"
)

// OuterJoinKind says which sides of an outer join keep their events that
// found no partner.
type OuterJoinKind uint8

const (
	// LeftOuter keeps left events without a partner (SQL's LEFT OUTER JOIN).
	LeftOuter OuterJoinKind = iota + 1
	// RightOuter keeps right events without a partner.
	RightOuter
	// FullOuter keeps the events of both sides without a partner.
	FullOuter
)

func (k OuterJoinKind) String() string {
	switch k {
	case LeftOuter:
		return "LeftOuter"
	case RightOuter:
		return "RightOuter"
	case FullOuter:
		return "FullOuter"
	}
	return fmt.Sprintf("OuterJoinKind(%d)", uint8(k))
}

func (k OuterJoinKind) left() bool  { return k == LeftOuter || k == FullOuter }
func (k OuterJoinKind) right() bool { return k == RightOuter || k == FullOuter }

// OuterIntervalJoin is IntervalJoin that also keeps the events that found
// no partner (SQL's LEFT, RIGHT and FULL OUTER interval joins, Flink's
// TimeIntervalJoin). Pairs are emitted as IntervalJoin emits them, with
// both sides set. An event of a kept side that has joined nothing by the
// time no partner can come any more is emitted once with the other side
// empty: a left event at t when the watermark passes t+upper, a right
// event at t when it passes t-lower. The row carries that last time a
// partner could have had (for a left event, the later of t and t+upper),
// so it is not late for the windows downstream.
//
// State and lateness are as in IntervalJoin: events stay in keyed state,
// with a flag saying whether they have joined, until an event-time timer
// removes them; an event below the watermark when it arrives is dropped
// and counted in weir_late_records_dropped_total (Flink's SQL join emits a
// late event of an outer side at once with the other side empty instead).
func OuterIntervalJoin[K comparable, L, R, OUT any](left *KeyedStream[K, L], right *KeyedStream[K, R], lower, upper time.Duration,
	kind OuterJoinKind, fn func(key K, l Opt[L], r Opt[R]) OUT, opts ...OperatorOption) *Stream[OUT] {
	j := left.src.job
	lo, hi := lower.Milliseconds(), upper.Milliseconds()
	if lo > hi {
		j.fail(fmt.Errorf("weir: OuterIntervalJoin: lower bound %v is above upper bound %v", lower, upper))
	}
	if !kind.left() && !kind.right() {
		j.fail(fmt.Errorf("weir: OuterIntervalJoin: kind %v is not LeftOuter, RightOuter or FullOuter", kind))
	}
	ks := connectTwo(left, right, "OuterIntervalJoin")
	return ProcessWith(ks, func() KeyedProcessFunction[K, tagged[L, R], OUT] {
		return &outerIntervalJoin[K, L, R, OUT]{lower: lo, upper: hi, kind: kind, fn: fn}
	}, append([]OperatorOption{Name("OuterIntervalJoin")}, opts...)...)
}

// outerRow is an event buffered by OuterIntervalJoin, with whether it has
// joined. Fields are exported for the state snapshots.
type outerRow[T any] struct {
	V       T
	Matched bool
}

type outerIntervalJoin[K comparable, L, R, OUT any] struct {
	lower, upper int64
	kind         OuterJoinKind
	fn           func(K, Opt[L], Opt[R]) OUT
	left         *MapState[K, int64, []outerRow[L]] // event time -> events at that time
	right        *MapState[K, int64, []outerRow[R]]
	expired      []int64
	// touched lists the times whose events joined the one at hand: their
	// flags are set after the walk over the other side, so that the walk
	// never sees its own writes.
	touched []int64
}

func (f *outerIntervalJoin[K, L, R, OUT]) Open(rc *RuntimeContext[K]) error {
	f.left = NewMapState[int64, []outerRow[L]](rc, "left-buffer")
	f.right = NewMapState[int64, []outerRow[R]](rc, "right-buffer")
	return nil
}

// leftLast is the last time a right partner of a left event at t can
// have; the event expires one millisecond later (see intervalJoin).
func (f *outerIntervalJoin[K, L, R, OUT]) leftLast(t int64) int64  { return max(t, t+f.upper) }
func (f *outerIntervalJoin[K, L, R, OUT]) rightLast(t int64) int64 { return max(t, t-f.lower) }

// markMatched marks the events of the side at the given times as joined.
func markMatched[K comparable, T any](side *MapState[K, int64, []outerRow[T]], times []int64) {
	for _, t := range times {
		rows, _ := side.Get(t)
		if m, changed := markAll(rows); changed {
			side.Put(t, m)
		}
	}
}

// markAll returns rows with every row matched, and whether any was not: a
// copy, since the slice may be the state's own (a snapshot may hold it).
func markAll[T any](rows []outerRow[T]) ([]outerRow[T], bool) {
	i := 0
	for i < len(rows) && rows[i].Matched {
		i++
	}
	if i == len(rows) {
		return rows, false
	}
	out := make([]outerRow[T], len(rows))
	for k := range rows {
		out[k] = outerRow[T]{rows[k].V, true}
	}
	return out, true
}

func (f *outerIntervalJoin[K, L, R, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in tagged[L, R]) error {
	t := ctx.op.curTS
	if t < ctx.op.wm {
		ctx.op.m.LateDropped.Add(1)
		return nil
	}
	key := ctx.Key()
	if !in.IsRight {
		f.touched = f.touched[:0]
		for rt, rs := range f.right.All() {
			if rt < t+f.lower || rt > t+f.upper {
				continue
			}
			for _, r := range rs {
				ctx.emitAt(f.fn(key, Some(in.Left), Some(r.V)), max(t, rt))
			}
			f.touched = append(f.touched, rt)
		}
		matched := len(f.touched) > 0
		if f.kind.right() {
			markMatched(f.right, f.touched)
		}
		ls, _ := f.left.Get(t)
		f.left.Put(t, append(ls, outerRow[L]{in.Left, matched}))
		ctx.RegisterEventTimeTimer(time.UnixMilli(f.leftLast(t) + 1))
		return nil
	}
	f.touched = f.touched[:0]
	for lt, ls := range f.left.All() {
		if t < lt+f.lower || t > lt+f.upper {
			continue
		}
		for _, l := range ls {
			ctx.emitAt(f.fn(key, Some(l.V), Some(in.Right)), max(t, lt))
		}
		f.touched = append(f.touched, lt)
	}
	matched := len(f.touched) > 0
	if f.kind.left() {
		markMatched(f.left, f.touched)
	}
	rs, _ := f.right.Get(t)
	f.right.Put(t, append(rs, outerRow[R]{in.Right, matched}))
	ctx.RegisterEventTimeTimer(time.UnixMilli(f.rightLast(t) + 1))
	return nil
}

// OnTimer removes the events of the key that can no longer join, and emits
// those of a kept side that never did.
func (f *outerIntervalJoin[K, L, R, OUT]) OnTimer(ctx *KeyedContext[K, OUT], at time.Time) error {
	now, key := at.UnixMilli(), ctx.Key()
	f.expired = f.expired[:0]
	for t := range f.left.All() {
		if f.leftLast(t) < now {
			f.expired = append(f.expired, t)
		}
	}
	for _, t := range f.expired {
		if f.kind.left() {
			ls, _ := f.left.Get(t)
			for _, l := range ls {
				if !l.Matched {
					ctx.emitAt(f.fn(key, Some(l.V), None[R]()), f.leftLast(t))
				}
			}
		}
		f.left.Remove(t)
	}
	f.expired = f.expired[:0]
	for t := range f.right.All() {
		if f.rightLast(t) < now {
			f.expired = append(f.expired, t)
		}
	}
	for _, t := range f.expired {
		if f.kind.right() {
			rs, _ := f.right.Get(t)
			for _, r := range rs {
				if !r.Matched {
					ctx.emitAt(f.fn(key, None[L](), Some(r.V)), f.rightLast(t))
				}
			}
		}
		f.right.Remove(t)
	}
	return nil
}
