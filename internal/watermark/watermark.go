// Package watermark holds the watermark generators and the combiner that
// takes the minimum over several inputs.
//
// Time is int64 milliseconds since the Unix epoch everywhere inside weir, like
// Flink. A watermark W asserts that no more events with timestamp <= W will
// arrive. Min means "no watermark yet"; Max is sent at the end of a bounded
// input and fires every pending window and timer.
//
// Everything here is a deterministic state machine: no clocks, no I/O. Idle
// detection takes "now" as an argument.
package watermark

import "math"

const (
	// Min is the watermark before any event: nothing is known.
	Min = math.MinInt64
	// Max is the watermark at the end of a bounded input.
	Max = math.MaxInt64
)

// Kind selects a generator.
type Kind uint8

const (
	// None never advances the watermark until the input ends.
	None Kind = iota
	// Bounded emits max timestamp seen - delay - 1 (Flink's
	// BoundedOutOfOrdernessWatermarks); delay 0 is Flink's monotonous
	// timestamps.
	Bounded
)

// Generator turns event timestamps of one split into watermarks. It is a
// value type so the source loop can keep it in a slice without pointers.
type Generator struct {
	kind  Kind
	delay int64
	max   int64
	wm    int64
}

// NewGenerator returns a generator of the given kind.
func NewGenerator(kind Kind, delayMs int64) Generator {
	return Generator{kind: kind, delay: delayMs, max: Min, wm: Min}
}

// OnEvent observes one event timestamp.
func (g *Generator) OnEvent(ts int64) {
	if ts > g.max {
		g.max = ts
		if g.kind == Bounded {
			// Saturate instead of wrapping for timestamps near MinInt64.
			if w := ts - g.delay - 1; w < ts {
				g.wm = w
			}
		}
	}
}

// Current is the watermark after the events seen so far.
func (g *Generator) Current() int64 { return g.wm }

// State returns what a checkpoint must keep of the generator.
func (g *Generator) State() (maxTS, wm int64) { return g.max, g.wm }

// Restore continues from a checkpointed state: a restored job then judges
// lateness exactly as the uninterrupted one would.
func (g *Generator) Restore(maxTS, wm int64) { g.max, g.wm = maxTS, wm }

// MaxTimestamp is the largest timestamp seen.
func (g *Generator) MaxTimestamp() int64 { return g.max }

// Combiner merges the watermarks of n inputs into one, like Flink's
// StatusWatermarkValve: the output is the minimum over the inputs that are
// active (not idle, not ended) and aligned, and it never goes back.
//
// An input is in one of three states. Active inputs hold the minimum. An
// idle input is left out so that one quiet partition cannot stall the job;
// when it becomes active again (it emits) it rejoins the minimum only once
// its own watermark has caught up with the output (until then its events
// may be late, which is the price of idleness). An ended input (its
// watermark reached Max) is left out for good. Ended is not idle: the
// output reaches Max only when every input has ended, never because the
// inputs that have not ended are all idle, since an idle input may still
// produce (Flink removes a finished split from the minimum; it does not
// count it as end of time for the others).
type Combiner struct {
	wms     []int64
	idle    []bool
	ended   []bool
	aligned []bool
	cur     int64
}

// NewCombiner returns a combiner over n active inputs, all at Min.
func NewCombiner(n int) *Combiner {
	c := &Combiner{wms: make([]int64, n), idle: make([]bool, n), ended: make([]bool, n), aligned: make([]bool, n), cur: Min}
	for i := range c.wms {
		c.wms[i] = Min
		c.aligned[i] = true
	}
	if n == 0 {
		c.cur = Max
	}
	return c
}

// Current is the combined watermark.
func (c *Combiner) Current() int64 { return c.cur }

// Of returns input i's own watermark.
func (c *Combiner) Of(i int) int64 { return c.wms[i] }

// Idle reports whether input i is idle.
func (c *Combiner) Idle(i int) bool { return c.idle[i] }

// Ended reports whether input i has ended (its watermark reached Max).
func (c *Combiner) Ended(i int) bool { return c.ended[i] }

// AllIdle reports whether every input that has not ended is idle.
func (c *Combiner) AllIdle() bool {
	any := false
	for i := range c.wms {
		if c.ended[i] {
			continue
		}
		any = true
		if !c.idle[i] {
			return false
		}
	}
	return any
}

// Others is the minimum over the active, aligned inputs other than i (Max if
// there is none): what caps input i's contribution to the output.
func (c *Combiner) Others(i int) int64 {
	m := int64(Max)
	for j, w := range c.wms {
		if j != i && c.holds(j) && w < m {
			m = w
		}
	}
	return m
}

// holds reports whether input j takes part in the minimum.
func (c *Combiner) holds(j int) bool { return !c.idle[j] && !c.ended[j] && c.aligned[j] }

// At is the combined watermark if input i's watermark were w, the others
// unchanged: max(output, min(w, others)). The task loops use it to derive
// the combined watermark before each record of a batch from one input.
func At(cur, w, others int64) int64 {
	return max(cur, min(w, others))
}

// Update sets input i's watermark (ignoring regressions), marks it active,
// and returns the combined watermark and whether it advanced. A watermark
// of Max ends the input (End).
func (c *Combiner) Update(i int, wm int64) (int64, bool) {
	if c.ended[i] {
		return c.cur, false
	}
	if wm > c.wms[i] {
		c.wms[i] = wm
	}
	if c.wms[i] == Max {
		return c.End(i)
	}
	if c.idle[i] {
		c.idle[i] = false
		c.aligned[i] = false // rejoins below once caught up
	}
	if !c.aligned[i] && c.wms[i] >= c.cur {
		c.aligned[i] = true
	}
	return c.recompute()
}

// End marks input i ended: it leaves the minimum for good. The output goes
// to Max once every input has ended.
func (c *Combiner) End(i int) (int64, bool) {
	if c.ended[i] {
		return c.cur, false
	}
	c.ended[i], c.idle[i], c.wms[i] = true, false, Max
	return c.recompute()
}

// SetIdle marks input i idle or active. An input becoming active again is
// aligned only if its watermark has reached the output. An ended input
// stays ended.
func (c *Combiner) SetIdle(i int, idle bool) (int64, bool) {
	if c.idle[i] == idle || c.ended[i] {
		return c.cur, false
	}
	c.idle[i] = idle
	if !idle {
		c.aligned[i] = c.wms[i] >= c.cur || c.cur == Min
	}
	return c.recompute()
}

func (c *Combiner) recompute() (int64, bool) {
	m := int64(Max)
	found, allEnded := false, true
	for j, w := range c.wms {
		if !c.ended[j] {
			allEnded = false
		}
		if c.holds(j) {
			found = true
			if w < m {
				m = w
			}
		}
	}
	// No input holds the minimum: either all have ended (end of time), or
	// the rest are idle or catching up, and the output stays where it is.
	if !found && !allEnded {
		return c.cur, false
	}
	if m > c.cur {
		c.cur = m
		return m, true
	}
	return c.cur, false
}
