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

// Iteration visits every entry once while the visited entries are deleted
// or kept at random, under a bad hash that makes long clusters.
func TestWalkWithDeletes(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, bits := range []uint{3, 64} {
		for round := range 50 {
			var tb Table[int, int] // the zero value is an empty table
			n := 1 + r.IntN(300)
			h := func(k int) uint64 {
				x := mix64(uint64(k))
				if bits < 64 {
					x &= 1<<bits - 1
				}
				return x << 32 // index uses the high half
			}
			for k := range n {
				p, _ := tb.Upsert(h(k), k)
				*p = k
			}
			seen := map[int]int{}
			kept := 0
			tb.Walk(func(_ uint64, k int, v *int) bool {
				seen[k]++
				if *v != k {
					t.Fatalf("value of %d is %d", k, *v)
				}
				if r.IntN(2) == 0 {
					tb.Delete(h(k), k)
				} else {
					kept++
				}
				return true
			})
			if len(seen) != n {
				t.Fatalf("bits %d round %d: visited %d of %d", bits, round, len(seen), n)
			}
			for k, c := range seen {
				if c != 1 {
					t.Fatalf("bits %d round %d: %d visited %d times", bits, round, k, c)
				}
			}
			if tb.Len() != kept {
				t.Fatalf("used %d, kept %d", tb.Len(), kept)
			}
			for k := range n {
				if p := tb.Get(h(k), k); p != nil && *p != k {
					t.Fatalf("key %d has value %d after deletes", k, *p)
				}
			}
		}
	}
}

// mix64 is a 64-bit finalizer (SplitMix64) for test hashes.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// badHash hashes k into the high half (index uses it) keeping only bits
// bits, so that probe chains are long.
func badHash(bits uint) func(int) uint64 {
	return func(k int) uint64 {
		x := mix64(uint64(k))
		if bits < 64 {
			x &= 1<<bits - 1
		}
		return x << 32
	}
}

// A zero Table is empty and usable.
func TestZeroTable(t *testing.T) {
	var tb Table[int, int]
	if tb.Len() != 0 || tb.Get(1, 1) != nil || tb.Find(1, 1) != -1 || tb.Delete(1, 1) {
		t.Fatal("zero table is not empty")
	}
	if !tb.Walk(func(uint64, int, *int) bool { t.Fatal("walked an entry"); return false }) {
		t.Fatal("walk of an empty table stopped")
	}
	if _, left, done := tb.Sweep(0, 5, func(*int) bool { return true }); !done || left != 4 {
		t.Fatalf("sweep of an empty table: left %d done %v", left, done)
	}
	p, ins := tb.Upsert(3, 3)
	if !ins {
		t.Fatal("first upsert did not insert")
	}
	*p = 30
	if i := tb.Find(3, 3); i < 0 || *tb.At(i) != 30 {
		t.Fatal("Find/At lost the entry")
	}
	var tr Table[int, int]
	tr.Reserve(1)
	if tr.Len() != 0 || tr.Get(3, 3) != nil {
		t.Fatal("Reserve inserted")
	}
}

// Reserve(n) makes the next n inserts keep the slots: positions from Find
// stay valid.
func TestReserve(t *testing.T) {
	var tb Table[int, int]
	tb.Reserve(100)
	p, _ := tb.Upsert(mix64(0), 0)
	for k := 1; k < 100; k++ {
		tb.Upsert(mix64(uint64(k)), k)
	}
	if p != tb.Get(mix64(0), 0) {
		t.Fatal("an insert within the reservation grew the table")
	}
}

// Random upserts and deletes, with walks that delete visited entries at
// random (through Delete or DeleteAt), stop early at random, and update
// values in place, are checked against a Go map.
func TestWalkMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 11))
	for _, bits := range []uint{2, 8, 64} {
		h := badHash(bits)
		var tb Table[int, int]
		model := map[int]int{}
		for step := range 3000 {
			switch op := r.IntN(10); {
			case op < 6:
				k := r.IntN(400)
				p, ins := tb.Upsert(h(k), k)
				if _, had := model[k]; ins == had {
					t.Fatalf("bits %d step %d: inserted=%v, model had=%v", bits, step, ins, had)
				}
				*p, model[k] = step, step
			case op < 8:
				k := r.IntN(400)
				_, had := model[k]
				if i := tb.Find(h(k), k); (i >= 0) != had {
					t.Fatalf("bits %d step %d: Find(%d) = %d, model had=%v", bits, step, k, i, had)
				} else if had {
					tb.DeleteAt(i)
				}
				delete(model, k)
			default:
				seen := map[int]bool{}
				stopAt, stopped := -1, false
				if r.IntN(3) == 0 && len(model) > 0 {
					stopAt = 1 + r.IntN(len(model))
				}
				all := tb.Walk(func(_ uint64, k int, v *int) bool {
					if seen[k] {
						t.Fatalf("bits %d step %d: %d visited twice", bits, step, k)
					}
					seen[k] = true
					if mv, ok := model[k]; !ok || mv != *v {
						t.Fatalf("bits %d step %d: walk gave %d=%d, model %d (%v)", bits, step, k, *v, mv, ok)
					}
					switch r.IntN(3) {
					case 0:
						tb.Delete(h(k), k)
						delete(model, k)
					case 1:
						*v++
						model[k]++
					}
					stopped = len(seen) == stopAt
					return !stopped
				})
				if all == stopped {
					t.Fatalf("bits %d step %d: walk reported %v after %d of stop %d", bits, step, all, len(seen), stopAt)
				}
				if all {
					for k := range model {
						if !seen[k] {
							t.Fatalf("bits %d step %d: walk missed %d", bits, step, k)
						}
					}
				}
			}
			if tb.Len() != len(model) {
				t.Fatalf("bits %d step %d: len %d, model %d", bits, step, tb.Len(), len(model))
			}
		}
		for k, v := range model {
			if p := tb.Get(h(k), k); p == nil || *p != v {
				t.Fatalf("bits %d: Get(%d) wrong", bits, k)
			}
		}
	}
}

// A cursor driven by Sweep over several tables, with random budgets and
// random operations between steps, deletes exactly the entries del picks,
// charges one unit per empty or finished table, and examines every entry
// present throughout within a bounded number of steps.
func TestSweepMatchesMap(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 13))
	for _, bits := range []uint{3, 64} {
		h := badHash(bits)
		tabs := make([]Table[int, int], 4)
		model := make([]map[int]int, len(tabs))
		for i := range model {
			model[i] = map[int]int{}
		}
		kg, at := 0, 0
		for step := range 4000 {
			ti := r.IntN(len(tabs))
			k := r.IntN(200)
			if r.IntN(4) != 0 {
				p, _ := tabs[ti].Upsert(h(k), k)
				*p, model[ti][k] = step, step
			} else if tabs[ti].Delete(h(k), k) {
				delete(model[ti], k)
			}
			// Sweep deletes the entries whose value is a multiple of 5.
			n := r.IntN(20)
			for n > 0 {
				if kg >= len(tabs) {
					kg = 0
				}
				before := n
				var done bool
				at, n, done = tabs[kg].Sweep(at, n, func(v *int) bool { return *v%5 == 0 })
				if done {
					if before-n != 1 {
						t.Fatalf("bits %d step %d: a finished table cost %d", bits, step, before-n)
					}
					kg++
				} else if n < 0 {
					t.Fatalf("bits %d step %d: budget overdrawn: %d", bits, step, n)
				}
			}
			for i := range tabs {
				for k, v := range model[i] {
					if tabs[i].Get(h(k), k) == nil {
						if v%5 != 0 {
							t.Fatalf("bits %d step %d: sweep deleted %d=%d", bits, step, k, v)
						}
						delete(model[i], k)
					}
				}
				if tabs[i].Len() != len(model[i]) {
					t.Fatalf("bits %d step %d: table %d len %d, model %d", bits, step, i, tabs[i].Len(), len(model[i]))
				}
			}
		}
		// Without other changes, enough steps clean everything.
		for range 10000 {
			if kg >= len(tabs) {
				kg = 0
			}
			var done bool
			if at, _, done = tabs[kg].Sweep(at, 1, func(v *int) bool { return *v%5 == 0 }); done {
				kg++
			}
		}
		for i := range tabs {
			tabs[i].Walk(func(_ uint64, k int, v *int) bool {
				if *v%5 == 0 {
					t.Fatalf("bits %d: %d=%d survived the sweeps", bits, k, *v)
				}
				return true
			})
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

// BenchmarkGet looks up keys of a cache-resident table, half of them
// present (Find's probe, as the keyed state backends use it).
func BenchmarkGet(b *testing.B) {
	tb := New[int64, int64](16384)
	for k := range int64(4096) {
		p, _ := tb.Upsert(uint64(k)*0x9e3779b97f4a7c15, k)
		*p = k
	}
	var n int64
	for i := 0; i < b.N; i++ {
		k := int64(i & 8191)
		if p := tb.Get(uint64(k)*0x9e3779b97f4a7c15, k); p != nil {
			n += *p
		}
	}
	sinkGet = n
}

var sinkGet int64

// After Reset a reused table hands out zero values again (an insert writes
// the whole slot; Reset of a pointer-free table only clears the control
// bytes), and a table of pointers holds no references to the old entries.
func TestResetThenReuse(t *testing.T) {
	h := func(k int) uint64 { return uint64(k) * 0x9e3779b97f4a7c15 }
	plain := New[int, int](0)
	refs := New[int, *int](0)
	if !plain.plain || refs.plain {
		t.Fatalf("plain: %v for int/int, %v for int/*int", plain.plain, refs.plain)
	}
	for round := 0; round < 3; round++ {
		for k := 0; k < 1000; k++ {
			p, ins := plain.Upsert(h(k), k)
			if !ins || *p != 0 {
				t.Fatalf("round %d key %d: inserted=%v value %d, want a new zero entry", round, k, ins, *p)
			}
			*p = k + 1
			q, ins := refs.Upsert(h(k), k)
			if !ins || *q != nil {
				t.Fatalf("round %d key %d: inserted=%v value %v, want a new nil entry", round, k, ins, *q)
			}
			v := k
			*q = &v
		}
		plain.Reset()
		refs.Reset()
		for i := range refs.slots {
			if refs.slots[i].val != nil {
				t.Fatalf("round %d: slot %d still references an old value after Reset", round, i)
			}
		}
	}
}

// Reserve on an empty table allocates the final size at once; on a full
// one it grows until the entries fit; Fits and Holds agree with it.
func TestReserveSizes(t *testing.T) {
	tb := New[int, int](0)
	tb.Reserve(100_000)
	if c := tb.Cap(); c != 262144 || !tb.Fits(100_000) || tb.Fits(Holds(c)+1) {
		t.Fatalf("Reserve(100000) on an empty table: %d slots", c)
	}
	for k := range 1000 {
		p, _ := tb.Upsert(uint64(k)*0x9e3779b97f4a7c15, k)
		*p = k
	}
	tb.Reserve(Holds(tb.Cap()))
	if !tb.Fits(Holds(262144)) || tb.Cap() != 524288 {
		t.Fatalf("Reserve past the capacity: %d slots", tb.Cap())
	}
	for k := range 1000 {
		if p := tb.Get(uint64(k)*0x9e3779b97f4a7c15, k); p == nil || *p != k {
			t.Fatalf("key %d lost in Reserve", k)
		}
	}
}

func TestBytes(t *testing.T) {
	var tb Table[uint64, uint64]
	if tb.Bytes() != 0 {
		t.Fatalf("empty table: %d bytes", tb.Bytes())
	}
	for i := range uint64(1000) {
		v, _ := tb.Upsert(mix64(i), i)
		*v = i
	}
	// 24-byte slots and a control byte each
	if want := tb.Cap() * 25; tb.Bytes() != want {
		t.Fatalf("%d slots: %d bytes, want %d", tb.Cap(), tb.Bytes(), want)
	}
}
