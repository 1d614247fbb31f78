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

// MaxTimestamp is the largest timestamp seen.
func (g *Generator) MaxTimestamp() int64 { return g.max }

// Combiner keeps the minimum watermark over n inputs. Inputs that ended count
// as Max.
type Combiner struct {
	wms []int64
	cur int64
}

// NewCombiner returns a combiner over n inputs, all at Min.
func NewCombiner(n int) *Combiner {
	c := &Combiner{wms: make([]int64, n), cur: Min}
	for i := range c.wms {
		c.wms[i] = Min
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

// MinExcept is the minimum over every input but i (Max if there is none).
func (c *Combiner) MinExcept(i int) int64 {
	m := int64(Max)
	for j, w := range c.wms {
		if j != i && w < m {
			m = w
		}
	}
	return m
}

// Update sets input i's watermark (ignoring regressions) and returns the
// combined watermark and whether it advanced.
func (c *Combiner) Update(i int, wm int64) (int64, bool) {
	if wm <= c.wms[i] {
		return c.cur, false
	}
	old := c.wms[i]
	c.wms[i] = wm
	if old != c.cur {
		return c.cur, false // i was not the minimum: the minimum is unchanged
	}
	m := int64(Max)
	for _, w := range c.wms {
		if w < m {
			m = w
		}
	}
	if m > c.cur {
		c.cur = m
		return m, true
	}
	return c.cur, false
}
