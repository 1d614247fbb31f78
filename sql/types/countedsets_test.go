package types

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestCountedSetsModel: a CountedSets of up to 4 sets (counts inline in
// its table) and of more (counts in entries) agrees with a map model
// under random additions and removals of ints and strings: each set's
// values and counts, its Len, the changed bits Add returns, and its
// encoded list.
func TestCountedSetsModel(t *testing.T) {
	for _, width := range []int{1, 3, 4, 5, 9} {
		for _, strs := range []bool{false, true} {
			t.Run(fmt.Sprintf("width=%d/strs=%v", width, strs), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(width), 7))
				s := NewCountedSetsOf(strs, width, nil)
				model := make([]map[int64]int64, width)
				for i := range model {
					model[i] = map[int64]int64{}
				}
				val := func(x int64) Value {
					if strs {
						return StringValue(fmt.Sprint("v", x))
					}
					return IntValue(x)
				}
				for op := 0; op < 20000; op++ {
					x := r.Int64N(300) - 150
					mask := r.Uint64() & (1<<width - 1)
					n := r.Int64N(3) + 1
					if r.IntN(5) < 2 {
						n = -n
					}
					var want uint64
					for i := 0; i < width; i++ {
						if mask&(1<<i) == 0 {
							continue
						}
						c := model[i][x]
						switch {
						case c == 0 && n > 0:
							model[i][x] = n
							want |= 1 << i
						case c > 0 && c+n <= 0:
							delete(model[i], x)
							want |= 1 << i
						case c > 0:
							model[i][x] = c + n
						}
					}
					if got := s.Add(val(x), mask, n); got != want {
						t.Fatalf("op %d: Add(%d, %b, %d) changed %b, want %b", op, x, mask, n, got, want)
					}
				}
				for i := 0; i < width; i++ {
					if s.Len(i) != len(model[i]) || s.View(i).Len() != len(model[i]) {
						t.Fatalf("set %d: Len %d, want %d", i, s.Len(i), len(model[i]))
					}
					seen := 0
					s.View(i).Each(func(v Value, n int64) {
						seen++
						var x int64
						if strs {
							fmt.Sscanf(v.S, "v%d", &x)
						} else {
							x = v.I
						}
						if model[i][x] != n {
							t.Fatalf("set %d: %v counted %d, want %d", i, v, n, model[i][x])
						}
					})
					if seen != len(model[i]) {
						t.Fatalf("set %d: Each gave %d values, want %d", i, seen, len(model[i]))
					}
					one := NewCountedSet(strs)
					for x, n := range model[i] {
						one.Add(val(x), n)
					}
					if got, want := Key(s.View(i).list()), Key(one.list()); got != want {
						t.Fatalf("set %d: list differs from the single set's", i)
					}
				}
				// the table holds the values some set holds, no more (an
				// addition under a mask of no set keeps nothing)
				union := map[int64]bool{}
				for i := range model {
					for x := range model[i] {
						union[x] = true
					}
				}
				if got := s.ints4.Len() + s.strs4.Len() + s.ints.Len() + s.strs.Len(); got != len(union) {
					t.Fatalf("the table holds %d values, the sets %d", got, len(union))
				}
			})
		}
	}
}
