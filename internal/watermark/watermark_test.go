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

// A split that ended next to an idle one must not send the output to Max:
// the idle split may still produce (Flink removes a finished split from the
// minimum; it does not count it as the end of time). Each step acts on one
// input and states the output after it.
func TestCombinerEndedIsNotIdle(t *testing.T) {
	type step struct {
		op   string // update, idle, active, end
		in   int
		wm   int64
		want int64
	}
	cases := []struct {
		name  string
		n     int
		steps []step
	}{
		{"ended next to idle", 2, []step{
			{"update", 0, 100, Min},
			{"update", 1, 50, 50},
			{"idle", 1, 0, 100},
			{"end", 0, 0, 100}, // was Max: input 1 is idle, not ended
			{"update", 1, 200, 200},
			{"end", 1, 0, Max},
		}},
		{"ended by Max watermark next to idle", 2, []step{
			{"update", 0, 100, Min},
			{"idle", 1, 0, 100},
			{"update", 0, Max, 100},
			{"update", 1, 150, 150},
			{"update", 1, Max, Max},
		}},
		{"idle after the other ended", 3, []step{
			{"update", 0, 10, Min},
			{"update", 1, 20, Min},
			{"update", 2, 30, 10},
			{"end", 0, 0, 20},
			{"end", 2, 0, 20},
			{"idle", 1, 0, 20},
			{"active", 1, 0, 20},
			{"update", 1, 25, 25},
			{"end", 1, 0, Max},
		}},
		{"all ended", 2, []step{
			{"end", 0, 0, Min},
			{"end", 1, 0, Max},
		}},
		{"ended stays ended", 2, []step{
			{"update", 1, 5, Min},
			{"end", 0, 0, 5},
			{"active", 0, 0, 5},
			{"update", 0, 1, 5},
			{"update", 1, 7, 7},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCombiner(tc.n)
			for k, s := range tc.steps {
				switch s.op {
				case "update":
					c.Update(s.in, s.wm)
				case "idle":
					c.SetIdle(s.in, true)
				case "active":
					c.SetIdle(s.in, false)
				case "end":
					c.End(s.in)
				}
				if got := c.Current(); got != s.want {
					t.Fatalf("step %d (%s %d %d): output %d, want %d", k, s.op, s.in, s.wm, got, s.want)
				}
			}
			if !c.Ended(tc.steps[len(tc.steps)-1].in) && tc.steps[len(tc.steps)-1].op == "end" {
				t.Fatal("Ended must report an ended input")
			}
		})
	}
}
