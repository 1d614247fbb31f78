package weir

import (
	"runtime"
	"sync/atomic"
)

// Copy-on-write snapshots of the general window operator.
//
// The deferred snapshot (snapshot_async.go) first copied every key's
// windows into an array at the barrier, on the task: the copy read one
// scattered object per key, 100–300 ms for a few hundred thousand keys
// (Nexmark q8 and q11), and every record queued behind the barrier waited
// that long, which was most of their p99 latency.
//
// Now the barrier only lists the key objects (a walk of the hash table's
// slots, no key is read) and starts a new snapshot epoch; the checkpoint
// coordinator's goroutine, when it encodes the snapshot, walks the list
// and copies each key as it goes, while the task goes on. Each key object
// carries a word (gkey.cow) saying for which epoch it was copied, so that
// the two never both copy a key, and neither reads a key while the other
// changes it:
//
//   - before the task changes a key's stored state (an element added, a
//     window merged, fired, purged, removed, a timer flag cleared), it
//     copies the key into the snapshot's side first if the key's word is
//     behind the epoch (copy-before-write: the live objects keep their
//     identity, so timers that point at windows stay valid), and records
//     where the copy is in the word;
//   - the coordinator claims each listed key it reaches (a compare-and-swap
//     to cowBusy), copies it, and marks it copied; a key the task copied
//     first is taken from the task's copy instead. A task that meets a
//     claimed key waits the few hundred nanoseconds of one key's copy.
//
// Like Flink's CopyOnWriteStateMap (a shallow copy of the table at the
// snapshot, entries copied on their first write after it) the barrier is
// cheap and the copies are spread out; unlike it, the live objects are not
// the ones replaced (the snapshot's side gets the copies), because the
// operator's timers point at them. The coordinator encodes in the list's
// order, the table's order at the barrier, so the state file holds the
// bytes the synchronous snapshot writes.
//
// Keys created after the barrier start at the epoch (not in the snapshot);
// a key deleted after it was copied before (remove changes it), so the
// list's pointer to it still finds its copy. A key object must never be
// reused for another key while its word is behind the epoch.
//
// The coordinator encodes checkpoint n before it triggers n+1, and an
// aborted checkpoint's encoding never runs: the task may copy keys for an
// epoch that is never encoded (at most once each, until the next barrier),
// and when the next barrier comes nothing reads the last epoch's list or
// copies any more.

// cowBusy is a key's word while the coordinator copies it. Other words are
// epoch<<32 | j: copied for epoch, by the task into its copy j-1 (j > 0)
// or by the coordinator (j = 0), or created at that epoch. Epochs start at
// 1, so a word below the current epoch's (epoch<<32) is either busy or
// behind.
const cowBusy = 1

// cowWord is a key object's copy word.
type cowWord struct{ atomic.Uint64 }

// cowWalkHook, if set (tests), runs before the coordinator copies the i-th
// listed key.
var cowWalkHook func(i int)

// genCOW is the copy-on-write bookkeeping of a genWindowOp.
type genCOW[K comparable, ACC, OUT any] struct {
	// active: the last barrier's epoch may still be being copied, so the
	// task copies a key before it changes it (cowTouch).
	active bool
	epoch  uint64
	min    uint64 // epoch<<32: a key's word below it is behind or busy
	// done is the epoch whose encoding finished (set on the coordinator's
	// goroutine, read once per input batch).
	done atomic.Uint64
	// keys are the key objects at the barrier, in the table's order;
	// copies[:n] the task's copies, windows in wins. All are reused from
	// one checkpoint to the next.
	keys   []*gkey[K, ACC, OUT]
	copies []genEntry[K, ACC, OUT]
	n      int
	wins   []genWinEntry[ACC, OUT]
}

// cowNew marks a key object created now: not part of the last barrier's
// snapshot.
func (op *genWindowOp[K, T, ACC, OUT, R]) cowNew(ks *gkey[K, ACC, OUT]) {
	ks.cow.Store(op.cow.min)
}

// cowTouch copies ks into the snapshot's side if it has not been copied
// for the last barrier's epoch: the task calls it before any change to
// the state of ks that the snapshot stores.
func (op *genWindowOp[K, T, ACC, OUT, R]) cowTouch(ks *gkey[K, ACC, OUT]) {
	if op.cow.active && ks.cow.Load() < op.cow.min {
		op.cowCopy(ks)
	}
}

// cowPoll ends the copying once the coordinator has encoded the last
// snapshot: from then on every listed key is copied, and cowTouch need
// not look at keys' words.
func (op *genWindowOp[K, T, ACC, OUT, R]) cowPoll() {
	if op.cow.active && op.cow.done.Load() == op.cow.epoch {
		op.cow.active = false
	}
}

// winEntry is the stored form of w.
func winEntry[ACC, OUT any](w *gwin[ACC, OUT]) genWinEntry[ACC, OUT] {
	return genWinEntry[ACC, OUT]{w.start, w.end, w.acc, w.count, w.fired, w.dirty, w.last, w.early, w.lateTimer, w.procTimer}
}

// cowCopy is cowTouch's copy, on the task.
func (op *genWindowOp[K, T, ACC, OUT, R]) cowCopy(ks *gkey[K, ACC, OUT]) {
	c := &op.cow
	for {
		v := ks.cow.Load()
		if v >= c.min {
			return // the coordinator copied it meanwhile
		}
		if v == cowBusy {
			runtime.Gosched() // the coordinator is copying it
			continue
		}
		if ks.cow.CompareAndSwap(v, cowBusy) {
			break
		}
	}
	// At most one copy per listed key, and only listed keys are behind:
	// copies has room (a key object that is not listed is marked by cowNew).
	j := c.n
	c.n++
	from := len(c.wins)
	for _, w := range ks.wins {
		c.wins = append(c.wins, winEntry(w))
	}
	// c.wins may move to a larger array: the copies made so far keep the
	// old one, which nothing writes any more.
	c.copies[j] = genEntry[K, ACC, OUT]{Hash: ks.hash, Key: ks.key, Wins: c.wins[from:len(c.wins):len(c.wins)]}
	ks.cow.Store(c.min | uint64(j+1)) // publishes the copy to the coordinator
}

// barrierDeferred is the barrier of a general window operator (sessions,
// triggers, lateness) whose keys, accumulators and results are shareable:
// it lists the keys and starts an epoch; the coordinator copies and
// encodes them, the task copying first the keys it changes meanwhile.
func (op *genWindowOp[K, T, ACC, OUT, R]) barrierDeferred(b *barrierMsg, s *taskSnapshot) error {
	c := &op.cow
	// The last epoch's list and copies are free: its encoding is over or
	// will never run. Drop what an unencoded one still refers to (an
	// encoded one's release did).
	if c.done.Load() != c.epoch {
		clear(c.copies[:c.n])
		clear(c.wins)
		clear(c.keys[:cap(c.keys)])
	}
	c.wins = c.wins[:0]
	c.n = 0
	c.epoch++
	c.min = c.epoch << 32
	epoch, min := c.epoch, c.min
	nkeys := op.keys.Len()
	keys := c.keys[:0]
	if cap(keys) < nkeys {
		// Replaced with headroom rather than grown (a grown array is
		// copied whole).
		keys = make([]*gkey[K, ACC, OUT], 0, nkeys+nkeys/4)
		c.copies = make([]genEntry[K, ACC, OUT], cap(keys))
	}
	// The only walk on the task: the slots hold the key objects'
	// pointers, which are taken without reading the objects.
	op.keys.All(func(_ uint64, _ K, p **gkey[K, ACC, OUT]) bool {
		keys = append(keys, *p)
		return true
	})
	c.keys = keys
	c.active = len(keys) > 0
	copies := c.copies
	ncopies := 0 // the task's copies the walk found (they are copies[:ncopies])
	maxP := op.info.maxP
	g := &op.snap
	deferEncode(s, op.info, op.wm, g, func(add func(int, *genEntry[K, ACC, OUT])) {
		var e genEntry[K, ACC, OUT]
		ncopies = 0
		for i, ks := range keys {
			if cowWalkHook != nil {
				cowWalkHook(i)
			}
			kg := int(ks.hash % maxP)
			for {
				v := ks.cow.Load()
				if v == cowBusy {
					runtime.Gosched() // the task is copying it
					continue
				}
				if v >= min {
					// The task copied it before changing it (a listed key
					// is never marked without a copy: j > 0).
					j := int(v & (1<<32 - 1))
					ncopies = max(ncopies, j)
					add(kg, &copies[j-1])
					break
				}
				if !ks.cow.CompareAndSwap(v, cowBusy) {
					continue
				}
				e.Hash, e.Key, e.Wins = ks.hash, ks.key, reuse(g, e.Wins)
				for _, w := range ks.wins {
					e.Wins = append(e.Wins, winEntry(w))
				}
				ks.cow.Store(min) // the task may change it again
				add(kg, &e)
				break
			}
		}
		clear(e.Wins[:cap(e.Wins)])
	}, func() {
		// Every listed key is copied: the task writes no copy of this
		// epoch any more, and the next barrier comes after this. Drop the
		// references to fired windows' state and to deleted keys.
		for i := range copies[:ncopies] {
			clear(copies[i].Wins)
		}
		clear(copies[:ncopies])
		clear(keys)
		c.done.Store(epoch)
	})
	return op.winOut.forwardBarrier(b, s)
}
