package hashtable

import (
	"math/rand"
	"slices"
	"testing"
)

func chunkedEntries(all func(func(uint64, uint64, *uint64) bool)) []kv {
	var out []kv
	all(func(h uint64, k uint64, v *uint64) bool { out = append(out, kv{h, k, *v}); return true })
	return out
}

// A Chunked table puts every entry where a Table does (same iteration
// order after the same inserts and growth), whatever its chunk size, and
// Get, Len and Reset agree.
func TestChunkedLikeTable(t *testing.T) {
	h := func(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }
	for _, size := range []int{16, 64, 1 << 12} {
		rng := rand.New(rand.NewSource(int64(size)))
		pool := NewChunkPool[uint64, uint64](size)
		ref, c := New[uint64, uint64](0), NewChunked[uint64, uint64](0, pool)
		for round := 0; round < 3; round++ {
			for i := 0; i < 5000; i++ {
				k := uint64(rng.Intn(3000))
				p, ins := ref.Upsert(h(k), k)
				q, cins := c.Upsert(h(k), k)
				if ins != cins {
					t.Fatalf("size %d: key %d inserted %v, table %v", size, k, cins, ins)
				}
				*p += k
				*q += k
			}
			if got, want := chunkedEntries(c.All), entries(ref); !slices.Equal(got, want) || c.Len() != ref.Len() {
				t.Fatalf("size %d round %d: %d entries (Len %d), want %d in the table's order", size, round, len(got), c.Len(), len(want))
			}
			for k := uint64(0); k < 3100; k++ {
				if p, q := ref.Get(h(k), k), c.Get(h(k), k); (p == nil) != (q == nil) || p != nil && *p != *q {
					t.Fatalf("size %d: Get(%d) differs", size, k)
				}
			}
			ref.Reset()
			c.Reset()
			if c.Len() != 0 || len(chunkedEntries(c.All)) != 0 {
				t.Fatal("Reset left entries")
			}
		}
	}
}

// A View keeps the entries of Share while the table takes inserts, updates,
// growth and a Reset; the table copies only the chunks it writes, and
// Unshare gives the View's own chunks back to the pool. The View is read
// on another goroutine while the table changes (-race reports any write to
// a chunk it holds).
func TestChunkedShare(t *testing.T) {
	h := func(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }
	pool := NewChunkPool[uint64, uint64](16)
	c := NewChunked[uint64, uint64](0, pool)
	ref := map[uint64]uint64{}
	rng := rand.New(rand.NewSource(1))
	var v View[uint64, uint64]
	for round := 0; round < 40; round++ {
		want := chunkedEntries(c.All)
		c.Share(&v)
		done := make(chan []kv)
		go func() { done <- chunkedEntries(v.All) }()
		switch round % 4 {
		case 0: // a few writes: a few chunks copied
			for i := 0; i < 3; i++ {
				k := uint64(rng.Intn(400))
				p, _ := c.Upsert(h(k), k)
				*p += 1
				ref[k]++
			}
			if c.Len() > 64 && len(c.retired) > 3 {
				t.Fatalf("round %d: 3 writes copied %d chunks", round, len(c.retired))
			}
		case 1, 2: // many writes, growth included
			for i := 0; i < 300; i++ {
				k := uint64(rng.Intn(400 + round*20))
				p, _ := c.Upsert(h(k), k)
				*p += 2
				ref[k] += 2
			}
		case 3:
			if round%8 == 3 {
				c.Reset()
				clear(ref)
			}
		}
		if got := <-done; !slices.Equal(got, want) || v.Len() != len(want) {
			t.Fatalf("round %d: the View has %d entries, want the %d of Share", round, len(got), len(want))
		}
		if round%5 != 4 { // else: the next Share unshares
			c.Unshare()
			if len(c.retired) != 0 {
				t.Fatal("Unshare kept retired chunks")
			}
		}
		got := map[uint64]uint64{}
		c.All(func(_ uint64, k uint64, p *uint64) bool { got[k] = *p; return true })
		if len(got) != len(ref) || c.Len() != len(ref) {
			t.Fatalf("round %d: table has %d keys (Len %d), want %d", round, len(got), c.Len(), len(ref))
		}
		for k, n := range ref {
			if got[k] != n {
				t.Fatalf("round %d: key %d = %d, want %d", round, k, got[k], n)
			}
		}
	}
	v.Release()
	if pool.Free() == 0 {
		t.Fatal("no chunk came back to the pool")
	}
}

// Writes to a shared table copy each written chunk once: the cost is the
// chunks written, not the table.
func TestChunkedCopiesWrittenChunksOnce(t *testing.T) {
	h := func(k uint64) uint64 { return k * 0x9e3779b97f4a7c15 }
	pool := NewChunkPool[uint64, uint64](64)
	c := NewChunked[uint64, uint64](4000, pool) // 8192 slots: 128 chunks
	for k := uint64(0); k < 4000; k++ {
		c.Upsert(h(k), k)
	}
	var v View[uint64, uint64]
	c.Share(&v)
	for n := 0; n < 10; n++ {
		p, _ := c.Upsert(h(7), 7)
		*p++
	}
	if len(c.retired) != 1 {
		t.Fatalf("10 writes to one key copied %d chunks, want 1", len(c.retired))
	}
	if p := v.chunks; len(p) != 128 {
		t.Fatalf("View of %d chunks, want 128", len(p))
	}
	if got := *c.Get(h(7), 7); got != 10 {
		t.Fatalf("value %d, want 10", got)
	}
	var seen uint64
	v.All(func(_ uint64, k uint64, p *uint64) bool {
		if k == 7 {
			seen = *p + 1
		}
		return true
	})
	if seen != 1 {
		t.Fatal("the View saw the write")
	}
	c.Unshare()
	if pool.Free() != 1 {
		t.Fatalf("pool holds %d chunks after Unshare, want the 1 copied", pool.Free())
	}
}
