package state

import (
	"fmt"

	"github.com/weirstream/weir/internal/hashtable"
)

// table is a hash table of a store, keyed by a precomputed hash. Its zero
// value is an empty table that allocates on first insert, so the many key
// groups of a store that never see a key cost nothing; Walk lets the caller
// delete the visited entry (MapState.All removes the current entry, TTL
// pruning removes expired entries while walking). Iteration order depends
// only on the sequence of inserts and deletes, so a replayed input sees the
// same order.
type table[K comparable, V any] = hashtable.Table[K, V]

// upsert returns the value of key, inserting the zero value if it is
// absent; inserted tells which. It grows a table that is half full before
// looking, whether or not key is present, as state tables always have (the
// table layout, hence iteration order, depends on when tables grow).
func upsert[K comparable, V any](t *table[K, V], hash uint64, key K) (v *V, inserted bool) {
	t.Reserve(1)
	return t.Upsert(hash, key)
}

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
		n += g.tabs[i].Len()
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
		var done bool
		if i, n, done = g.tabs[kg].Sweep(i, n, clean); done {
			kg++
		}
	}
	g.ckg, g.cslot = kg, i
}
