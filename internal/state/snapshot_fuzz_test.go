package state

import (
	"testing"
)

// fuzzStores is a heap backend with one store of every kind.
func fuzzStores(t testing.TB) (*Heap, ValueStore[string, int64, []string], ListStore[string, VoidNamespace, int32], MapStore[int64, VoidNamespace, string, float64], TimerQueue[string, VoidNamespace]) {
	h := newTestHeap(t, &fakeClock{})
	v, err1 := NewValueStore[string, int64, []string](h, "v", Options{})
	l, err2 := NewListStore[string, VoidNamespace, int32](h, "l", Options{})
	m, err3 := NewMapStore[int64, VoidNamespace, string, float64](h, "m", Options{})
	q, err4 := NewTimerQueue[string, VoidNamespace](h, "t")
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return h, v, l, m, q
}

// FuzzRestoreKeyGroups restores arbitrary bytes as key-group snapshots,
// seeded with real ones of every kind of store: it must return an error or
// restore, never panic or allocate what a claimed count says; what it
// restores snapshots again.
func FuzzRestoreKeyGroups(f *testing.F) {
	h, v, l, m, q := fuzzStores(f)
	ks, hs := testKeys(8)
	for i := range ks {
		v.Put(hs[i], ks[i], int64(i), []string{ks[i], ""})
		l.Add(hs[i], ks[i], VoidNamespace{}, int32(i))
		l.Add(hs[i], ks[i], VoidNamespace{}, -1)
		m.Put(hs[i], int64(i), VoidNamespace{}, ks[i], 0.5)
		q.Register(hs[i], ks[i], VoidNamespace{}, int64(1000+i))
	}
	for kg := range 128 {
		data, err := SnapshotKeyGroup(h, kg)
		if err != nil {
			f.Fatal(err)
		}
		if data != nil {
			f.Add(data)
		}
	}
	f.Add([]byte{snapshotVersion, 1, 'v', 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		h, _, _, _, _ := fuzzStores(t)
		if err := RestoreKeyGroups(h, [][]byte{data}); err != nil {
			return
		}
		for kg := range 128 {
			if _, err := SnapshotKeyGroup(h, kg); err != nil {
				t.Fatalf("restored state does not snapshot: %v", err)
			}
		}
	})
}
