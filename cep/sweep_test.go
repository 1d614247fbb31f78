package cep

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSweepOrder pushes random wakes, after the watermark as Detect does,
// near and far (past the wheel's span, into the overflow heap), before the
// first watermark and after jumps of the watermark, and checks that
// advance visits exactly the wakes at or before each watermark, each once,
// in time order.
func TestSweepOrder(t *testing.T) {
	for seed := range 8 {
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		var s sweep[int, int]
		var pending []wake[int, int] // pushed, not visited
		wm := int64(math.MinInt64)
		id := 0
		push := func() {
			lo := int64(1_000_000)
			if wm != math.MinInt64 {
				lo = wm + 1
			}
			var ts int64
			switch rng.IntN(4) {
			case 0:
				ts = lo + rng.Int64N(3*wheelSize) // past the wheel, often
			case 1:
				ts = lo + rng.Int64N(5)
			default:
				ts = lo + rng.Int64N(200)
			}
			w := wake[int, int]{ts: ts, gen: uint32(id)}
			id++
			s.push(w)
			pending = append(pending, w)
		}
		for range 50 {
			push()
		}
		for step := range 200 {
			for range rng.IntN(20) {
				push()
			}
			var next int64
			switch {
			case step == 199:
				next = math.MaxInt64
			case rng.IntN(10) == 0:
				next = max(wm, 1_000_000) + rng.Int64N(4*wheelSize) // a jump
			default:
				next = max(wm, 1_000_000) + rng.Int64N(50)
			}
			if next <= wm {
				continue
			}
			var got []wake[int, int]
			s.advance(next, func(ws []wake[int, int]) {
				got = append(got, ws...)
				// Visits make new wakes after the watermark.
				if len(ws) > 0 && rng.IntN(16) == 0 && next < math.MaxInt64 {
					w := wake[int, int]{ts: next + 1 + rng.Int64N(2*wheelSize), gen: uint32(id)}
					id++
					s.push(w)
					pending = append(pending, w)
				}
			})
			wm = next
			var want []wake[int, int]
			rest := pending[:0]
			for _, w := range pending {
				if w.ts <= wm {
					want = append(want, w)
				} else {
					rest = append(rest, w)
				}
			}
			pending = rest
			if !slices.IsSortedFunc(got, func(a, b wake[int, int]) int { return int(a.ts - b.ts) }) {
				t.Fatalf("seed %d step %d: visited out of time order", seed, step)
			}
			sortByID := func(ws []wake[int, int]) {
				slices.SortFunc(ws, func(a, b wake[int, int]) int { return int(a.gen) - int(b.gen) })
			}
			sortByID(got)
			sortByID(want)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d (wm %d): visited %d wakes, want %d", seed, step, wm, len(got), len(want))
			}
			if s.len() != len(pending) {
				t.Fatalf("seed %d step %d: the sweep holds %d wakes, want %d", seed, step, s.len(), len(pending))
			}
		}
	}
}

// TestSweepTiesInPushOrder: wakes of the same millisecond are visited in
// the order they were made, as timers of one time fire in registration
// order.
func TestSweepTiesInPushOrder(t *testing.T) {
	var s sweep[int, int]
	s.advance(100, func([]wake[int, int]) {})
	for i := range 20 {
		s.push(wake[int, int]{ts: 150, gen: uint32(i)})
	}
	var got []uint32
	s.advance(200, func(ws []wake[int, int]) {
		for _, w := range ws {
			got = append(got, w.gen)
		}
	})
	for i, g := range got {
		if g != uint32(i) {
			t.Fatalf("visit order %v", got)
		}
	}
	if len(got) != 20 {
		t.Fatalf("%d visits", len(got))
	}
}
