package hashtable

import (
	"math/rand/v2"
	"testing"
)

// The table is checked against a Go map under random upserts and deletes,
// with a deliberately bad hash so that probe chains are long.
func TestTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for _, hashBits := range []uint{2, 8, 64} {
		tb := New[int, int](0)
		model := map[int]int{}
		h := func(k int) uint64 {
			x := uint64(k) * 0xff51afd7ed558ccd
			if hashBits < 64 {
				x &= (1 << hashBits) - 1
			}
			return x
		}
		for step := 0; step < 20000; step++ {
			k := r.IntN(500)
			switch r.IntN(3) {
			case 0, 1:
				p, ins := tb.Upsert(h(k), k)
				_, had := model[k]
				if ins == had {
					t.Fatalf("bits %d step %d: inserted=%v but model had=%v", hashBits, step, ins, had)
				}
				*p += step
				model[k] += step
			case 2:
				_, had := model[k]
				if tb.Delete(h(k), k) != had {
					t.Fatalf("bits %d step %d: delete(%d) disagrees with model", hashBits, step, k)
				}
				delete(model, k)
			}
		}
		if tb.Len() != len(model) {
			t.Fatalf("len %d, model %d", tb.Len(), len(model))
		}
		n := 0
		tb.All(func(_ uint64, k int, v *int) bool {
			n++
			if model[k] != *v {
				t.Fatalf("key %d = %d, model %d", k, *v, model[k])
			}
			return true
		})
		for k, v := range model {
			if p := tb.Get(h(k), k); p == nil || *p != v {
				t.Fatalf("Get(%d) wrong", k)
			}
		}
		if n != len(model) {
			t.Fatalf("iterated %d, want %d", n, len(model))
		}
		tb.Reset()
		if tb.Len() != 0 || tb.Get(h(1), 1) != nil {
			t.Fatal("reset left entries")
		}
	}
}

func BenchmarkUpsert(b *testing.B) {
	tb := New[int64, int64](16384)
	for i := 0; i < b.N; i++ {
		k := int64(i & 8191)
		p, _ := tb.Upsert(uint64(k)*0x9e3779b97f4a7c15, k)
		*p++
	}
}
