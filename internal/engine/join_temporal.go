package engine

import (
	"slices"
	"time"
)

// TemporalJoin joins each probe event with the version of its key's row
// that was valid at the probe's event time (Flink's event-time temporal
// join, `JOIN versions FOR SYSTEM_TIME AS OF probe.t`): versions is the
// changelog of a table whose rows are identified by the key, stamped with
// the event time at which each change took effect. The version valid at t
// is the value of the latest change at or before t: an Insert or
// UpdateAfter sets it, a Delete or UpdateBefore ends it. fn gets the
// probe and that version, or an empty Opt when there was none (the
// probe is always emitted, as SQL's LEFT JOIN of a temporal table; filter
// afterwards for the inner join). Changes of one key at the same time
// count in their arrival order, so an UpdateBefore/UpdateAfter pair
// leaves the new value.
//
// A probe waits in keyed state until the watermark (the smaller of both
// inputs') passes its time, so that every version at or before it has
// arrived; the result then does not depend on how the two inputs
// interleave. Results carry the probe's time. A probe below the
// watermark when it arrives is late: it is dropped and counted in
// weir_late_records_dropped_total. Versions are kept until the watermark
// makes them useless: of the versions at or before the watermark, only
// the one still valid stays, and none when that is a deletion, so state
// is the table's current rows plus what changed within the watermark's
// lag. A late version (below the watermark) still counts for the probes
// not yet joined.
func TemporalJoin[K comparable, L, R, OUT any](probe *KeyedStream[K, L], versions *KeyedStream[K, Change[R]],
	fn func(key K, l L, r Opt[R]) OUT, opts ...OperatorOption) *Stream[OUT] {
	ks := connectTwo(probe, versions, "TemporalJoin")
	return ProcessWith(ks, func() KeyedProcessFunction[K, tagged[L, Change[R]], OUT] {
		return &temporalJoin[K, L, R, OUT]{fn: fn}
	}, append([]OperatorOption{Name("TemporalJoin")}, opts...)...)
}

type temporalJoin[K comparable, L, R, OUT any] struct {
	fn       func(K, L, Opt[R]) OUT
	probes   *MapState[K, int64, []L]    // event time -> probes waiting at that time
	versions *MapState[K, int64, Opt[R]] // event time -> the row from then on (none: deleted)
	times    []int64
}

func (f *temporalJoin[K, L, R, OUT]) Open(rc *RuntimeContext[K]) error {
	f.probes = NewMapState[int64, []L](rc, "probes")
	f.versions = NewMapState[int64, Opt[R]](rc, "versions")
	return nil
}

func (f *temporalJoin[K, L, R, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in tagged[L, Change[R]]) error {
	t := ctx.op.curTS
	if in.IsRight {
		v := None[R]()
		if in.Right.Adds() {
			v = Some(in.Right.Value)
		}
		f.versions.Put(t, v)
		// Compact once the watermark has passed this version.
		ctx.RegisterEventTimeTimer(time.UnixMilli(t + 1))
		return nil
	}
	if t < ctx.op.wm {
		ctx.op.m.LateDropped.Add(1)
		return nil
	}
	ps, _ := f.probes.Get(t)
	f.probes.Put(t, append(ps, in.Left))
	// A version at t itself may still come while the watermark is t.
	ctx.RegisterEventTimeTimer(time.UnixMilli(t + 1))
	return nil
}

// at returns the version valid at t.
func (f *temporalJoin[K, L, R, OUT]) at(t int64) Opt[R] {
	best, found := int64(0), false
	var v Opt[R]
	for vt, r := range f.versions.All() {
		if vt <= t && (!found || vt > best) {
			best, found, v = vt, true, r
		}
	}
	return v
}

// OnTimer joins the probes the watermark has passed and drops the versions
// no later probe can see.
func (f *temporalJoin[K, L, R, OUT]) OnTimer(ctx *KeyedContext[K, OUT], at time.Time) error {
	upto, key := at.UnixMilli()-1, ctx.Key()
	f.times = f.times[:0]
	for t := range f.probes.All() {
		if t <= upto {
			f.times = append(f.times, t)
		}
	}
	slices.Sort(f.times)
	for _, t := range f.times {
		ps, _ := f.probes.Get(t)
		r := f.at(t)
		for _, p := range ps {
			ctx.emitAt(f.fn(key, p, r), t)
		}
		f.probes.Remove(t)
	}
	// Probes still to come are after upto: they see the version valid at
	// upto or later ones.
	f.times = f.times[:0]
	best, found := int64(0), false
	for vt := range f.versions.All() {
		if vt <= upto {
			f.times = append(f.times, vt)
			if !found || vt > best {
				best, found = vt, true
			}
		}
	}
	if !found {
		return nil
	}
	for _, vt := range f.times {
		if vt != best {
			f.versions.Remove(vt)
		}
	}
	if v, _ := f.versions.Get(best); !v.OK {
		f.versions.Remove(best) // a deletion with nothing before it is no row
	}
	return nil
}

// TemporalJoinProcTime joins each probe event with the current version of
// its key's row when the probe arrives (Flink's processing-time temporal
// join, `FOR SYSTEM_TIME AS OF PROCTIME()`; Kafka Streams' KStream-KTable
// join): for streams without meaningful event time, or where "the table
// as it is now" is the intended answer. versions is applied as it
// arrives, one row per key (an Insert or UpdateAfter sets it, a Delete or
// UpdateBefore clears it), and only the current row is kept. fn gets an
// empty Opt when the key has no row. Results carry the probe's time and
// depend on how the two inputs interleave: a replay may join differently.
func TemporalJoinProcTime[K comparable, L, R, OUT any](probe *KeyedStream[K, L], versions *KeyedStream[K, Change[R]],
	fn func(key K, l L, r Opt[R]) OUT, opts ...OperatorOption) *Stream[OUT] {
	ks := connectTwo(probe, versions, "TemporalJoinProcTime")
	return ProcessWith(ks, func() KeyedProcessFunction[K, tagged[L, Change[R]], OUT] {
		return &procTemporalJoin[K, L, R, OUT]{fn: fn}
	}, append([]OperatorOption{Name("TemporalJoinProcTime")}, opts...)...)
}

type procTemporalJoin[K comparable, L, R, OUT any] struct {
	fn  func(K, L, Opt[R]) OUT
	row *ValueState[K, R]
}

func (f *procTemporalJoin[K, L, R, OUT]) Open(rc *RuntimeContext[K]) error {
	f.row = NewValueState[R](rc, "row")
	return nil
}

func (f *procTemporalJoin[K, L, R, OUT]) ProcessElement(ctx *KeyedContext[K, OUT], in tagged[L, Change[R]]) error {
	if in.IsRight {
		if in.Right.Adds() {
			f.row.Update(in.Right.Value)
		} else {
			f.row.Clear()
		}
		return nil
	}
	v, ok := f.row.Value()
	ctx.Emit(f.fn(ctx.Key(), in.Left, Opt[R]{v, ok}))
	return nil
}
