package cli

import (
	"context"
	"math"
	"runtime"
	"sync"
	"time"

	"github.com/weirstream/weir/nexmark"
)

// The maximum a latency run is paced against.
//
// The throughput run (--events at the Flink suite's 10M/s of event time)
// spans about a second of event time: a windowed query closes no window
// before the end of its input, so its events/s leaves out the steady state
// of a stream that fires windows — a 10 s window's state at the paced rate,
// firing it while the input keeps coming, and the heap that holds it. Paced
// at a fraction of that figure, a windowed query can build a backlog where
// a lower rate would meet the target. Flink's Nexmark runs span many
// windows; so does the run here. For a windowed query, pacingMax runs the
// query once more, as fast as it goes, over event time spanning two window
// extents + the watermark delay (the first window closes by the watermark
// a third of the way in, the rest of the input is processed while windows
// fire), at the event rate the latency run would have had from the
// throughput run (--latency-fraction × its events/s, so the windows hold
// as many events as the latency run's), and the latency run is paced at
// --latency-fraction of the lower of that run's and the throughput run's
// events/s. The latency run's rate is then at most the one the pacing run
// was generated at, so its windows are no larger than the ones measured:
// one step of the fixed point "pace at the fraction of what the query
// sustains at that pace", on the safe side.

// pacingSpan is the event time a windowed query's pacing run spans.
func pacingSpan(q *nexmark.Query) time.Duration {
	return 2*q.Extent + nexmark.WatermarkDelay
}

// pacingRun is the generator of a windowed query's pacing run, given the
// throughput run's events/s: event rate --latency-fraction × that, enough
// events to span pacingSpan, at most --pacing-events (default
// defaultPacingEvents × --events; then the event rate is lowered so that
// the span stays).
//
// The cap, when it binds, breaks the promise above: the pacing run's
// windows are then smaller than the latency run's, and a pacing run that
// happens to be fast can pace a latency run that cannot keep up. So the
// default is large: at 25 × the pacing run holds the latency run's windows
// (pacingSpan of event time for q5, q7, q8 and q11) up to a throughput run
// of 20 M events/s at --latency-fraction 0.5.
const defaultPacingEvents = 25

func pacingRun(q *nexmark.Query, maxRate float64, o nexmarkBenchOpts) nexmark.GeneratorConfig {
	span := pacingSpan(q).Seconds()
	rate := o.fraction * maxRate
	limit := o.pacingEvents
	if limit <= 0 {
		limit = defaultPacingEvents * o.events
	}
	// Event n is at n/rate s, truncated to µs and then ms: n events span
	// (n-1)/rate, and a millisecond more keeps the truncation inside.
	span += 1e-3
	n := int64(math.Ceil(rate*span)) + 1
	if n > limit {
		n = max(limit, 2)
		rate = float64(n-1) / span
	}
	return nexmark.GeneratorConfig{Events: n, Seed: 3, EventRate: rate, Splits: o.parallelism}
}

// pacingMax sets res's pacing fields: for a query without windows the
// throughput run's events/s, for a windowed one that of a pacing run.
func pacingMax(ctx context.Context, q *nexmark.Query, o nexmarkBenchOpts, res *nexmarkBenchResult) error {
	if !q.Windowed {
		res.PacingMaxEventsPerSec, res.PacingFrom = res.EventsPerSec, "throughput"
		return nil
	}
	cfg := pacingRun(q, res.EventsPerSec, o)
	src := nexmark.Source(cfg)
	g := src.Generator()
	cnt := &firedCounter{last: g.Timestamp(cfg.Events - 1)}
	runtime.GC()
	cpu0 := cpuTime()
	start := time.Now()
	_, err := runBenchJob(ctx, q, src, cnt.output(), o)
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	if err != nil {
		return err
	}
	// Both runs went as fast as the query goes: the maximum is the lower.
	// The windows run is generated at --latency-fraction of the
	// throughput run's rate, so its windows are smaller than a full-rate
	// run's; on a machine whose load changed between the runs it may come
	// out faster, and a latency run paced above the windows run's own
	// event rate would hold larger windows than the ones measured.
	res.PacingRunEventsPerSec = float64(cfg.Events) / el.Seconds()
	res.PacingMaxEventsPerSec, res.PacingFrom = res.PacingRunEventsPerSec, "windows"
	if res.EventsPerSec < res.PacingRunEventsPerSec {
		res.PacingMaxEventsPerSec, res.PacingFrom = res.EventsPerSec, "throughput"
	}
	res.PacingEvents, res.PacingEventRate = cfg.Events, cfg.EventRate
	res.PacingEventTimeSecs = float64(cnt.last-g.Config().BaseTime) / 1e3
	res.PacingSeconds, res.PacingCPUSeconds = el.Seconds(), cpu.Seconds()
	res.PacingRows, res.PacingWindowRows = cnt.totals()
	return nil
}

// firedCounter is a discarding sink that counts rows, and apart those
// fired before the end of the input: a row whose Ready is within the
// input's event time was fired by the watermark during the run.
type firedCounter struct {
	last   int64 // event time of the last event
	mu     sync.Mutex
	counts []*[2]int64 // per subtask: rows, rows fired during the run
}

func (c *firedCounter) output() nexmark.Output {
	return func(int) (nexmark.RowWriter, error) {
		n := new([2]int64)
		c.mu.Lock()
		c.counts = append(c.counts, n)
		c.mu.Unlock()
		return firedWriter{n, c.last}, nil
	}
}

func (c *firedCounter) totals() (rows, fired int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.counts {
		rows += n[0]
		fired += n[1]
	}
	return rows, fired
}

type firedWriter struct {
	n    *[2]int64
	last int64
}

func (w firedWriter) Write(r nexmark.Row) error {
	w.n[0]++
	if r.Ready() <= w.last {
		w.n[1]++
	}
	return nil
}

func (w firedWriter) Close() error { return nil }
