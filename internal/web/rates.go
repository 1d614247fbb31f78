package web

import (
	"sync"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// counters are an operator's cumulative counters summed over its
// subtasks at one moment.
type counters struct {
	in, out, bpNanos int64
}

type sample struct {
	at  time.Time
	ops map[string]counters // by operator name
}

// sampler keeps the samples of the last window, from which the rates are
// differences: records per second and the share of time blocked on full
// queues. A sample is a few integers per operator, taken once a second.
type sampler struct {
	window time.Duration
	mu     struct {
		sync.Mutex
		samples []sample // oldest first
	}
}

func newSampler(window time.Duration) *sampler { return &sampler{window: window} }

// take reads the registry's counters.
func take(reg *metrics.Registry, at time.Time) sample {
	s := sample{at: at, ops: map[string]counters{}}
	for _, o := range reg.Snapshot() {
		c := s.ops[o.Name]
		c.in += o.RecordsIn.Load()
		c.out += o.RecordsOut.Load()
		c.bpNanos += o.BackpressureNanos.Load()
		s.ops[o.Name] = c
	}
	return s
}

// add keeps smp, and of the older samples those within the window plus
// the newest one before it, so that a rate spans the whole window.
func (r *sampler) add(smp sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.samples = append(r.mu.samples, smp)
	cut := smp.at.Add(-r.window)
	drop := 0
	for drop+1 < len(r.mu.samples) && !r.mu.samples[drop+1].at.After(cut) {
		drop++
	}
	r.mu.samples = append(r.mu.samples[:0], r.mu.samples[drop:]...)
}

// base is the sample a rate at now is measured from: the oldest kept one
// that is older than now.
func (r *sampler) base(now time.Time) (sample, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.mu.samples {
		if s.at.Before(now) {
			return s, true
		}
	}
	return sample{}, false
}

// rate is what the API reports for one operator.
type rate struct {
	in, out      float64 // records per second
	backpressure float64 // share of its subtasks' time blocked, 0..1
}

// rates of cur against the window's base sample; parallelism divides the
// blocked time among subtasks. Counters that went down (they do not, but
// a rate must never be negative) count as 0.
func (r *sampler) rates(cur sample, parallelism map[string]int) map[string]rate {
	out := map[string]rate{}
	b, ok := r.base(cur.at)
	if !ok {
		return out
	}
	dt := cur.at.Sub(b.at).Seconds()
	for name, c := range cur.ops {
		p := b.ops[name]
		x := rate{
			in:  max(0, float64(c.in-p.in)/dt),
			out: max(0, float64(c.out-p.out)/dt),
		}
		if n := parallelism[name]; n > 0 {
			x.backpressure = min(1, max(0, float64(c.bpNanos-p.bpNanos)/1e9/dt/float64(n)))
		}
		out[name] = x
	}
	return out
}

// sample adds a sample of the registry now.
func (s *Server) sample() { s.rates.add(take(s.cfg.Registry, s.cfg.Now())) }
