// Package pace limits a source to a rate of records per second of wall
// clock time, counted from when the source (re)started.
package pace

import (
	"context"
	"time"
)

// Pacer hands out how many records a source may emit now.
type Pacer struct {
	rate    float64
	start   time.Time
	emitted int64
	timer   *time.Timer
}

// New returns a pacer for rate records per second (rate <= 0: unlimited).
func New(rate float64) *Pacer { return &Pacer{rate: rate, start: time.Now()} }

// Allow returns how many of want records may be emitted now. When none
// may, it waits for the next record's slot, at most 10ms (so the caller can
// flush and notice cancellation), and returns 0.
func (p *Pacer) Allow(ctx context.Context, want int) (int, error) {
	if p.rate <= 0 {
		return want, nil
	}
	due := int64(time.Since(p.start).Seconds()*p.rate) - p.emitted
	if due > 0 {
		return int(min(due, int64(want))), nil
	}
	wait := min(time.Duration(float64(time.Second)/p.rate), 10*time.Millisecond)
	if p.timer == nil {
		p.timer = time.NewTimer(wait)
	} else {
		p.timer.Reset(wait)
	}
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return 0, context.Cause(ctx)
	case <-p.timer.C:
	}
	return 0, nil
}

// Emitted records that n records were emitted.
func (p *Pacer) Emitted(n int) { p.emitted += int64(n) }

// Stop releases the timer.
func (p *Pacer) Stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}
