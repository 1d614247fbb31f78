package engine

import (
	"sync"
	"unsafe"
)

// CoGroup's lists of each side's events, cut from slabs. Firing a window
// of Nexmark q8 calls CoGroup's function for every key of the window
// (tens of thousands at once), and two small lists allocated per key
// would dominate the time to fire. A slab serves many keys' lists; each
// list is a
// sub-slice whose capacity is its length, so the function may keep it or
// append to it (append copies it out) without touching another key's
// events. A slab is never reused: one is dropped when used up, and a list
// the function kept keeps its slab alive (at most coSlabBytes).

// coSlabBytes is the size of a slab: small enough that a list kept by the
// function does not hold much, large enough for hundreds of events.
const coSlabBytes = 16 << 10

// coSlabs is one goroutine's slabs for the lists of both sides. CoGroup's
// function is shared by its operator's subtasks, so slabs go through a
// sync.Pool: a subtask takes one for a key and puts it back.
type coSlabs[L, R any] struct {
	l []L
	r []R
}

type coSlabPool[L, R any] struct{ p sync.Pool }

func (p *coSlabPool[L, R]) get() *coSlabs[L, R] {
	if s, ok := p.p.Get().(*coSlabs[L, R]); ok {
		return s
	}
	return &coSlabs[L, R]{}
}

func (p *coSlabPool[L, R]) put(s *coSlabs[L, R]) { p.p.Put(s) }

// cut returns an empty list of capacity n from *slab, starting a new slab
// when it has too little left. A list larger than a quarter of a slab is
// allocated on its own.
func cut[T any](slab *[]T, n int) []T {
	if n == 0 {
		return nil
	}
	if n > len(*slab) {
		per := max(coSlabBytes/max(int(unsafe.Sizeof(*new(T))), 1), 16)
		if n > per/4 {
			return make([]T, 0, n)
		}
		*slab = make([]T, per)
	}
	s := (*slab)[:0:n]
	*slab = (*slab)[n:]
	return s
}

// split returns the events of each side of evs, in order, in lists cut
// from p's slabs. Sized once: growing the lists by append would repeat
// allocations and copies for every key, and firing every key of a window
// at once is what its rows wait for.
func (p *coSlabPool[L, R]) split(evs []tagged[L, R]) ([]L, []R) {
	nr := 0
	for i := range evs {
		if evs[i].IsRight {
			nr++
		}
	}
	sl := p.get()
	ls, rs := cut(&sl.l, len(evs)-nr), cut(&sl.r, nr)
	p.put(sl)
	for i := range evs {
		if evs[i].IsRight {
			rs = append(rs, evs[i].Right)
		} else {
			ls = append(ls, evs[i].Left)
		}
	}
	return ls, rs
}
