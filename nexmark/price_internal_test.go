package nexmark

import (
	"math"
	"testing"
)

// nextPrice is round(10^(6u)·100) for the u its rng draw stands for, a
// cent off at most and only within a hair of a half cent: of 2 M draws
// (prices up to 10⁸ cents, where a relative error of 10⁻⁸ is a cent),
// none may differ by more than a cent and at most two by one.
func TestNextPrice(t *testing.T) {
	r := newRNG(42, 7)
	off := 0
	lo, hi := int64(math.MaxInt64), int64(0)
	for i := 0; i < 2_000_000; i++ {
		probe := r
		u := float64(probe.next()>>11) * 0x1p-53
		want := int64(math.Round(math.Pow(10, 6*u) * 100))
		got := nextPrice(&r)
		if got != want {
			if got-want > 1 || want-got > 1 {
				t.Fatalf("u=%v: price %d, want %d", u, got, want)
			}
			off++
		}
		lo, hi = min(lo, got), max(hi, got)
	}
	if off > 2 {
		t.Errorf("%d of 2 M prices a cent off round(10^(6u)·100)", off)
	}
	if lo < 100 || hi > 100_000_000 || hi < 99_000_000 {
		t.Errorf("prices span [%d, %d], want within [100, 10⁸] and reaching near 10⁸", lo, hi)
	}
}

func BenchmarkNextPrice(b *testing.B) {
	r := newRNG(1, 2)
	var sum int64
	for b.Loop() {
		sum += nextPrice(&r)
	}
	if sum == 0 {
		b.Fatal("no prices")
	}
}

// BenchmarkNextPriceChained is nextPrice with each price feeding the next
// draw's state: the time of one call's dependency chain, as in the
// generator, where the call's work does not overlap the next call's
// (BenchmarkNextPrice measures calls side by side).
func BenchmarkNextPriceChained(b *testing.B) {
	r := newRNG(1, 2)
	for b.Loop() {
		r.s += uint64(nextPrice(&r))
	}
	if r.s == 0 {
		b.Fatal("no prices")
	}
}
