package hashtable

import (
	"testing"
	"unsafe"
)

// Home is where a lookup starts: a key inserted into a table with no
// collision sits in that slot.
func TestHome(t *testing.T) {
	var empty Table[uint64, uint64]
	if c, s := empty.Home(1); c != 0 || s != 0 {
		t.Fatalf("Home of an empty table: %x %x, want 0 0", c, s)
	}
	tab := New[uint64, uint64](8)
	h := mix64(42)
	p, _ := tab.Upsert(h, 42)
	*p = 7
	c, s := tab.Home(h)
	i := tab.Find(h, 42)
	if c != uintptr(unsafe.Pointer(&tab.ctrl[i])) || s != uintptr(unsafe.Pointer(&tab.slots[i])) {
		t.Fatalf("Home(%x) is not the slot of the key (position %d)", h, i)
	}
}
