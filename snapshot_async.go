package weir

import (
	"context"
	"fmt"
	"reflect"
	"runtime/trace"

	"github.com/weirstream/weir/internal/codec"
)

// Asynchronous snapshots of heap state. A barrier stops the operator's task
// while the operator snapshots; encoding a large state there (hundreds of
// MiB for q5 or q7 of Nexmark) held every record behind it for hundreds of
// milliseconds at each checkpoint, which made most of the tail latency. An
// operator whose state is made of values that cannot change behind its back
// instead copies its entries at the barrier (a flat copy, no encoding) and
// leaves the encoding to the checkpoint coordinator's goroutine
// (coordinator.TaskSnapshot.Deferred), as Flink's heap backend does its
// synchronous copy-on-write part and its asynchronous write.

// shareable reports whether a copy of a value of type t shares nothing
// mutable with the original: t holds no pointers, or only strings (which
// Go never changes in place). Slices, maps, pointers, interfaces, channels
// and functions may be changed through, so a value holding one is not
// shareable: its operator encodes at the barrier, as before.
func shareable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return t.Len() == 0 || shareable(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !shareable(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// AppendOnlyAccumulator is an optional interface of an AggregateFunction
// whose accumulators hold slices that are only ever appended to: Add,
// Merge and Result never change an element below a slice's length (they
// append, or build a new slice), and nothing else changes them either
// (results are only read downstream). Then a window operator's checkpoint
// copies the accumulators as they are (slice headers, not elements) at the
// barrier and encodes them off the task: what the barrier saw is the
// prefix each header covers, and appends after it write past that prefix.
// Without the interface, an accumulator holding a slice is encoded at the
// barrier, which stops the task for as long as the encoding takes. Slices
// may hold slices, with the same promise for the inner ones; maps and
// pointers still encode at the barrier.
type AppendOnlyAccumulator interface {
	// AppendOnlyAccumulator marks the promise; it is never called.
	AppendOnlyAccumulator()
}

// appendShareable is shareable, with slices allowed (of appendShareable
// elements): the types whose values an append-only accumulator may hold.
func appendShareable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Slice:
		return appendShareable(t.Elem())
	case reflect.Array:
		return t.Len() == 0 || appendShareable(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !appendShareable(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return shareable(t)
}

// deferrable reports whether a window operator of agg, keyed by K, may
// copy its state at the barrier and encode it later: its keys,
// accumulators and results share nothing mutable, or agg promises
// append-only accumulators whose slices hold nothing mutable.
// out is the type of the results kept in the state (the accumulator's for
// an operator that keeps none).
func deferrable(agg any, k, acc, out reflect.Type) bool {
	if !shareable(k) {
		return false
	}
	if shareable(acc) && shareable(out) {
		return true
	}
	_, appendOnly := agg.(AppendOnlyAccumulator)
	return appendOnly && appendShareable(acc) && appendShareable(out)
}

// The copies are reused from one checkpoint to the next (fewer large
// allocations, less GC): the coordinator encodes checkpoint n's copy before
// it triggers checkpoint n+1 (one checkpoint in flight; an aborted one's
// copy is never encoded), and barrier n+1 reaches the operator only after
// that, through channels, so the copy is free again by then.

// deferKeyedState adds a deferred state file to s: the entries, copied at
// the barrier, are encoded by key group when the coordinator resolves it.
// kg gives an entry's key group. g must be used by nothing else but such
// deferred encodings (the coordinator runs them one at a time).
//
// After the encoding, the entries are cleared, and release (if not nil)
// clears what else the copy refers to: an append-only accumulator's
// events should not stay alive until the next checkpoint.
func deferKeyedState[E any](s *taskSnapshot, info opInfo, wm int64, g *codec.GroupWriter[E], entries []E, kg func(*E) int, release func()) {
	deferEncode(s, info, wm, g, func(add func(int, *E)) {
		for i := range entries {
			add(kg(&entries[i]), &entries[i])
		}
	}, func() {
		// Drop the copy's references (append-only accumulators' slices)
		// so that fired windows' events do not stay alive until the next
		// checkpoint; the next barrier fills the array again.
		clear(entries)
		if release != nil {
			release()
		}
	})
}

// deferEncode adds a deferred state file to s: walk, run when the
// coordinator resolves it, passes every entry of the barrier's copy to add
// with its key group; release (if not nil) then drops the copy's
// references, whether or not the encoding failed.
func deferEncode[E any](s *taskSnapshot, info opInfo, wm int64, g *codec.GroupWriter[E], walk func(add func(int, *E)), release func()) {
	s.Deferred = append(s.Deferred, func() (opState, error) {
		if trace.IsEnabled() {
			defer trace.StartRegion(context.Background(), "deferred-encode").End()
		}
		// The key groups' buffers are written again by the next
		// checkpoint's encoding: it runs on the same goroutine after this
		// checkpoint was written (the state file streams them to disk;
		// group mode's changelog hashes them and copies them into its
		// records before Persist returns), so nothing reads them by then.
		// Fresh buffers were zeroed and faulted in at every checkpoint.
		g.Reuse = true
		g.Start(int(info.maxP))
		walk(g.Add)
		groups, err := g.Finish()
		if release != nil {
			release()
		}
		if err != nil {
			return opState{}, fmt.Errorf("weir: snapshot of %s: %w", info.name, err)
		}
		st := info.state(wm)
		st.Groups = groups
		return st, nil
	})
}

// barrierDeferred is the barrier of a general window operator (sessions,
// triggers, lateness) whose keys, accumulators and results are shareable:
// it copies every key's windows into one array and defers their encoding.
func (op *genWindowOp[K, T, ACC, OUT, R]) barrierDeferred(b *barrierMsg, s *taskSnapshot) error {
	// One walk over the keys (a counting walk first cost as much again:
	// the walk is bound by reading each key's state). The arrays are
	// reused; when they are too small they are replaced with headroom, not
	// grown by slices.Grow, which would copy the old array whole (q11's
	// trace showed that copy in the barrier while its sessions grew). A
	// key has one window or more, so wins may still grow by append: the
	// entries taken before then keep pointing into the old array, which
	// the clear of the entries after encoding lets go.
	nkeys := op.keys.Len()
	entries, wins := op.snapCopy[:0], op.snapWins[:0]
	if cap(entries) < nkeys {
		entries = make([]genEntry[K, ACC, OUT], 0, nkeys+nkeys/4)
	}
	if cap(wins) < nkeys {
		wins = make([]genWinEntry[ACC, OUT], 0, nkeys+nkeys/4)
	}
	op.keys.All(func(_ uint64, _ K, p **gkey[K, ACC, OUT]) bool {
		ks := *p
		from := len(wins)
		for _, w := range ks.wins {
			wins = append(wins, genWinEntry[ACC, OUT]{w.start, w.end, w.acc, w.count, w.fired, w.dirty, w.last, w.early, w.lateTimer, w.procTimer})
		}
		entries = append(entries, genEntry[K, ACC, OUT]{Hash: ks.hash, Key: ks.key, Wins: wins[from:len(wins):len(wins)]})
		return true
	})
	op.snapCopy, op.snapWins = entries, wins
	maxP := op.info.maxP
	deferKeyedState(s, op.info, op.wm, &op.snap, entries, func(e *genEntry[K, ACC, OUT]) int { return int(e.Hash % maxP) },
		func() { clear(wins) })
	return op.winOut.forwardBarrier(b, s)
}
