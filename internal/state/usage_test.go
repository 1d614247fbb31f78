package state

import (
	"testing"
	"time"
)

// Usage counts the keys of the store with the most and adds up the
// stores' tables and the strings their keys point to; a value store
// without TTL keeps no expiry time in its slots.
func TestHeapUsage(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		h := newTestHeap(t, &fakeClock{})
		ks, hs := testKeys(10000)
		v, _ := NewValueStore[string, VoidNamespace, int64](h, "v", Options{TTL: ttl})
		l, _ := NewListStore[string, VoidNamespace, int64](h, "l", Options{TTL: ttl})
		for i := range ks {
			v.Put(hs[i], ks[i], VoidNamespace{}, int64(i))
			if i%2 == 0 {
				l.Add(hs[i], ks[i], VoidNamespace{}, int64(i))
			}
		}
		u := h.Usage()
		if u.Keys != 10000 {
			t.Fatalf("ttl %v: %d keys, want 10000", ttl, u.Keys)
		}
		// value slots: hash 8, key 16, value 8 (and expiry 8 with TTL)
		slot := int64(32)
		if ttl != 0 {
			slot = 40
		}
		var tables int64
		hv := v.(*heapValue[string, VoidNamespace, int64])
		for i := range hv.plain.tabs {
			tables += int64(hv.plain.tabs[i].Bytes())
		}
		for i := range hv.g.tabs {
			tables += int64(hv.g.tabs[i].Bytes())
		}
		if tables < 10000*(slot+1) || tables > 10000*(slot+1)*8/3 {
			t.Fatalf("ttl %v: value tables of %d bytes for 10000 %d-byte slots", ttl, tables, slot)
		}
		// the key strings ("k0".."k9999": 8 or 16 bytes) and the list's
		if min := tables + 10000*8; u.Bytes < min {
			t.Fatalf("ttl %v: %d bytes, want at least %d", ttl, u.Bytes, min)
		}
	}
}
