package hashtable

// CopyTo makes dst an exact copy of t (same capacity, slots and iteration
// order) with memmoves, reusing dst's memory when it is large enough: a
// snapshot's copy of a table costs no per-entry work and, once dst has the
// capacity, no allocation. Values are copied as they are (a pointer in V
// is shared, not deep-copied).
//
// CopyTo changes nothing in t, so t may be read by another goroutine
// meanwhile (a window's table that a snapshot is encoding): a doubling
// of t that migrates is copied as it is, old arrays and all, and dst
// goes on migrating it.
func (t *Table[K, V]) CopyTo(dst *Table[K, V]) {
	dst.slots, dst.ctrl = copyArrays(t.slots, t.ctrl, dst.slots, dst.ctrl)
	dst.mask, dst.used, dst.plain = t.mask, t.used, t.plain
	old := t.old
	if old.ctrl != nil {
		old.slots, old.ctrl = copyArrays(old.slots, old.ctrl, dst.old.slots, dst.old.ctrl)
	}
	dst.old = old
}

// copyArrays copies slots and ctrl into ds and dc, reused when large
// enough, and returns the copies.
func copyArrays[K comparable, V any](slots []slot[K, V], ctrl []uint8, ds []slot[K, V], dc []uint8) ([]slot[K, V], []uint8) {
	n := len(slots)
	if cap(ds) >= n && cap(dc) >= n {
		ds, dc = ds[:n], dc[:n]
	} else {
		ds, dc = make([]slot[K, V], n), make([]uint8, n)
	}
	copy(ds, slots)
	copy(dc, ctrl)
	return ds, dc
}
