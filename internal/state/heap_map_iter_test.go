package state

import "testing"

// TestMapPutDuringAllVisitsEachEntryOnce overwrites every entry of a map
// while iterating over it, which MapStore.All allows, at every size up to
// a few hundred: the iteration must yield each entry exactly once. It
// failed when Put grew the map's table before finding that the entry
// existed (growth at the load limit rehashed the slots under the walk, so
// entries were skipped or repeated; the outer interval join lost pairs).
func TestMapPutDuringAllVisitsEachEntryOnce(t *testing.T) {
	h := newTestHeap(t, &fakeClock{})
	ks, hs := testKeys(1)
	m, err := NewMapStore[string, VoidNamespace, int64, int](h, "m", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 300; n++ {
		m.Put(hs[0], ks[0], VoidNamespace{}, int64(n), 0) // the map now has n entries
		seen := map[int64]int{}
		for mk := range m.All(hs[0], ks[0], VoidNamespace{}) {
			seen[mk]++
			m.Put(hs[0], ks[0], VoidNamespace{}, mk, n)
		}
		if len(seen) != n {
			t.Fatalf("n=%d: iteration yielded %d distinct entries", n, len(seen))
		}
		for mk, c := range seen {
			if c != 1 {
				t.Fatalf("n=%d: entry %d yielded %d times", n, mk, c)
			}
		}
	}
}
