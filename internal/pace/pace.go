// Package pace limits a source to a rate of records per second of wall
// clock time, counted from when the source (re)started.
package pace

import (
	"context"
	"math"
	"time"
)

// Grain is the longest a Pacer holds back a record that is due while it
// waits for a batch's worth of records (Allow's want) to be due.
//
// A pacer that allowed whatever was due would make its source read smaller
// and smaller batches whenever it was a little behind: while the job sends
// a batch on, more records come due, the next read takes those, and so on
// down to a record or two a read, each with its clock reading, its trip
// through the source's operators and its channel sends. And one that
// waited only for the next record's slot would sleep for under a
// microsecond at millions of records a second. A record is still never
// allowed before its slot, and a source's latency still counts from it.
const Grain = time.Millisecond

// MaxHold is the longest Hold asks a source to wait at once, so that it
// can flush what it holds and notice a cancellation.
const MaxHold = 10 * time.Millisecond

// Due is when record n (counted from 0) of a source paced at rate records
// a second is due, after its start: the first time the count of records
// due by then (elapsed·rate, truncated) exceeds n, and a nanosecond later
// than the exact quotient, so that float rounding never lets a record out
// (or wakes a source) just before.
func Due(n int64, rate float64) time.Duration {
	ns := math.Ceil(float64(n+1) / rate * 1e9)
	if !(ns < math.MaxInt64/2) { // saturate: a due time beyond ~146 years (or NaN)
		return math.MaxInt64 / 2
	}
	return time.Duration(ns) + 1
}

// Hold is how long a paced source waits before it reads, the rule of a
// Pacer and of Nexmark's paced reader alike. elapsed is the time since the
// source's start, next and batch the times (since the start too) when its
// next record and the last record of a full batch are due. It is 0 (read
// what is due now) once the batch is due or the next record has been due
// for Grain; otherwise the wait until the earlier of those, at most
// MaxHold.
func Hold(elapsed, next, batch time.Duration) time.Duration {
	if batch <= elapsed || next+Grain <= elapsed {
		return 0
	}
	return min(min(batch, next+Grain)-elapsed, MaxHold)
}

// Pacer hands out how many records a source may emit now.
type Pacer struct {
	rate    float64
	start   time.Time
	emitted int64
	timer   *time.Timer
	// now and sleep are the clock (time.Now, a timer); tests replace them.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a pacer for rate records per second (rate <= 0: unlimited).
func New(rate float64) *Pacer {
	p := &Pacer{rate: rate, now: time.Now}
	p.sleep = p.sleepTimer
	p.start = p.now()
	return p
}

// Allow returns how many of want records may be emitted now: want if as
// many are due; fewer only once the first of them has been due for Grain.
// Otherwise it waits until want are due or the first has been due for
// Grain (Hold), at most MaxHold, and returns 0.
func (p *Pacer) Allow(ctx context.Context, want int) (int, error) {
	if !(p.rate > 0) { // 0, negative or NaN: unlimited (the CLI refuses NaN)
		return want, nil
	}
	elapsed := p.now().Sub(p.start)
	// In float until compared: elapsed·rate may exceed int64 (a huge rate).
	dueF := elapsed.Seconds()*p.rate - float64(p.emitted)
	if dueF >= float64(want) {
		return want, nil
	}
	due := int64(max(dueF, 0))
	wait := Hold(elapsed, Due(p.emitted, p.rate), Due(p.emitted+int64(max(want, 1))-1, p.rate))
	if wait == 0 && due > 0 {
		return int(due), nil // fewer than want, the first due for Grain
	}
	if err := p.sleep(ctx, max(wait, time.Microsecond)); err != nil {
		return 0, err
	}
	return 0, nil
}

func (p *Pacer) sleepTimer(ctx context.Context, d time.Duration) error {
	if p.timer == nil {
		p.timer = time.NewTimer(d)
	} else {
		p.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		p.timer.Stop()
		return context.Cause(ctx)
	case <-p.timer.C:
	}
	return nil
}

// Emitted records that n records were emitted.
func (p *Pacer) Emitted(n int) { p.emitted += int64(n) }

// Stop releases the timer.
func (p *Pacer) Stop() {
	if p.timer != nil {
		p.timer.Stop()
	}
}
