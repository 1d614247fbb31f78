package engine

import (
	"context"
	"fmt"
	"reflect"
	"runtime/trace"
	"time"
	"unsafe"

	"github.com/weirstream/weir/internal/codec"
	"github.com/weirstream/weir/internal/prefetch"
)

// Asynchronous snapshots of heap state. A barrier stops the operator's task
// while the operator snapshots; encoding a large state there (hundreds of
// MiB for q5 or q7 of Nexmark) held every record behind it for hundreds of
// milliseconds at each checkpoint, which made most of the tail latency. An
// operator whose state is made of values that cannot change behind its back
// instead copies its entries (a flat copy, no encoding: at the barrier, or
// copy-on-write after it for the general window operator, barrierDeferred)
// and leaves the encoding to the checkpoint coordinator's goroutine
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

// A deferred encoding rests after every restEvery entries for encodeRest
// times as long as they took: it takes at most a third of a core while it
// runs, and three times as long. It runs beside the tasks, on the same
// cores; at full speed the encodings of a large keyed state would hold a
// core after every barrier and leave the pipeline no spare capacity to
// work off the records queued behind the barrier, so the slowest rows
// would come at the end of the encoding, not of the barrier. A checkpoint
// completes later by as much; a run with no spare core either way does the
// same work.
const (
	restEvery  = 4096
	encodeRest = 2
)

// deferEncode adds a deferred state file to s. When the coordinator
// resolves it, ready (if not nil) waits until the copy is complete; walk
// then passes every entry of the copy to add with its key group; release
// (if not nil) then drops the copy's references, whether or not the
// encoding failed.
func deferEncode[E any](s *taskSnapshot, info opInfo, wm int64, g *codec.GroupWriter[E], ready func() error, walk func(add func(int, *E)), release func()) {
	s.Deferred = append(s.Deferred, func() (opState, error) {
		if ready != nil {
			if err := ready(); err != nil {
				return opState{}, err
			}
		}
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
		n, start := 0, time.Now()
		walk(func(kg int, e *E) {
			if n++; n == restEvery {
				// Rest for encodeRest times as long as the last
				// restEvery entries took.
				time.Sleep(time.Since(start) * encodeRest)
				n, start = 0, time.Now()
			}
			g.Add(kg, e)
		})
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
// every key's windows are copied into one array and their encoding is
// deferred.
//
// A whole copy at the barrier would make every record queued behind the
// barrier wait for it, and with hundreds of thousands of open sessions a
// subtask (Nexmark q11) even a prefetched copy, near the memory's
// bandwidth, is a stop that shows in the slowest rows. So the barrier only
// lists the keys' arena slots (the table's values, read in order; no key's
// state is read) and the copy is made copy-on-write, as Flink's heap
// backend makes its snapshots:
//
//   - the barrier starts an epoch; a key created from now on has the new
//     epoch, and one whose epoch is behind is still to be copied;
//   - before the task changes a key that is still to be copied (an event
//     for it, a firing, a removal, a timer's flags), it copies the key
//     first (copyKey), so the copy holds what the barrier saw;
//   - after every input batch (and while the task waits for input), the
//     task loop's processing-time tick copies the next copyStep keys of
//     the list that are still to be copied (copySome), so a record waits
//     for one step at most, not for the whole copy;
//   - the deferred encoding, on the coordinator's goroutine, waits until
//     the copy is done (genCopy.done), then encodes it as before.
//
// A state of at most copyStep keys is copied at the barrier whole, as is
// what an earlier barrier's copy left when a new barrier comes (its
// checkpoint was aborted: nothing waits for it, and the arrays are
// reused), and what is left when the input ends (finish).
func (op *genWindowOp[K, T, ACC, OUT, R]) barrierDeferred(b *barrierMsg, s *taskSnapshot) error {
	op.copyRest()
	// The arrays are reused; when they are too small they are replaced
	// with headroom, not grown by slices.Grow, which would copy the old
	// array whole in the barrier while a state grows. A key has one window
	// or more, so wins may still
	// grow by append; the entries hold indexes into it, not pointers
	// (genKeyCopy), so they stay right in the grown array.
	nkeys := op.keys.Len()
	keys, entries, wins := op.snapKeys[:0], op.snapCopy[:0], op.snapWins[:0]
	if cap(keys) < nkeys {
		keys = make([]int32, 0, nkeys+nkeys/4)
	}
	if cap(entries) < nkeys {
		entries = make([]genKeyCopy[K], 0, nkeys+nkeys/4)
	}
	if cap(wins) < nkeys {
		wins = make([]genWinEntry[ACC, OUT], 0, nkeys+nkeys/4)
	}
	op.keys.AllPrefetch(func(_ uint64, _ K, p *int32) bool {
		keys = append(keys, *p)
		return true
	})
	op.snapKeys, op.snapCopy, op.snapWins = keys, entries, wins
	op.epoch++
	op.copyPos = 0
	c := &genCopy[K, ACC, OUT]{done: make(chan struct{})}
	op.copying = c
	if nkeys <= copyStep {
		op.copyRest()
	}
	maxP, stopped, name := op.info.maxP, op.stopped, op.info.name
	deferEncode(s, op.info, op.wm, &op.snap, func() error {
		select {
		case <-c.done:
			return nil
		case <-stopped:
			return fmt.Errorf("weir: snapshot of %s: the task stopped before it copied its state", name)
		}
	}, func(add func(int, *genEntry[K, ACC, OUT])) {
		var e genEntry[K, ACC, OUT]
		for i := range c.entries {
			k := &c.entries[i]
			e = genEntry[K, ACC, OUT]{Hash: k.hash, Key: k.key, Wins: c.wins[k.from:k.to:k.to]}
			add(int(k.hash%maxP), &e)
		}
	}, func() {
		// Drop the copy's references (accumulators and results that
		// hold pointers) until the next barrier fills the arrays again.
		clear(c.entries)
		clear(c.wins)
	})
	return op.winOut.forwardBarrier(b, s)
}

// copyStep is how many keys of a deferred snapshot's list the task copies
// after an input batch (copySome): sized so that a step costs about one
// batch's work even for scattered keys (a cache miss each), so a large
// state is copied over many batches instead of in one stop.
const copyStep = 2048

// genCopy is a deferred snapshot's copy while the task makes it: the task
// closes done when the copy is complete, after it set entries and wins
// (the operator's arrays, which it appends to until then).
type genCopy[K comparable, ACC, OUT any] struct {
	done    chan struct{}
	entries []genKeyCopy[K]
	wins    []genWinEntry[ACC, OUT]
}

// copySome copies the next n keys of the list that are still to be
// copied, and completes the copy at the list's end.
func (op *genWindowOp[K, T, ACC, OUT, R]) copySome(n int) {
	keys := op.snapKeys
	end := min(op.copyPos+n, len(keys))
	pf := !op.noPrefetch
	for i := op.copyPos; i < end; i++ {
		if pf {
			op.prefetchKeyCopy(keys, i)
		}
		op.own(op.arena.at(keys[i]))
	}
	op.copyPos = end
	if end < len(keys) {
		return
	}
	op.snapKeys = keys[:0]
	c := op.copying
	c.entries, c.wins = op.snapCopy, op.snapWins
	op.copying = nil
	close(c.done)
}

// own makes ks the task's to change: if the snapshot being copied still
// needs ks as the barrier saw it, ks is copied first.
func (op *genWindowOp[K, T, ACC, OUT, R]) own(ks *gkey[K, ACC, OUT]) {
	if ks.epoch != op.epoch {
		op.copyKey(ks)
	}
}

// copyKey adds ks, as it is, to the copy of the current epoch's snapshot.
func (op *genWindowOp[K, T, ACC, OUT, R]) copyKey(ks *gkey[K, ACC, OUT]) {
	ks.epoch = op.epoch
	from := len(op.snapWins)
	op.snapWins = op.appendEntries(op.snapWins, ks)
	op.snapCopy = append(op.snapCopy, genKeyCopy[K]{ks.hash, ks.key, uint32(from), uint32(len(op.snapWins))})
}

// appendEntries appends ks's windows, as a snapshot stores them, to dst.
// It reads them without winsOf, whose list of an inline window (op.one) a
// caller of own may be holding.
func (op *genWindowOp[K, T, ACC, OUT, R]) appendEntries(dst []genWinEntry[ACC, OUT], ks *gkey[K, ACC, OUT]) []genWinEntry[ACC, OUT] {
	if ks.more != 0 {
		for _, w := range op.lists[ks.more-1] {
			dst = append(dst, w.entry())
		}
	} else if ks.firstLive {
		dst = append(dst, ks.first.entry())
	}
	return dst
}

// finish completes a deferred snapshot's copy before the input's end goes
// downstream: nothing ticks the task after it.
func (op *genWindowOp[K, T, ACC, OUT, R]) finish() error {
	op.copyRest()
	return op.winOut.finish()
}

// copyRest completes the copy in progress, if any.
func (op *genWindowOp[K, T, ACC, OUT, R]) copyRest() {
	if op.copying != nil {
		op.copySome(len(op.snapKeys))
	}
}

// prefetchKeyCopy asks for the memory the barrier's copy of keys[i+pfKeys]
// and keys[i+pfEvents] will read: the first key's object (its first window
// inline in it), and the second's windows where they are not inline (a
// key's second and later windows: hopping windows, a session opened beside
// another); the second's object arrived by then, so reading its window
// pointers does not wait.
func (op *genWindowOp[K, T, ACC, OUT, R]) prefetchKeyCopy(keys []int32, i int) {
	if j := i + pfKeys; j < len(keys) {
		prefetch.Lines(uintptr(unsafe.Pointer(op.arena.at(keys[j]))), unsafe.Sizeof(gkey[K, ACC, OUT]{}))
	}
	if j := i + pfEvents; j < len(keys) {
		ks := op.arena.at(keys[j])
		if ks.more == 0 {
			return // no window but the inline one
		}
		for _, w := range op.lists[ks.more-1] {
			if w != &ks.first {
				prefetch.Lines(uintptr(unsafe.Pointer(w)), unsafe.Sizeof(gwin[ACC, OUT]{}))
			}
		}
	}
}
