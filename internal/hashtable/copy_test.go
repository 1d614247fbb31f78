package hashtable

import (
	"slices"
	"testing"
)

type kv struct{ h, k, v uint64 }

func entries(t *Table[uint64, uint64]) []kv {
	var out []kv
	t.All(func(h uint64, k uint64, v *uint64) bool { out = append(out, kv{h, k, *v}); return true })
	return out
}

// A copy holds the same entries in the same iteration order, keeps them
// when the original changes afterwards, and works into a table that was
// larger or smaller before.
func TestCopyTo(t *testing.T) {
	h := func(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }
	src := New[uint64, uint64](0)
	big, small := New[uint64, uint64](5000), &Table[uint64, uint64]{}
	for k := uint64(0); k < 3000; k++ {
		p, _ := big.Upsert(h(k+1e6), k+1e6)
		*p = 7
	}
	for round, n := range []uint64{100, 2000, 300} {
		src.Reset()
		for k := uint64(0); k < n; k++ {
			p, _ := src.Upsert(h(k), k)
			*p = k * 3
		}
		want := entries(src)
		for _, dst := range []*Table[uint64, uint64]{big, small} {
			src.CopyTo(dst)
			if got := entries(dst); !slices.Equal(got, want) || dst.Len() != src.Len() {
				t.Fatalf("round %d: copy has %d entries (Len %d), want %d in the same order", round, len(got), dst.Len(), len(want))
			}
		}
		// Changing the original leaves the copies as they were.
		for k := uint64(0); k < n; k++ {
			*src.Get(h(k), k) = 0
		}
		src.Delete(h(0), 0)
		p, _ := src.Upsert(h(1e9), 1e9)
		*p = 1
		for _, dst := range []*Table[uint64, uint64]{big, small} {
			if got := entries(dst); !slices.Equal(got, want) {
				t.Fatalf("round %d: the copy changed with the original", round)
			}
			if v := dst.Get(h(5), 5); v == nil || *v != 15 {
				t.Fatalf("round %d: Get on the copy = %v", round, v)
			}
		}
	}
}
