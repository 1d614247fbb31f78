package hashtable

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// keysOf lists t's keys in All's order.
func keysOf(t *Table[int, int]) []int {
	var out []int
	t.All(func(_ uint64, k int, _ *int) bool { out = append(out, k); return true })
	return out
}

// incremental makes every table of 16 slots or more grow incrementally for
// the rest of the test.
func incremental(t *testing.T) {
	old := incrementalSlots
	incrementalSlots = 16
	t.Cleanup(func() { incrementalSlots = old })
}

// A table that grows incrementally matches a Go map under random upserts,
// deletes by key and by position (Find, At, DeleteAt), lookups, walks that
// change nothing (All, AllPrefetch) and ones that finish the migration
// (Walk, Sweep, Reserve) or copy it as it is (CopyTo), with a bad hash for long probe chains; and the
// operations run while a doubling migrates, not only between doublings.
func TestIncrementalGrowMatchesMap(t *testing.T) {
	incremental(t)
	r := rand.New(rand.NewPCG(11, 11))
	for _, hashBits := range []uint{3, 10, 64} {
		h := func(k int) uint64 {
			x := uint64(k) * 0xff51afd7ed558ccd
			if hashBits < 64 {
				x &= (1 << hashBits) - 1
			}
			return x
		}
		tb := &Table[int, int]{}
		model := map[int]int{}
		migrating := map[string]int{}
		check := func(step int) {
			t.Helper()
			if tb.Len() != len(model) {
				t.Fatalf("bits %d step %d: Len %d, model %d", hashBits, step, tb.Len(), len(model))
			}
			for _, walk := range []struct {
				name string
				fn   func(func(uint64, int, *int) bool)
			}{{"All", tb.All}, {"AllPrefetch", tb.AllPrefetch}} {
				seen := map[int]bool{}
				walk.fn(func(_ uint64, k int, v *int) bool {
					if seen[k] || model[k] != *v {
						t.Fatalf("bits %d step %d: %s visits key %d (again: %v) = %d, model %d", hashBits, step, walk.name, k, seen[k], *v, model[k])
					}
					seen[k] = true
					return true
				})
				if len(seen) != len(model) {
					t.Fatalf("bits %d step %d: %s visits %d keys, model has %d", hashBits, step, walk.name, len(seen), len(model))
				}
			}
		}
		for step := range 30000 {
			if tb.old.ctrl != nil {
				migrating["any"]++
			}
			k := r.IntN(3000)
			switch op := r.IntN(20); {
			case op < 11: // upsert (most keys new early on, so the table grows)
				if tb.old.ctrl != nil {
					migrating["upsert"]++
				}
				p, ins := tb.Upsert(h(k), k)
				if _, had := model[k]; ins == had {
					t.Fatalf("bits %d step %d: Upsert(%d) inserted=%v, model had=%v", hashBits, step, k, ins, had)
				}
				*p += step
				model[k] += step
			case op < 14: // delete by key
				if tb.old.ctrl != nil {
					migrating["delete"]++
				}
				_, had := model[k]
				if tb.Delete(h(k), k) != had {
					t.Fatalf("bits %d step %d: Delete(%d) disagrees with the model", hashBits, step, k)
				}
				delete(model, k)
			case op < 16: // by position: read, write, delete
				if tb.old.ctrl != nil {
					migrating["position"]++
				}
				i := tb.Find(h(k), k)
				v, had := model[k]
				if (i >= 0) != had || had && *tb.At(i) != v {
					t.Fatalf("bits %d step %d: Find(%d) = %d, model has %v (%d)", hashBits, step, k, i, had, v)
				}
				if had && op == 14 {
					*tb.At(i) = -step
					model[k] = -step
				} else if had {
					tb.DeleteAt(i)
					delete(model, k)
				}
			case op < 18: // lookup
				p := tb.Get(h(k), k)
				v, had := model[k]
				if (p != nil) != had || had && *p != v {
					t.Fatalf("bits %d step %d: Get(%d) = %v, model has %v (%d)", hashBits, step, k, p, had, v)
				}
			case op == 18:
				if tb.old.ctrl != nil {
					migrating["walks"]++
				}
				check(step)
				// A copy changes nothing in tb, holds the same entries in
				// the same order, and goes on by itself: the same
				// operations on both leave them the same.
				var dst Table[int, int]
				migrating, moved := tb.old.ctrl != nil, tb.old.moved
				tb.CopyTo(&dst)
				if (tb.old.ctrl != nil) != migrating || tb.old.moved != moved {
					t.Fatalf("bits %d step %d: CopyTo changed the original's migration", hashBits, step)
				}
				for i := range 50 {
					for _, x := range []*Table[int, int]{tb, &dst} {
						p, _ := x.Upsert(h(10_000+i), 10_000+i)
						*p = i
					}
				}
				if a, b := keysOf(tb), keysOf(&dst); !slices.Equal(a, b) {
					t.Fatalf("bits %d step %d: the copy's keys or order differ from the original's", hashBits, step)
				}
				for i := range 50 {
					tb.Delete(h(10_000+i), 10_000+i)
				}
			default: // the operations that finish a migration
				if tb.old.ctrl != nil {
					migrating["settle"]++
				}
				switch r.IntN(3) {
				case 0:
					n := 0
					tb.Walk(func(_ uint64, k int, v *int) bool {
						if model[k] != *v {
							t.Fatalf("bits %d step %d: Walk visits key %d = %d, model %d", hashBits, step, k, *v, model[k])
						}
						n++
						return true
					})
					if n != len(model) {
						t.Fatalf("bits %d step %d: Walk visits %d keys, model has %d", hashBits, step, n, len(model))
					}
				case 1:
					// Sweep deletes the odd values.
					for at, done := 0, false; !done; {
						at, _, done = tb.Sweep(at, 64, func(v *int) bool { return *v%2 != 0 })
					}
					for k, v := range model {
						if v%2 != 0 {
							delete(model, k)
						}
					}
				case 2:
					// Reserve finishes a migration, and may start
					// another (a doubling it needs).
					n, slots := 1+r.IntN(100), len(tb.slots)
					tb.Reserve(n)
					if !tb.Fits(n) || len(tb.slots) == slots && tb.old.ctrl != nil {
						t.Fatalf("bits %d step %d: Reserve(%d): fits %v, migrating %v", hashBits, step, n, tb.Fits(n), tb.old.ctrl != nil)
					}
					continue
				}
				if tb.old.ctrl != nil {
					t.Fatalf("bits %d step %d: a migration survived Walk or Sweep", hashBits, step)
				}
			}
		}
		check(-1)
		for _, op := range []string{"upsert", "delete", "position", "walks", "settle"} {
			if migrating[op] == 0 {
				t.Errorf("bits %d: no %s while a doubling migrated (%v)", hashBits, op, migrating)
			}
		}
	}
}

// A fill that only inserts never meets a doubling still migrating: each
// insert moves migrateStep old slots, so a doubling is done long before
// the next one; and every insert of a large table after a doubling moves
// exactly migrateStep slots (no insert pays for more).
func TestIncrementalGrowPace(t *testing.T) {
	incremental(t)
	var tb Table[int64, int64]
	doublings := 0
	for k := range int64(1 << 16) {
		before, was, moved := len(tb.slots), tb.old.ctrl != nil, tb.old.moved
		tb.Upsert(mix64(uint64(k)), k)
		switch {
		case len(tb.slots) != before:
			if was {
				t.Fatalf("insert %d: a doubling to %d slots came while the last one migrated", k, len(tb.slots))
			}
			if before >= 16 {
				doublings++
				if tb.old.ctrl == nil || tb.old.moved != migrateStep {
					t.Fatalf("insert %d: the doubling of %d slots moved more than migrateStep slots", k, before)
				}
			}
		case was && tb.old.ctrl != nil && tb.old.moved-moved != migrateStep:
			t.Fatalf("insert %d: moved %d old slots, want %d", k, tb.old.moved-moved, migrateStep)
		}
	}
	if doublings < 10 {
		t.Fatalf("%d incremental doublings, want the fill to go through many", doublings)
	}
}
