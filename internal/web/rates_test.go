package web

import (
	"testing"
	"time"
)

// Rates are differences over the window, measured from the oldest kept
// sample: records per second, and blocked time as a share of the
// subtasks' wall time (capped at 1). The clock is the test's.
func TestSamplerRates(t *testing.T) {
	s := newSampler(10 * time.Second)
	t0 := time.Unix(1000, 0)
	at := func(sec float64, in, out, bp int64) sample {
		return sample{at: t0.Add(time.Duration(sec * float64(time.Second))), ops: map[string]counters{"op": {in, out, bp, noWM}}}
	}
	if got := s.rates(at(0, 5, 5, 0), map[string]int{"op": 2}); len(got) != 0 {
		t.Fatalf("rates without a sample: %v", got)
	}
	s.add(at(0, 0, 0, 0))
	for i := 1; i <= 20; i++ {
		// 100 records/s in, 50 out; each of 2 subtasks blocked 0.25 s a second.
		s.add(at(float64(i), int64(100*i), int64(50*i), int64(i)*int64(500*time.Millisecond)))
	}
	got := s.rates(at(20.5, 2050, 1025, 10250*int64(time.Millisecond)), map[string]int{"op": 2})["op"]
	// The base is the newest sample at or before now-10s (t=10): 10.5 s.
	if want := 1050.0 / 10.5; abs(got.in-want) > 1e-9 || abs(got.out-want/2) > 1e-9 {
		t.Errorf("rates in %v out %v, want %v and %v", got.in, got.out, want, want/2)
	}
	if want := 5.25 / 10.5 / 2; abs(got.backpressure-want) > 1e-9 {
		t.Errorf("backpressure %v, want %v", got.backpressure, want)
	}
	if n := len(s.mu.samples); n != 11 {
		t.Errorf("%d samples kept, want 11 (the window and one before it)", n)
	}
	// Never negative, never above 1.
	got = s.rates(at(21, 0, 0, 1<<62), map[string]int{"op": 1})["op"]
	if got.in != 0 || got.out != 0 || got.backpressure != 1 {
		t.Errorf("clamped rates: %+v", got)
	}
	for ratio, want := range map[float64]string{0: "OK", 0.099: "OK", 0.1: "LOW", 0.49: "LOW", 0.5: "HIGH", 1: "HIGH"} {
		if level(ratio) != want {
			t.Errorf("level(%v) = %s, want %s", ratio, level(ratio), want)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
