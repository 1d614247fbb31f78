package engine

// keyArena holds the general window operator's key states (gkey) in chunks
// of arenaChunk that never move; a state is named by its index (its slot)
// and the slot's generation. The hash table maps a key to its slot, the
// event-time heap and the timer queues hold slots, and a deferred
// snapshot's list of the keys to copy is slots: none of them holds a
// pointer, so the garbage collector does not read them, and with a key,
// accumulator and result without pointers (Nexmark q11) the chunks are not
// read either. Were every open key an object of its own, pointed to from
// the table and the heap, each mark phase would follow two pointers per
// open key (hundreds of thousands of sessions a subtask in q11), slowing
// the rows processed meanwhile, and every key that went would be garbage
// whose replacement is a new allocation, driving the collector's cycles.
//
// A released slot is reused, last released first, by the next new key.
// What may still name it (an entry of the event-time heap superseded
// later, a queued timer of a purged window) carries the generation it was
// queued with, and is void when the slot's generation moved on. Memory is
// not given back when the number of keys falls: the chunks stay for the
// keys to come, as Flink's heap state keeps its tables' capacity.
type keyArena[K comparable, ACC, OUT any] struct {
	chunks [][]gkey[K, ACC, OUT]
	n      int32   // slots handed out so far
	free   []int32 // released slots
}

// arenaShift sets the chunk size: 4096 states, ~0.5 MB for q11's.
const (
	arenaShift = 12
	arenaChunk = 1 << arenaShift
)

// at is the state in slot id.
func (a *keyArena[K, ACC, OUT]) at(id int32) *gkey[K, ACC, OUT] {
	return &a.chunks[id>>arenaShift][id&(arenaChunk-1)]
}

// keyRef names a key's state in the arena: its slot, and the slot's
// generation when the reference was taken.
type keyRef struct {
	id  int32
	gen uint32
}

// live is the state r names, or nil if r's key went (the slot's generation
// moved on, whether or not another key holds it now).
func (a *keyArena[K, ACC, OUT]) live(r keyRef) *gkey[K, ACC, OUT] {
	if ks := a.at(r.id); ks.ref.gen == r.gen {
		return ks
	}
	return nil
}

// alloc returns an empty state in a free slot, its ref set.
func (a *keyArena[K, ACC, OUT]) alloc() *gkey[K, ACC, OUT] {
	var id int32
	if n := len(a.free); n > 0 {
		id, a.free = a.free[n-1], a.free[:n-1]
	} else {
		if int(a.n>>arenaShift) == len(a.chunks) {
			a.chunks = append(a.chunks, make([]gkey[K, ACC, OUT], arenaChunk))
		}
		id = a.n
		a.n++
	}
	ks := a.at(id)
	ks.ref.id = id
	return ks
}

// release gives ks's slot back: the state is cleared (nothing it held is
// kept alive) and its generation moves on. epoch is the operator's: a
// deferred snapshot still copying (copySome) finds the slot in its list
// and must take it as copied, which it is (remove owns a key before it
// deletes it).
func (a *keyArena[K, ACC, OUT]) release(ks *gkey[K, ACC, OUT], epoch uint64) {
	r := ks.ref
	r.gen++
	*ks = gkey[K, ACC, OUT]{ref: r, epoch: epoch}
	a.free = append(a.free, r.id)
}

// len is the number of slots holding a key.
func (a *keyArena[K, ACC, OUT]) len() int { return int(a.n) - len(a.free) }
