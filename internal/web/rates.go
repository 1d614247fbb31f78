package web

import (
	"math"
	"sync"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// counters are an operator's cumulative counters summed over its
// subtasks at one moment.
type counters struct {
	in, out, bpNanos int64
	// wm is the lowest watermark of the subtasks that have one and have
	// not ended (noWM when none has).
	wm int64
}

// noWM is counters.wm of an operator without a live watermark.
const noWM = math.MinInt64

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

// take reads the registry's counters. The watermark is the lowest of the
// operator's current subtasks (below par[name], when par has the name): a
// subtask of an earlier attempt at a higher parallelism keeps its last
// watermark, which must not hold the pace at 0, as the API's lags skip it.
// The counters count every subtask since the process started.
func take(reg *metrics.Registry, at time.Time, par map[string]int) sample {
	s := sample{at: at, ops: map[string]counters{}}
	for _, o := range reg.Snapshot() {
		c, ok := s.ops[o.Name]
		if !ok {
			c.wm = noWM
		}
		current := par[o.Name] == 0 || o.Subtask < par[o.Name]
		if w := o.Watermark.Load(); current && w != math.MinInt64 && w != math.MaxInt64 && (c.wm == noWM || w < c.wm) {
			c.wm = w
		}
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
	// wmPace is how far the lowest watermark moved per unit of wall time
	// over the window (1: as fast as the clock; 0: stalled); wmPaced says
	// whether both ends of the window had one.
	wmPace  float64
	wmPaced bool
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
		if c.wm != noWM && p.wm != noWM {
			x.wmPace, x.wmPaced = float64(c.wm-p.wm)/1e3/dt, true
		}
		out[name] = x
	}
	return out
}

// sample adds a sample of the registry now.
func (s *Server) sample() { s.rates.add(take(s.cfg.Registry, s.cfg.Now(), parallelism(s.cfg.Job()))) }

// parallelism is the parallelism of each of j's operators, by name.
func parallelism(j Job) map[string]int {
	par := map[string]int{}
	for _, op := range j.Operators {
		par[op.Name] += op.Parallelism
	}
	return par
}
