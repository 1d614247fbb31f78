package hashtable

import "unsafe"

// Home returns the addresses of the control byte and the slot where a
// lookup of hash starts, for a caller that prefetches them before it looks
// the key up (a window operator removing the keys of a fired window one
// after the other: each lookup is otherwise two cache misses in turn).
// They are plain addresses, valid only until the table next grows, and
// only to prefetch: 0, 0 for a table with no slots.
func (t *Table[K, V]) Home(hash uint64) (ctrl, slot uintptr) {
	if len(t.slots) == 0 {
		return 0, 0
	}
	i := t.index(hash)
	return uintptr(unsafe.Pointer(&t.ctrl[i])), uintptr(unsafe.Pointer(&t.slots[i]))
}
