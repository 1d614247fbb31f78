package hashtable

// CopyTo makes dst an exact copy of t (same capacity, slots and iteration
// order) with two memmoves, reusing dst's memory when it is large enough:
// a snapshot's copy of a table costs no per-entry work and, once dst has
// the capacity, no allocation. Values are copied as they are (a pointer in
// V is shared, not deep-copied).
func (t *Table[K, V]) CopyTo(dst *Table[K, V]) {
	n := len(t.slots)
	if cap(dst.slots) >= n {
		dst.slots, dst.ctrl = dst.slots[:n], dst.ctrl[:n]
	} else {
		dst.slots, dst.ctrl = make([]slot[K, V], n), make([]uint8, n)
	}
	copy(dst.slots, t.slots)
	copy(dst.ctrl, t.ctrl)
	dst.mask, dst.used, dst.plain = t.mask, t.used, t.plain
}
