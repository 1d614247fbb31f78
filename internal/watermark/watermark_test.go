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
			if c.MinExcept(j) != me {
				t.Fatalf("MinExcept(%d) = %d, want %d", j, c.MinExcept(j), me)
			}
		}
	}
}
