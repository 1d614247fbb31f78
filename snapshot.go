package weir

import (
	"fmt"
	"time"

	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/watermark"
)

// opInfo identifies an operator subtask in a snapshot.
type opInfo struct {
	uid, name            string
	subtask, parallelism int
	maxP                 uint64
}

func newOpInfo(st *subtask, n *node) opInfo {
	return opInfo{uid: n.uid, name: n.name, subtask: st.index, parallelism: n.parallelism, maxP: uint64(st.cfg().maxParallelism)}
}

func (i opInfo) state(wm int64) opState {
	return opState{UID: i.uid, Name: i.name, Subtask: i.subtask, Parallelism: i.parallelism, Watermark: wm}
}

// encodeGroups encodes per-key-group entry lists into st.Groups.
func encodeGroups[E any](st *opState, groups map[int][]E) error {
	st.Groups = make(map[int][]byte, len(groups))
	for kg, es := range groups {
		data, err := encode(es)
		if err != nil {
			return err
		}
		st.Groups[kg] = data
	}
	return nil
}

// eachEntry decodes the per-key-group entry lists of a restore and calls
// fn for every entry.
func eachEntry[E any](groups [][]byte, fn func(E)) error {
	for _, data := range groups {
		if len(data) > 0 && data[0] == magicGroup {
			if err := eachBinaryEntry(data, fn); err != nil {
				return err
			}
			continue
		}
		var es []E
		if err := decode(data, &es); err != nil {
			return err
		}
		for _, e := range es {
			fn(e)
		}
	}
	return nil
}

// restoredState is the state a job restores from: every operator subtask's
// state of one checkpoint or savepoint, by operator UID.
type restoredState struct {
	id   int64
	path string
	// ck is the checkpoint, for restores that read more of its files
	// (incremental Pebble state).
	ck  *checkpoint.Checkpoint
	ops map[string][]opState
	// commits are the committables of two-phase-commit sinks, by UID.
	commits map[string][][]byte
}

// keyed returns what subtask st of node n restores: the encoded entries of
// every key group it owns, from whichever old subtasks had them, and the
// watermark to start from (the minimum of theirs: exact when parallelism
// did not change, conservative otherwise).
func (st *subtask) restoreKeyed(n *node) (wm int64, groups [][]byte, ok bool) {
	r := st.plan.restored
	if r == nil {
		return watermark.Min, nil, false
	}
	old, found := r.ops[n.uid]
	if !found {
		return watermark.Min, nil, false
	}
	maxP := st.cfg().maxParallelism
	lo, hi := keygroup.Range(st.index, n.parallelism, maxP)
	wm = watermark.Max
	for _, s := range old {
		contributes := false
		for kg, data := range s.Groups {
			if kg >= lo && kg < hi {
				groups = append(groups, data)
				contributes = true
			}
		}
		// Incremental Pebble state: the key groups with entries are
		// listed with the database's files, which the backend restored.
		if data, ok := s.Meta[incMetaKey]; ok {
			var d incDesc
			if decode(data, &d) == nil {
				for _, kg := range d.NonEmpty {
					contributes = contributes || kg >= lo && kg < hi
				}
			}
		}
		// An old subtask with no state in our range still bounds the
		// watermark when the parallelism is unchanged (it is us).
		if contributes || (s.Subtask == st.index && s.Parallelism == n.parallelism) {
			wm = min(wm, s.Watermark)
		}
	}
	if wm == watermark.Max {
		wm = watermark.Min
		for _, s := range old {
			wm = max(wm, s.Watermark)
		}
	}
	if wm == watermark.Max {
		// Taken after the end of the input (a final checkpoint): new input
		// starts a new stream of time, as after Flink's stop --drain.
		wm = watermark.Min
	}
	return wm, groups, true
}

// restoreMeta returns the merged non-keyed state of node n (for sources:
// split positions by split ID) and the minimum watermark.
func (st *subtask) restoreMeta(n *node) (map[string][]byte, bool) {
	r := st.plan.restored
	if r == nil {
		return nil, false
	}
	old, found := r.ops[n.uid]
	if !found {
		return nil, false
	}
	out := map[string][]byte{}
	for _, s := range old {
		for k, v := range s.Meta {
			out[k] = v
		}
	}
	return out, true
}

// ---- aligned windows ----

type alignedEntry[K comparable, ACC any] struct {
	Start, End int64
	Hash       uint64
	Key        K
	Acc        ACC
}

func (op *alignedWindowOp[K, T, ACC, OUT]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if c := codecFor[alignedEntry[K, ACC]](); c != nil {
		// The binary codec: entries go straight into their group's buffer.
		g := &op.snap
		g.start(c, int(op.info.maxP))
		var e alignedEntry[K, ACC]
		for _, bk := range op.buckets {
			e.Start, e.End = bk.start, bk.end
			bk.tab.All(func(h uint64, k K, acc *ACC) bool {
				e.Hash, e.Key, e.Acc = h, k, *acc
				g.add(int(h%op.info.maxP), &e)
				return true
			})
		}
		st := op.info.state(op.wm)
		st.Groups = g.finish()
		s.states = append(s.states, st)
		return op.winOut.forwardBarrier(b, s)
	}
	groups := map[int][]alignedEntry[K, ACC]{}
	for _, bk := range op.buckets {
		bk.tab.All(func(h uint64, k K, acc *ACC) bool {
			kg := int(h % op.info.maxP)
			groups[kg] = append(groups[kg], alignedEntry[K, ACC]{bk.start, bk.end, h, k, *acc})
			return true
		})
	}
	st := op.info.state(op.wm)
	if err := encodeGroups(&st, groups); err != nil {
		return err
	}
	s.states = append(s.states, st)
	return op.winOut.forwardBarrier(b, s)
}

func (op *alignedWindowOp[K, T, ACC, OUT]) restore(wm int64, groups [][]byte) error {
	op.wm, op.sentWM = wm, wm
	return eachEntry(groups, func(e alignedEntry[K, ACC]) {
		p, _ := op.bucket(e.Start, e.End).tab.Upsert(e.Hash, e.Key)
		*p = e.Acc
	})
}

// ---- general windows ----

type genEntry[K comparable, ACC, OUT any] struct {
	Hash uint64
	Key  K
	Wins []genWinEntry[ACC, OUT]
}

type genWinEntry[ACC, OUT any] struct {
	Start, End                  int64
	Acc                         ACC
	Count                       int64
	Fired, Dirty                bool
	Last                        OUT
	Early, LateTimer, ProcTimer bool
}

func (op *genWindowOp[K, T, ACC, OUT, R]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if c := codecFor[genEntry[K, ACC, OUT]](); c != nil {
		g := &op.snap
		g.start(c, int(op.info.maxP))
		var e genEntry[K, ACC, OUT]
		op.keys.All(func(h uint64, _ K, p **gkey[K, ACC, OUT]) bool {
			ks := *p
			e.Hash, e.Key, e.Wins = ks.hash, ks.key, e.Wins[:0]
			for _, w := range ks.wins {
				e.Wins = append(e.Wins, genWinEntry[ACC, OUT]{w.start, w.end, w.acc, w.count, w.fired, w.dirty, w.last, w.early, w.lateTimer, w.procTimer})
			}
			g.add(int(h%op.info.maxP), &e)
			return true
		})
		clear(e.Wins[:cap(e.Wins)])
		st := op.info.state(op.wm)
		st.Groups = g.finish()
		s.states = append(s.states, st)
		return op.winOut.forwardBarrier(b, s)
	}
	groups := map[int][]genEntry[K, ACC, OUT]{}
	op.keys.All(func(h uint64, _ K, p **gkey[K, ACC, OUT]) bool {
		ks := *p
		e := genEntry[K, ACC, OUT]{Hash: ks.hash, Key: ks.key}
		for _, w := range ks.wins {
			e.Wins = append(e.Wins, genWinEntry[ACC, OUT]{w.start, w.end, w.acc, w.count, w.fired, w.dirty, w.last, w.early, w.lateTimer, w.procTimer})
		}
		kg := int(h % op.info.maxP)
		groups[kg] = append(groups[kg], e)
		return true
	})
	st := op.info.state(op.wm)
	if err := encodeGroups(&st, groups); err != nil {
		return err
	}
	s.states = append(s.states, st)
	return op.winOut.forwardBarrier(b, s)
}

// restore rebuilds the windows and derives their timers again: timers are
// a function of the windows, the trigger and the clock, so they are not
// stored.
func (op *genWindowOp[K, T, ACC, OUT, R]) restore(wm int64, groups [][]byte) error {
	op.wm, op.emitWM, op.sentWM = wm, wm, wm
	now := op.now()
	return eachEntry(groups, func(e genEntry[K, ACC, OUT]) {
		ks := &gkey[K, ACC, OUT]{key: e.Key, hash: e.Hash}
		p, _ := op.keys.Upsert(e.Hash, e.Key)
		*p = ks
		for _, we := range e.Wins {
			w := &gwin[ACC, OUT]{start: we.Start, end: we.End, acc: we.Acc, count: we.Count, fired: we.Fired,
				dirty: we.Dirty, last: we.Last, early: we.Early, lateTimer: we.LateTimer, procTimer: we.ProcTimer}
			ks.wins = append(ks.wins, w)
			op.addWin(ks, w)
			if w.early {
				op.procTimer(ks, w, tEarly, now+op.trig.early)
			}
			if w.lateTimer {
				op.procTimer(ks, w, tLate, now+op.trig.late)
			}
			if w.procTimer {
				op.procTimer(ks, w, tProcFire, w.end-1)
			}
		}
	})
}

// ---- sliding (over) windows ----

type overEntry[K comparable, T any] struct {
	Hash    uint64
	Key     K
	Ts      []int64
	Vals    []T
	Emitted int
}

func (op *overOp[K, T, ACC, OUT]) barrier(b *barrierMsg, s *taskSnapshot) error {
	if c := codecFor[overEntry[K, T]](); c != nil {
		g := &op.snap
		g.start(c, int(op.info.maxP))
		var e overEntry[K, T]
		op.keys.All(func(h uint64, _ K, p **overKey[K, T]) bool {
			k := *p
			e.Hash, e.Key, e.Emitted, e.Ts, e.Vals = k.hash, k.key, k.emitted, e.Ts[:0], e.Vals[:0]
			for _, ev := range k.events {
				e.Ts = append(e.Ts, ev.ts)
				e.Vals = append(e.Vals, ev.val)
			}
			g.add(int(h%op.info.maxP), &e)
			return true
		})
		clear(e.Vals[:cap(e.Vals)])
		st := op.info.state(op.wm)
		st.Groups = g.finish()
		s.states = append(s.states, st)
		return op.winOut.forwardBarrier(b, s)
	}
	groups := map[int][]overEntry[K, T]{}
	op.keys.All(func(h uint64, _ K, p **overKey[K, T]) bool {
		k := *p
		e := overEntry[K, T]{Hash: k.hash, Key: k.key, Emitted: k.emitted}
		for _, ev := range k.events {
			e.Ts = append(e.Ts, ev.ts)
			e.Vals = append(e.Vals, ev.val)
		}
		kg := int(h % op.info.maxP)
		groups[kg] = append(groups[kg], e)
		return true
	})
	st := op.info.state(op.wm)
	if err := encodeGroups(&st, groups); err != nil {
		return err
	}
	s.states = append(s.states, st)
	return op.winOut.forwardBarrier(b, s)
}

func (op *overOp[K, T, ACC, OUT]) restore(wm int64, groups [][]byte) error {
	op.wm, op.emitWM, op.sentWM = wm, wm, wm
	return eachEntry(groups, func(e overEntry[K, T]) {
		k := &overKey[K, T]{key: e.Key, hash: e.Hash, emitted: e.Emitted}
		for i := range e.Ts {
			k.events = append(k.events, overEvent[T]{e.Ts[i], e.Vals[i]})
		}
		p, _ := op.keys.Upsert(e.Hash, e.Key)
		*p = k
		if len(k.events) > 0 {
			op.schedule(k)
		}
	})
}

// describeOperatorState describes the non-keyed part of one state file of a
// checkpoint, for `weir checkpoints inspect`: for a source, each split's
// position and watermark. It returns nil for data it cannot read.
func describeOperatorState(data []byte) []string {
	var st opState
	if decode(data, &st) != nil {
		return nil
	}
	var out []string
	for id, raw := range st.Meta {
		var ss splitState
		if decode(raw, &ss) != nil {
			continue
		}
		pos := fmt.Sprintf("%x", ss.Pos)
		var i int64
		if decode(ss.Pos, &i) == nil {
			pos = fmt.Sprint(i)
		}
		if ss.Done {
			pos = "end"
		}
		out = append(out, fmt.Sprintf("split %s at %s (watermark %s)", id, pos, fmtMillis(ss.WM)))
	}
	return out
}

func fmtMillis(ms int64) string {
	switch ms {
	case watermark.Min:
		return "none"
	case watermark.Max:
		return "end of input"
	}
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}
