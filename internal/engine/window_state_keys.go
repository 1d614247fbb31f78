package engine

import (
	"slices"
	"time"
)

// keyWindows keeps each key's open windows (W: a session window's or a
// trigger window's state, window_state.go, window_state_process.go,
// window_state_trigger.go) as one list in a ValueState. The first event of
// a batch for a key reads the list; the batch changes it in place, and
// EndBatch writes each list it touched back once (writeBackWindows). A
// timer within the batch sees the batch's list (forTimer, putForTimer).
type keyWindows[K comparable, W any] struct {
	state *ValueState[K, []W]
	cache map[K]int32 // the batch's keys: their index in dirty
	dirty []keyWindowList[K, W]
}

// keyWindowList is a key's list in the batch, to write back.
type keyWindowList[K comparable, W any] struct {
	ref KeyRef[K]
	ws  []W
}

// open creates the state, named name (a checkpoint's name for it).
func (k *keyWindows[K, W]) open(rc *RuntimeContext[K], name string) {
	k.state = NewValueState[[]W](rc, name)
	k.cache = map[K]int32{}
}

// of returns the batch's list of the current key, whose KeyRef is ref,
// reading it from the state the first time.
func (k *keyWindows[K, W]) of(ref KeyRef[K]) *keyWindowList[K, W] {
	if i, ok := k.cache[ref.key]; ok {
		return &k.dirty[i]
	}
	ws, _ := k.state.Value()
	k.cache[ref.key] = int32(len(k.dirty))
	k.dirty = append(k.dirty, keyWindowList[K, W]{ref: ref, ws: ws})
	return &k.dirty[len(k.dirty)-1]
}

// forTimer returns the current key's list for a timer: the batch's if the
// batch touched the key (cached, at index i), else the state's. The timer
// hands it back with putForTimer.
func (k *keyWindows[K, W]) forTimer(key K) (ws []W, i int32, cached bool) {
	if i, cached = k.cache[key]; cached {
		return k.dirty[i].ws, i, true
	}
	ws, _ = k.state.Value()
	return ws, 0, false
}

// putForTimer keeps the list a timer changed: in the batch, or in the
// state (if changed).
func (k *keyWindows[K, W]) putForTimer(ws []W, i int32, cached, changed bool) {
	switch {
	case cached:
		k.dirty[i].ws = ws
	case !changed:
	case len(ws) == 0:
		k.state.Clear()
	default:
		k.state.Update(ws)
	}
}

// writeBackWindows writes the lists of the batch's keys back to the state
// (EndBatch).
func writeBackWindows[K comparable, W, OUT any](ctx *KeyedContext[K, OUT], k *keyWindows[K, W]) {
	ts := time.UnixMilli(ctx.op.curTS)
	for i := range k.dirty {
		d := &k.dirty[i]
		ctx.SetKey(d.ref, ts)
		if len(d.ws) == 0 {
			k.state.Clear()
		} else {
			k.state.Update(d.ws)
		}
		*d = keyWindowList[K, W]{}
	}
	k.dirty = k.dirty[:0]
	clear(k.cache)
}

// sessionPtr is a pointer to a key's open session (S: window_state.go's
// stateSession, window_state_process.go's procSession), for the merging
// both do alike.
type sessionPtr[S any] interface {
	*S
	bounds() (start, end int64)
}

// overlapping appends to merged the indexes of the sessions of ws that
// [start, end) overlaps or touches, and returns the bounds of their merge
// with it (open sessions are apart from one another, so one pass finds
// them all).
func overlapping[S any, P sessionPtr[S]](ws []S, start, end int64, merged []int) ([]int, int64, int64) {
	for i := range ws {
		if s, e := P(&ws[i]).bounds(); s <= end && start <= e {
			merged = append(merged, i)
			start, end = min(start, s), max(end, e)
		}
	}
	return merged, start, end
}

// dropMergedTimers deletes the event-time timers (at end-1 while the
// watermark wm is before it, and at end-1+late) of the sessions of ws at
// merged that no session needs once they merge into one ending at end.
func dropMergedTimers[K comparable, OUT, S any, P sessionPtr[S]](ctx *KeyedContext[K, OUT], ws []S, merged []int, end, wm, late int64) {
	// needs reports whether a session has a timer at t after the merge
	needs := func(t int64) bool {
		at := func(e int64) bool { return e-1 == t || late > 0 && e-1+late == t }
		if at(end) {
			return true
		}
		for i := range ws {
			if _, e := P(&ws[i]).bounds(); at(e) && !slices.Contains(merged, i) {
				return true
			}
		}
		return false
	}
	for _, i := range merged {
		_, e := P(&ws[i]).bounds()
		if e-1 > wm && !needs(e-1) {
			ctx.DeleteEventTimeTimer(time.UnixMilli(e - 1))
		}
		if late > 0 && !needs(e-1+late) {
			ctx.DeleteEventTimeTimer(time.UnixMilli(e - 1 + late))
		}
	}
}

// withoutMerged removes the sessions at merged from ws, in place.
func withoutMerged[S any](ws []S, merged []int) []S {
	keep := ws[:0]
	for i, w := range ws {
		if !slices.Contains(merged, i) {
			keep = append(keep, w)
		}
	}
	return keep
}
