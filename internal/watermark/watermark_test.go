package watermark

import (
	"math/rand/v2"
	"testing"
)

func TestBoundedIsFlinkDefinition(t *testing.T) {
	g := NewGenerator(Bounded, 5000)
	if g.Current() != Min {
		t.Fatalf("fresh generator watermark %d, want Min", g.Current())
	}
	g.OnEvent(10_000)
	if g.Current() != 10_000-5000-1 {
		t.Fatalf("watermark %d, want %d", g.Current(), 10_000-5000-1)
	}
	g.OnEvent(9_000) // out of order: no change
	if g.Current() != 4999 {
		t.Fatalf("watermark moved back to %d", g.Current())
	}
	g.OnEvent(Min + 3) // would wrap: stays
	if g.Current() != 4999 {
		t.Fatalf("watermark %d", g.Current())
	}
	n := NewGenerator(None, 0)
	n.OnEvent(100)
	if n.Current() != Min {
		t.Fatalf("None advanced to %d", n.Current())
	}
}

// The combiner is checked against a naive minimum over random updates.
func TestCombinerMatchesNaiveMin(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(5)
		c := NewCombiner(n)
		model := make([]int64, n)
		for i := range model {
			model[i] = Min
		}
		last := int64(Min)
		for step := 0; step < 100; step++ {
			i := r.IntN(n)
			w := int64(r.IntN(1000))
			if r.IntN(20) == 0 {
				w = Max
			}
			if w > model[i] {
				model[i] = w
			}
			m := int64(Max)
			for _, x := range model {
				m = min(m, x)
			}
			got, adv := c.Update(i, w)
			if got != m || adv != (m > last) {
				t.Fatalf("trial %d step %d: got (%d,%v), want (%d,%v)", trial, step, got, adv, m, m > last)
			}
			last = m
			j := r.IntN(n)
			me := int64(Max)
			for k, x := range model {
				if k != j {
					me = min(me, x)
				}
			}
			if c.Others(j) != me {
				t.Fatalf("Others(%d) = %d, want %d", j, c.Others(j), me)
			}
		}
	}
}

func TestCombinerIdleness(t *testing.T) {
	c := NewCombiner(2)
	c.Update(0, 100)
	if c.Current() != Min {
		t.Fatalf("input 1 has no watermark yet: output %d", c.Current())
	}
	if wm, adv := c.SetIdle(1, true); wm != 100 || !adv {
		t.Fatalf("idle input 1 must be left out: (%d, %v)", wm, adv)
	}
	if !c.AllIdle() == true && c.Idle(0) {
		t.Fatal("input 0 is active")
	}
	c.Update(0, 200)
	if c.Current() != 200 {
		t.Fatalf("output %d, want 200", c.Current())
	}
	// Input 1 resumes behind the output: the output does not go back, and
	// input 1 does not hold it until it catches up.
	if wm, _ := c.Update(1, 50); wm != 200 {
		t.Fatalf("output went back to %d", wm)
	}
	c.Update(0, 300)
	if c.Current() != 300 {
		t.Fatalf("unaligned input 1 held the output at %d", c.Current())
	}
	c.Update(1, 310) // caught up: aligned again
	c.Update(0, 400)
	if c.Current() != 310 {
		t.Fatalf("aligned input 1 must hold the output at 310, got %d", c.Current())
	}
	c.SetIdle(0, true)
	c.SetIdle(1, true)
	if !c.AllIdle() || c.Current() != 310 {
		t.Fatalf("all idle: output %d, AllIdle %v", c.Current(), c.AllIdle())
	}
	if At(310, 500, Max) != 500 || At(310, 100, Max) != 310 || At(310, 500, 400) != 400 {
		t.Fatal("At is max(cur, min(w, others))")
	}
}
