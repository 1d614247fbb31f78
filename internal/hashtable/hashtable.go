// Package hashtable is an open-addressing hash table for keyed operator
// state whose keys arrive with their hash already computed (the key-group
// partitioner hashed each key once; nothing downstream hashes it again).
//
// Linear probing, power-of-two capacity, load factor at most 1/2. Entries
// are stored inline, so a table of pointer-free keys and values is invisible
// to the garbage collector's scan. Iteration order depends only on the
// sequence of inserts, so a replayed input fires results in the same order.
//
// Besides the map operations, a Table offers what keyed state needs: the
// zero value is an empty table that allocates on first insert, Walk
// survives deletion of the entry it visits, and entries are addressable by
// slot position (Find, At, DeleteAt) for a resumable incremental cleanup
// (Sweep).
package hashtable

// Table maps keys of type K to values of type V. The zero value is an empty
// table.
type Table[K comparable, V any] struct {
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

// New returns an empty table with room for about n entries.
func New[K comparable, V any](n int) *Table[K, V] {
	t := &Table[K, V]{}
	c := 16
	for c < 2*n {
		c <<= 1
	}
	t.alloc(c)
	return t
}

func (t *Table[K, V]) alloc(c int) {
	t.slots = make([]slot[K, V], c)
	t.mask = uint64(c - 1)
	t.used = 0
}

// Len is the number of entries.
func (t *Table[K, V]) Len() int { return t.used }

// index spreads the hash: the low bits of a key-group hash are correlated
// with the subtask (kg = hash mod 128 selects it), so use the high bits.
func (t *Table[K, V]) index(hash uint64) uint64 {
	return (hash * 0x9e3779b97f4a7c15 >> 32) & t.mask
}

// Reserve makes room for n more entries: the next n inserts do not grow
// the table.
func (t *Table[K, V]) Reserve(n int) {
	for (t.used+n)*2 > len(t.slots) {
		t.grow()
	}
}

// Upsert returns a pointer to the value of key, inserting the zero value if
// it is absent; inserted tells which. The pointer is valid until the next
// Upsert.
func (t *Table[K, V]) Upsert(hash uint64, key K) (v *V, inserted bool) {
	if t.slots == nil {
		t.grow()
	}
	i := t.index(hash)
	for {
		s := &t.slots[i]
		if !s.full {
			if (t.used+1)*2 > len(t.slots) {
				t.grow()
				return t.Upsert(hash, key)
			}
			s.full, s.hash, s.key = true, hash, key
			t.used++
			return &s.val, true
		}
		if s.hash == hash && s.key == key {
			return &s.val, false
		}
		i = (i + 1) & t.mask
	}
}

// Get returns the value of key, or nil.
func (t *Table[K, V]) Get(hash uint64, key K) *V {
	if i := t.Find(hash, key); i >= 0 {
		return &t.slots[i].val
	}
	return nil
}

// Find returns the slot position of key, or -1. The position is valid until
// the next insert or delete.
func (t *Table[K, V]) Find(hash uint64, key K) int {
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

// At returns the value at slot position i, a position of a present entry
// (from Find). The pointer is valid until the next insert or delete.
func (t *Table[K, V]) At(i int) *V { return &t.slots[i].val }

// Delete removes key if present (backward-shift deletion, no tombstones).
func (t *Table[K, V]) Delete(hash uint64, key K) bool {
	i := t.Find(hash, key)
	if i < 0 {
		return false
	}
	t.DeleteAt(i)
	return true
}

// DeleteAt removes the entry at slot position at, a position of a present
// entry. Entries that follow it in its cluster are shifted back while that
// keeps them reachable from their home slot, so an entry only ever moves to
// an earlier position of its cluster.
func (t *Table[K, V]) DeleteAt(at int) {
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

func (t *Table[K, V]) grow() {
	old := t.slots
	t.alloc(max(16, len(old)*2))
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

// All calls fn for each entry until fn returns false.
func (t *Table[K, V]) All(fn func(hash uint64, key K, v *V) bool) {
	for i := range t.slots {
		s := &t.slots[i]
		if s.full && !fn(s.hash, s.key, &s.val) {
			return
		}
	}
}

// Walk calls yield for each entry until it returns false, and reports
// whether it ran to the end. Unlike All, yield may delete the entry it is
// given (and update values in place); other inserts or deletes during the
// walk may make it skip or repeat entries.
//
// The walk starts after an empty slot, so no cluster wraps around its
// start: a deletion only moves entries of the current cluster that lie
// ahead of the hole, which the walk has not visited yet. When the visited
// slot changed during yield, the walk looks at it again.
func (t *Table[K, V]) Walk(yield func(hash uint64, key K, v *V) bool) bool {
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

// Sweep is one step of a resumable cleanup. From slot position at it
// examines up to budget slots and deletes the entries for which del
// reports true; it returns the position to resume from and the budget
// left. When the table is empty or at is past its last slot, it examines
// nothing, charges one unit of budget and reports done: the caller moves
// on (to the start of this table or to another one). Deletion can move an
// unexamined entry behind the cursor, or an examined one ahead of it.
func (t *Table[K, V]) Sweep(at, budget int, del func(v *V) bool) (next, left int, done bool) {
	if t.used == 0 || at >= len(t.slots) {
		return 0, budget - 1, true
	}
	i := at
	for ; budget > 0 && i < len(t.slots); budget-- {
		s := &t.slots[i]
		if s.full && del(&s.val) {
			t.DeleteAt(i) // an entry may have moved here: look again
			continue
		}
		i++
	}
	return i, budget, false
}

// Reset empties the table and keeps its memory for reuse.
func (t *Table[K, V]) Reset() {
	if t.used == 0 {
		return
	}
	clear(t.slots)
	t.used = 0
}
