// Package hashtable is an open-addressing hash table for keyed operator
// state whose keys arrive with their hash already computed (the key-group
// partitioner hashed each key once; nothing downstream hashes it again).
//
// Linear probing, power-of-two capacity, load factor at most 3/4. Entries
// are stored inline, so a table of pointer-free keys and values is invisible
// to the garbage collector's scan. Which slots are full is kept apart, one
// control byte a slot holding 7 bits of the hash: probing skips a slot of
// another key without reading it, slots are 24 bytes instead of 32 for
// 8-byte keys and values, and walking or resetting a table reads the dense
// control bytes, not every slot. Iteration order depends only on the
// sequence of inserts, so a replayed input fires results in the same order.
//
// Besides the map operations, a Table offers what keyed state needs: the
// zero value is an empty table that allocates on first insert, Walk
// survives deletion of the entry it visits, and entries are addressable by
// slot position (Find, At, DeleteAt) for a resumable incremental cleanup
// (Sweep).
//
// A table grows by doubling. A small one moves every entry at once; a large
// one (incrementalSlots slots or more) moves them a few at a time, as
// Flink's CopyOnWriteStateMap rehashes incrementally: the arrays before the
// doubling stay beside the new ones, every insert of a new key moves the
// entries of the next migrateStep old slots, and a lookup that misses in
// the new arrays looks in the old ones. A doubling that moved every entry
// at once would stop its caller for the whole move, in proportion to the
// table's size, and a window operator's tables double back to back while
// its first windows fill: incremental moves bound the pause of any one
// insert. The walks that may delete (Walk,
// Sweep) and Reserve finish a migration first; the other operations, and
// the read-only walks and copy (All, AllPrefetch, CopyTo), work on both
// pairs of arrays. While an execution trace runs, each doubling of a large
// table is a "table-grow" region, and a large migration finished at once
// is a "table-settle" region.
package hashtable

import (
	"context"
	"reflect"
	"runtime/trace"
	"strconv"
	"unsafe"
)

// Table maps keys of type K to values of type V. The zero value is an empty
// table.
type Table[K comparable, V any] struct {
	ctrl  []uint8 // per slot: 0 empty, else tag(hash)
	slots []slot[K, V]
	mask  uint64
	used  int
	// plain: K and V hold no pointers, so Reset need not zero the slots
	// (an insert writes the whole slot).
	plain bool
	// old is the doubling that migrates, if any (old.ctrl not nil). used
	// counts the entries of both pairs of arrays.
	old migration[K, V]
}

// migration is a doubling that migrates: the arrays before it, whose
// slots from position moved on still hold entries to move (an entry moved
// or deleted leaves its old slot gone).
type migration[K comparable, V any] struct {
	ctrl  []uint8
	slots []slot[K, V]
	mask  uint64
	moved int
}

// gone is the control byte of an old slot whose entry was moved or
// deleted while its doubling migrates: lookups probe past it (not 0),
// walks and the migration skip it (top bit clear, unlike a tag).
const gone = 0x01

// incrementalSlots is the size from which a table grows incrementally; a
// smaller one moves its entries at once, in less time than a lookup's
// extra probe would cost over its migration. A variable, for tests.
var incrementalSlots = 1 << 12

// migrateStep is how many old slots an insert migrates: at most 3/4 of
// them hold entries, so an insert moves ~6 entries (a cache miss each in
// a large table), and a doubling of c slots has moved everything after
// c/8 inserts, long before the new arrays (2c slots, 3c/4 entries at the
// doubling) fill to their own doubling at 3c/2.
const migrateStep = 8

type slot[K comparable, V any] struct {
	hash uint64
	key  K
	val  V
}

// tag is the control byte of a full slot: never 0, 7 bits of the hash
// that index does not use first.
func tag(hash uint64) uint8 { return uint8(hash>>57) | 0x80 }

// New returns an empty table with room for about n entries.
func New[K comparable, V any](n int) *Table[K, V] {
	t := &Table[K, V]{}
	t.alloc(slotsFor(n, 16))
	return t
}

func (t *Table[K, V]) alloc(c int) {
	t.slots = make([]slot[K, V], c)
	t.ctrl = make([]uint8, c)
	t.plain = PointerFree(reflect.TypeFor[slot[K, V]]())
	t.mask = uint64(c - 1)
	t.used = 0
}

// Len is the number of entries.
func (t *Table[K, V]) Len() int { return t.used }

// index spreads the hash: the low bits of a key-group hash are correlated
// with the subtask (kg = hash mod 128 selects it), so use the high bits.
func (t *Table[K, V]) index(hash uint64) uint64 {
	return spread(hash) & t.mask
}

// spread is index before the mask: the same for the old arrays of a
// migrating doubling, with theirs.
func spread(hash uint64) uint64 { return hash * 0x9e3779b97f4a7c15 >> 32 }

// Reserve makes room for n more entries: the next n inserts do not grow
// the table.
func (t *Table[K, V]) Reserve(n int) {
	t.settle()
	if t.used == 0 && !t.Fits(n) {
		// Empty: one allocation of the final size, not a doubling at a
		// time.
		t.alloc(slotsFor(n, max(16, len(t.slots))))
		return
	}
	for over(t.used+n, len(t.slots)) {
		t.grow()
	}
}

// Cap is the number of slots: the table holds 3/4 of Cap entries before
// it grows.
func (t *Table[K, V]) Cap() int { return len(t.slots) }

// Fits reports whether n more entries fit without growing the table.
func (t *Table[K, V]) Fits(n int) bool { return !over(t.used+n, len(t.slots)) }

// Holds is the number of entries a table of c slots holds before it grows.
func Holds(c int) int { return c * 3 / 4 }

// slotsFor is the number of slots, from c up by doubling, that holds n
// entries.
func slotsFor(n, c int) int {
	for over(n, c) {
		c <<= 1
	}
	return c
}

// over reports whether n entries are more than a table of c slots holds:
// the load factor is at most 3/4.
func over(n, c int) bool { return 4*n > 3*c }

// Upsert returns a pointer to the value of key, inserting the zero value if
// it is absent; inserted tells which. The pointer is valid until the next
// Upsert.
func (t *Table[K, V]) Upsert(hash uint64, key K) (v *V, inserted bool) {
	if t.slots == nil {
		t.grow()
	}
	i, tg := t.index(hash), tag(hash)
	for {
		c := t.ctrl[i]
		if c == 0 {
			return t.insert(i, hash, key, tg)
		}
		if c == tg {
			if s := &t.slots[i]; s.hash == hash && s.key == key {
				return &s.val, false
			}
		}
		i = (i + 1) & t.mask
	}
}

// insert is Upsert of a key not in the new arrays, whose probe ended at
// the empty slot i: the key may still be in the old arrays of a migrating
// doubling; else it goes in slot i (or the table doubles first), and the
// migration moves on.
func (t *Table[K, V]) insert(i, hash uint64, key K, tg uint8) (v *V, inserted bool) {
	if t.old.ctrl != nil {
		if j := find(t.old.ctrl, t.old.slots, t.old.mask, hash, key, tg); j >= 0 {
			return &t.old.slots[j].val, false
		}
	}
	if over(t.used+1, len(t.slots)) {
		t.grow()
		return t.Upsert(hash, key)
	}
	t.ctrl[i] = tg
	s := &t.slots[i]
	var zero V
	s.hash, s.key, s.val = hash, key, zero
	t.used++
	if t.old.ctrl != nil {
		// Moves fill empty slots only: s stays where it is.
		t.migrate(migrateStep)
	}
	return &s.val, true
}

// find returns the slot position of key (tag tg) in one pair of arrays
// (mask: their length - 1), or -1: the probe of a migrating doubling's old
// arrays (where a moved key's slot is gone), for Find and insert.
func find[K comparable, V any](ctrl []uint8, slots []slot[K, V], mask, hash uint64, key K, tg uint8) int {
	i := spread(hash) & mask
	for {
		c := ctrl[i]
		if c == 0 {
			return -1
		}
		if c == tg {
			if s := &slots[i]; s.hash == hash && s.key == key {
				return int(i)
			}
		}
		i = (i + 1) & mask
	}
}

// migrate moves the entries of the next n old slots into the new arrays,
// and drops the old arrays once every slot is done.
func (t *Table[K, V]) migrate(n int) {
	o := &t.old
	end := min(o.moved+n, len(o.ctrl))
	for i := o.moved; i < end; i++ {
		c := o.ctrl[i]
		if c&0x80 == 0 {
			continue // empty or gone
		}
		s := &o.slots[i]
		j := t.index(s.hash)
		for t.ctrl[j] != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[j], t.ctrl[j] = *s, c
		o.ctrl[i] = gone
		if !t.plain {
			*s = slot[K, V]{} // no reference kept for a key deleted later
		}
	}
	o.moved = end
	if end == len(o.ctrl) {
		t.old = migration[K, V]{}
	}
}

// settle finishes a migration at once: for the operations that work on
// one pair of arrays.
func (t *Table[K, V]) settle() {
	if t.old.ctrl == nil {
		return
	}
	if trace.IsEnabled() && len(t.old.ctrl)-t.old.moved >= traceGrowSlots {
		defer trace.StartRegion(context.Background(), "table-settle").End()
	}
	t.migrate(len(t.old.ctrl))
}

// Get returns the value of key, or nil. The pointer is valid until the
// next insert or delete.
func (t *Table[K, V]) Get(hash uint64, key K) *V {
	if i := t.Find(hash, key); i >= 0 {
		return t.At(i)
	}
	return nil
}

// Find returns the slot position of key, or -1. The position is valid until
// the next insert or delete. While a doubling migrates, an entry not moved
// yet has a position past the new slots (Cap plus its old position).
func (t *Table[K, V]) Find(hash uint64, key K) int {
	if t.used == 0 {
		return -1
	}
	// The new arrays' probe is written out here, not a call of find:
	// Find is the keyed state's per-record lookup, and the call of find
	// is a measurable part of it (BenchmarkGet).
	i, tg := t.index(hash), tag(hash)
	for {
		c := t.ctrl[i]
		if c == 0 {
			break
		}
		if c == tg {
			if s := &t.slots[i]; s.hash == hash && s.key == key {
				return int(i)
			}
		}
		i = (i + 1) & t.mask
	}
	if t.old.ctrl != nil {
		if j := find(t.old.ctrl, t.old.slots, t.old.mask, hash, key, tg); j >= 0 {
			return len(t.slots) + j
		}
	}
	return -1
}

// At returns the value at slot position i, a position of a present entry
// (from Find). The pointer is valid until the next insert or delete.
func (t *Table[K, V]) At(i int) *V {
	if i >= len(t.slots) {
		return &t.old.slots[i-len(t.slots)].val
	}
	return &t.slots[i].val
}

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
	if at >= len(t.slots) {
		// Not moved yet: marked gone, so the migration skips it and
		// lookups probe past it.
		j := at - len(t.slots)
		t.old.ctrl[j] = gone
		if !t.plain {
			t.old.slots[j] = slot[K, V]{}
		}
		t.used--
		return
	}
	i := uint64(at)
	j := i
	for {
		j = (j + 1) & t.mask
		if t.ctrl[j] == 0 {
			break
		}
		s := &t.slots[j]
		home := t.index(s.hash)
		// s may move to i if i lies cyclically in [home, j).
		if (j > i && (home <= i || home > j)) || (j < i && (home <= i && home > j)) {
			t.slots[i], t.ctrl[i] = *s, t.ctrl[j]
			i = j
		}
	}
	var zero slot[K, V]
	t.slots[i], t.ctrl[i] = zero, 0
	t.used--
}

// traceGrowSlots is the size from which a grow is marked in an execution
// trace: smaller ones are too many and too short to matter.
const traceGrowSlots = 1 << 16

func (t *Table[K, V]) grow() {
	if trace.IsEnabled() && len(t.slots) >= traceGrowSlots {
		// A traced run shows when the large doublings happen and how
		// long each stops its caller.
		trace.Log(context.Background(), "table-grow", strconv.Itoa(len(t.slots)))
		defer trace.StartRegion(context.Background(), "table-grow").End()
	}
	t.settle()
	old, oldCtrl, used := t.slots, t.ctrl, t.used
	t.alloc(max(16, len(old)*2))
	if len(old) >= incrementalSlots {
		t.old = migration[K, V]{ctrl: oldCtrl, slots: old, mask: uint64(len(old) - 1)}
		t.used = used
		return
	}
	for i, c := range oldCtrl {
		if c == 0 {
			continue
		}
		s := &old[i]
		j := t.index(s.hash)
		for t.ctrl[j] != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[j], t.ctrl[j] = *s, c
		t.used++
	}
}

// All calls fn for each entry until fn returns false.
//
// All changes nothing, so it may run beside readers of the table (a
// snapshot's encoding): while a doubling migrates, it visits the entries
// not moved yet in the old arrays, then the new arrays.
func (t *Table[K, V]) All(fn func(hash uint64, key K, v *V) bool) {
	if t.old.ctrl != nil && !all(t.old.ctrl, t.old.slots, fn) {
		return
	}
	all(t.ctrl, t.slots, fn)
}

// all is All over one pair of arrays, and reports whether it got to the
// end.
func all[K comparable, V any](ctrl []uint8, slots []slot[K, V], fn func(hash uint64, key K, v *V) bool) bool {
	// A byte at a time: a walk a word at a time (as visit does) is slower
	// here, where fn is called for every full slot (BenchmarkAllPrefetch's
	// "all" walk).
	for i, c := range ctrl {
		if c&0x80 != 0 {
			if s := &slots[i]; !fn(s.hash, s.key, &s.val) {
				return false
			}
		}
	}
	return true
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
	t.settle()
	if t.used == 0 {
		return true
	}
	n := len(t.slots)
	start := 0
	for t.ctrl[start] != 0 {
		start++ // load <= 3/4: an empty slot exists
	}
	for k := 1; k <= n; k++ {
		i := (start + k) & int(t.mask)
		for {
			if i >= len(t.slots) { // the table was reset or shrunk by yield
				return true
			}
			if t.ctrl[i] == 0 {
				break
			}
			s := &t.slots[i]
			h, key := s.hash, s.key
			if !yield(h, key, &s.val) {
				return false
			}
			if s = &t.slots[i]; t.ctrl[i] == 0 || s.hash != h || s.key != key {
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
	t.settle()
	if t.used == 0 || at >= len(t.slots) {
		return 0, budget - 1, true
	}
	i := at
	for ; budget > 0 && i < len(t.slots); budget-- {
		if t.ctrl[i] != 0 && del(&t.slots[i].val) {
			t.DeleteAt(i) // an entry may have moved here: look again
			continue
		}
		i++
	}
	return i, budget, false
}

// Reset empties the table and keeps its memory for reuse.
func (t *Table[K, V]) Reset() {
	t.old = migration[K, V]{}
	if t.used == 0 {
		return
	}
	if !t.plain {
		// Drop the references the full slots hold; the others are zero.
		var zero slot[K, V]
		for i, c := range t.ctrl {
			if c != 0 {
				t.slots[i] = zero
			}
		}
	}
	clear(t.ctrl)
	t.used = 0
}

// PointerFree reports whether values of t hold no pointers (the garbage
// collector never needs to see them, and clearing them is optional).
func PointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	case reflect.Array:
		return t.Len() == 0 || PointerFree(t.Elem())
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			if !PointerFree(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// Bytes is the size of the table's arrays (slots and control bytes, and
// the old ones of a doubling that migrates): what the table itself takes
// on the heap, not what its keys and values point to.
func (t *Table[K, V]) Bytes() int {
	var s slot[K, V]
	n := len(t.slots) + len(t.old.slots)
	return n*int(unsafe.Sizeof(s)) + len(t.ctrl) + len(t.old.ctrl)
}
