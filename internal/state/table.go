package state

import "fmt"

// table is an open-addressing hash table keyed by a precomputed hash:
// linear probing, power-of-two capacity, load factor at most 1/2,
// backward-shift deletion (no tombstones), entries stored inline. It is
// internal/hashtable plus what state needs and a window operator does not:
//
//   - the zero value is an empty table that allocates on first insert, so
//     the many key groups of a store that never see a key cost nothing;
//   - iteration survives removal of the entry being visited (MapState.All
//     lets the caller remove the current entry, TTL pruning removes
//     expired entries while walking);
//   - slot-level access for the resumable incremental TTL cleanup.
//
// Iteration order depends only on the sequence of inserts and deletes, so a
// replayed input sees the same order.
type table[K comparable, V any] struct {
	slots []slot[K, V]
	mask  uint64
	used  int
}

type slot[K comparable, V any] struct {
	hash uint64
	full bool
	key  K
	val  V
}

// index spreads the hash over the slots. Keys of one table share their key
// group, that is their hash modulo the max parallelism (the low bits when it
// is a power of two), so the slot comes from the high bits.
func (t *table[K, V]) index(hash uint64) uint64 {
	return (hash * 0x9e3779b97f4a7c15 >> 32) & t.mask
}

// find returns the slot index of key, or -1.
func (t *table[K, V]) find(hash uint64, key K) int {
	if t.used == 0 {
		return -1
	}
	i := t.index(hash)
	for {
		s := &t.slots[i]
		if !s.full {
			return -1
		}
		if s.hash == hash && s.key == key {
			return int(i)
		}
		i = (i + 1) & t.mask
	}
}

// get returns the value of key, or nil. The pointer is valid until the next
// insert or delete.
func (t *table[K, V]) get(hash uint64, key K) *V {
	if i := t.find(hash, key); i >= 0 {
		return &t.slots[i].val
	}
	return nil
}

// upsert returns the slot index of key, inserting it with the zero value if
// it is absent; inserted tells which.
func (t *table[K, V]) upsert(hash uint64, key K) (i int, inserted bool) {
	if (t.used+1)*2 > len(t.slots) {
		t.grow()
	}
	j := t.index(hash)
	for {
		s := &t.slots[j]
		if !s.full {
			s.full, s.hash, s.key = true, hash, key
			t.used++
			return int(j), true
		}
		if s.hash == hash && s.key == key {
			return int(j), false
		}
		j = (j + 1) & t.mask
	}
}

// delete removes key if present.
func (t *table[K, V]) delete(hash uint64, key K) bool {
	i := t.find(hash, key)
	if i < 0 {
		return false
	}
	t.deleteAt(i)
	return true
}

// deleteAt empties slot i and shifts the following entries of its cluster
// back while that keeps them reachable from their home slot. Entries only
// ever move to an earlier position of the same cluster.
func (t *table[K, V]) deleteAt(at int) {
	i := uint64(at)
	j := i
	for {
		j = (j + 1) & t.mask
		s := &t.slots[j]
		if !s.full {
			break
		}
		home := t.index(s.hash)
		// s may move to i if i lies cyclically in [home, j).
		if (j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j)) {
			t.slots[i] = *s
			i = j
		}
	}
	var zero slot[K, V]
	t.slots[i] = zero
	t.used--
}

func (t *table[K, V]) grow() {
	old := t.slots
	c := 16
	if len(old) > 0 {
		c = 2 * len(old)
	}
	t.slots = make([]slot[K, V], c)
	t.mask = uint64(c - 1)
	t.used = 0
	for i := range old {
		s := &old[i]
		if !s.full {
			continue
		}
		j := t.index(s.hash)
		for t.slots[j].full {
			j = (j + 1) & t.mask
		}
		t.slots[j] = *s
		t.used++
	}
}

// all calls yield for each entry until it returns false, and reports
// whether it ran to the end. yield may delete the entry it is given, and
// update values in place; other inserts or deletes during the walk may make
// it skip or repeat entries.
//
// The walk starts after an empty slot, so no cluster wraps around its
// start: a deletion only moves entries of the current cluster that lie
// ahead of the hole, which the walk has not visited yet. When the visited
// slot changed during yield, the walk looks at it again.
func (t *table[K, V]) all(yield func(hash uint64, key K, v *V) bool) bool {
	if t.used == 0 {
		return true
	}
	n := len(t.slots)
	start := 0
	for t.slots[start].full {
		start++ // load <= 1/2: an empty slot exists
	}
	for k := 1; k <= n; k++ {
		i := (start + k) & int(t.mask)
		for {
			if i >= len(t.slots) { // the table was reset or shrunk by yield
				return true
			}
			s := &t.slots[i]
			if !s.full {
				break
			}
			h, key := s.hash, s.key
			if !yield(h, key, &s.val) {
				return false
			}
			if s = &t.slots[i]; !s.full || s.hash != h || s.key != key {
				continue // deleted; an entry from further on may have moved here
			}
			break
		}
	}
	return true
}

// reset empties the table and releases its memory.
func (t *table[K, V]) reset() { *t = table[K, V]{} }

// groups is a store's data: one table per key group of the backend's range,
// so that a snapshot or a rescale can take key groups one at a time. The
// key group comes from the key's hash (never from the table's combined
// key-and-namespace hash).
type groups[K comparable, V any] struct {
	tabs  []table[K, V]
	first int    // first key group of the range
	maxp  uint64 // max parallelism: key group = hash mod maxp
	mask  uint64 // maxp-1 when maxp is a power of two
	pow2  bool

	// Incremental cleanup cursor: the next slot to examine.
	ckg, cslot int
}

func newGroups[K comparable, V any](r KeyGroupRange, maxParallelism int) groups[K, V] {
	mp := uint64(maxParallelism)
	return groups[K, V]{
		tabs:  make([]table[K, V], r.End-r.Start),
		first: r.Start,
		maxp:  mp,
		mask:  mp - 1,
		pow2:  mp&(mp-1) == 0,
	}
}

// of returns the table of the key group of keyHash.
func (g *groups[K, V]) of(keyHash uint64) *table[K, V] {
	var kg uint64
	if g.pow2 {
		kg = keyHash & g.mask
	} else {
		kg = keyHash % g.maxp
	}
	i := int(kg) - g.first
	if uint(i) >= uint(len(g.tabs)) {
		outOfRange(keyHash, int(kg), g.first, g.first+len(g.tabs))
	}
	return &g.tabs[i]
}

// group returns the table of key group kg, or nil when kg is not in range.
func (g *groups[K, V]) group(kg int) *table[K, V] {
	i := kg - g.first
	if i < 0 || i >= len(g.tabs) {
		return nil
	}
	return &g.tabs[i]
}

func outOfRange(hash uint64, kg, start, end int) {
	panic(fmt.Sprintf("state: key hash %#x is in key group %d, outside this backend's key groups [%d, %d)", hash, kg, start, end))
}

// len is the number of entries over all key groups, expired ones included.
func (g *groups[K, V]) len() int {
	n := 0
	for i := range g.tabs {
		n += g.tabs[i].used
	}
	return n
}

// sweep is one step of incremental cleanup: it examines the next n slots
// from the cursor (an empty table counts as one) and deletes the entries
// for which clean reports true. The cursor wraps around, so every entry is
// examined again and again as long as the store is accessed. Deletion can
// move an unexamined entry behind the cursor or an examined one ahead of
// it: cleanup is best effort, and expiry on access stays the rule.
func (g *groups[K, V]) sweep(n int, clean func(v *V) bool) {
	if len(g.tabs) == 0 {
		return
	}
	kg, i := g.ckg, g.cslot
	for n > 0 {
		if kg >= len(g.tabs) {
			kg = 0
		}
		t := &g.tabs[kg]
		if t.used == 0 || i >= len(t.slots) {
			kg, i = kg+1, 0
			n--
			continue
		}
		for ; n > 0 && i < len(t.slots); n-- {
			s := &t.slots[i]
			if s.full && clean(&s.val) {
				t.deleteAt(i) // an entry may have moved here: look again
				continue
			}
			i++
		}
	}
	g.ckg, g.cslot = kg, i
}
