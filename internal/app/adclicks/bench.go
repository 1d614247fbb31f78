package adclicks

import (
	"context"
	"sync"
	"time"

	"github.com/weirstream/weir"
)

// BenchConfig selects a run of the standard workload.
type BenchConfig struct {
	N           int64
	DelayMs     int64
	Parallelism int
	// Splits is the number of source splits (SplitSource; 0 or 1: one).
	// More than one gives the reference digest only if DelayMs >= JitterMs
	// (see SplitSource).
	Splits  int
	Options []weir.JobOption // extra job options (batch size, ...)
	// FailAt > 0 makes the job fail once, when it reads event number
	// FailAt, to measure recovery (with checkpointing among Options).
	FailAt int64
	// Recovery receives the time from that failure to the first event
	// read after the restart.
	Recovery *time.Duration
	// Job, if set, receives the job (for its metrics).
	Job **weir.Job
}

// RunWeir runs the standard workload as a weir job written with the public
// API the way a user would: a generator source, event-time tumbling windows
// of 60s keyed by ad, a count, and a sink that folds results into the
// digest.
func RunWeir(ctx context.Context, c BenchConfig) (Digest, error) {
	job := weir.NewJob("bench-adclicks", append([]weir.JobOption{weir.Parallelism(c.Parallelism)}, c.Options...)...)
	clicks := weir.FromSource(job, "clicks", SplitSource(c.N, JitterMs, Seed, 0, c.Splits),
		weir.BoundedOutOfOrderness(time.Duration(c.DelayMs)*time.Millisecond,
			func(c Click) time.Time { return time.UnixMilli(c.EventTimeMs) }))
	if c.FailAt > 0 {
		clicks = failOnce(clicks, c.FailAt, c.Recovery)
	}
	perAd := weir.KeyBy(clicks, func(c Click) int64 { return c.AdID })
	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Duration(WindowMs)*time.Millisecond)), weir.Count[Click]())
	sink := &digestSink{}
	weir.To(counts, sink)
	if c.Job != nil {
		*c.Job = job
	}
	if err := job.Run(ctx); err != nil {
		return Digest{}, err
	}
	d := sink.total()
	d.Dropped = job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 { return o.LateDropped })
	return d, nil
}

// digestSink folds window results into a Digest per subtask.
type digestSink struct {
	mu   sync.Mutex
	sums []*Digest
}

func (s *digestSink) OpenWriter(context.Context, int, int) (weir.SinkWriter[weir.WindowResult[int64, int64]], error) {
	d := &Digest{}
	s.mu.Lock()
	s.sums = append(s.sums, d)
	s.mu.Unlock()
	return digestWriter{d}, nil
}

func (s *digestSink) total() Digest {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t Digest
	for _, d := range s.sums {
		t.Merge(*d)
	}
	return t
}

type digestWriter struct{ d *Digest }

func (w digestWriter) Write(_ context.Context, rs []weir.WindowResult[int64, int64]) error {
	for i := range rs {
		w.d.Add(rs[i].Key, rs[i].Start.UnixMilli(), rs[i].Value)
	}
	return nil
}

func (w digestWriter) Close(context.Context) error { return nil }

// failOnce fails the job once at event failAt (counted by event time, which
// is StartMs + index up to the jitter) and measures the time until the
// first event after the restart.
func failOnce(s *weir.Stream[Click], failAt int64, recovery *time.Duration) *weir.Stream[Click] {
	var mu sync.Mutex
	var failedAt time.Time
	measured := false
	return weir.Map(s, func(c Click) Click {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case failedAt.IsZero() && c.EventTimeMs >= StartMs+failAt:
			failedAt = time.Now()
			panic("adclicks: injected failure to measure recovery")
		case !failedAt.IsZero() && !measured:
			measured = true
			if recovery != nil {
				*recovery = time.Since(failedAt)
			}
		}
		return c
	})
}
