package hashtable

import (
	"slices"
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

// AllPrefetch visits what All visits, in the same order, stops when fn
// says so, and asks only for lines inside the table's slots, ahead of the
// walk, covering every slot past the first prefetchAhead bytes.
func TestAllPrefetch(t *testing.T) {
	var empty Table[uint64, [5]uint64]
	saved := prefetchLines
	defer func() { prefetchLines = saved }()
	prefetchLines = func(a, n uintptr) { t.Fatalf("prefetch on an empty table") }
	empty.AllPrefetch(func(uint64, uint64, *[5]uint64) bool {
		t.Fatalf("visit on an empty table")
		return true
	})
	tab := New[uint64, [5]uint64](0)
	for k := uint64(0); k < 3000; k++ {
		p, _ := tab.Upsert(mix64(k), k)
		p[4] = k
	}
	var want, got []uint64
	tab.All(func(_ uint64, k uint64, v *[5]uint64) bool { want = append(want, k); return true })
	base := uintptr(unsafe.Pointer(&tab.slots[0]))
	size := unsafe.Sizeof(tab.slots[0])
	end := base + uintptr(len(tab.slots))*size
	covered := base + prefetchAhead
	prefetchLines = func(a, n uintptr) {
		if a < base || a+n > end || n == 0 {
			t.Fatalf("prefetch of [%x, %x) outside the slots [%x, %x)", a, a+n, base, end)
		}
		if a > covered {
			t.Fatalf("prefetch skipped [%x, %x)", covered, a)
		}
		covered = max(covered, a+n)
	}
	tab.AllPrefetch(func(_ uint64, k uint64, v *[5]uint64) bool {
		if v[4] != k {
			t.Fatalf("key %d has value %d", k, v[4])
		}
		got = append(got, k)
		return true
	})
	if !slices.Equal(got, want) {
		t.Fatalf("AllPrefetch visited %d keys, All %d, or in another order", len(got), len(want))
	}
	if covered != end {
		t.Fatalf("prefetches ended at %x, the slots at %x", covered, end)
	}
	n := 0
	prefetchLines = func(a, n uintptr) {}
	tab.AllPrefetch(func(uint64, uint64, *[5]uint64) bool { n++; return n < 10 })
	if n != 10 {
		t.Fatalf("AllPrefetch went on after fn returned false: %d visits", n)
	}
}
