// Package hashtable is an open-addressing hash table for keyed operator
// state whose keys arrive with their hash already computed (the key-group
// partitioner hashed each key once; nothing downstream hashes it again).
//
// Linear probing, power-of-two capacity, load factor at most 1/2. Entries
// are stored inline, so a table of pointer-free keys and values is invisible
// to the garbage collector's scan. Iteration order depends only on the
// sequence of inserts, so a replayed input fires results in the same order.
package hashtable

// Table maps keys of type K to values of type V.
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

// Upsert returns a pointer to the value of key, inserting the zero value if
// it is absent; inserted tells which. The pointer is valid until the next
// Upsert.
func (t *Table[K, V]) Upsert(hash uint64, key K) (v *V, inserted bool) {
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
	i := t.index(hash)
	for {
		s := &t.slots[i]
		if !s.full {
			return nil
		}
		if s.hash == hash && s.key == key {
			return &s.val
		}
		i = (i + 1) & t.mask
	}
}

// Delete removes key if present (backward-shift deletion, no tombstones).
func (t *Table[K, V]) Delete(hash uint64, key K) bool {
	i := t.index(hash)
	for {
		s := &t.slots[i]
		if !s.full {
			return false
		}
		if s.hash == hash && s.key == key {
			break
		}
		i = (i + 1) & t.mask
	}
	// Shift following entries back into the hole while that keeps them
	// reachable from their home slot.
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
	return true
}

func (t *Table[K, V]) grow() {
	old := t.slots
	t.alloc(len(old) * 2)
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

// Reset empties the table and keeps its memory for reuse.
func (t *Table[K, V]) Reset() {
	if t.used == 0 {
		return
	}
	clear(t.slots)
	t.used = 0
}
