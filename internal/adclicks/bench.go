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
	Options     []weir.Option // extra job options (batch size, ...)
}

// RunWeir runs the standard workload as a weir job written with the public
// API the way a user would: a generator source, event-time tumbling windows
// of 60s keyed by ad, a count, and a sink that folds results into the
// digest.
func RunWeir(ctx context.Context, c BenchConfig) (Digest, error) {
	job := weir.NewJob("bench-adclicks", append([]weir.Option{weir.Parallelism(c.Parallelism)}, c.Options...)...)
	clicks := weir.FromSource(job, "clicks", Source(c.N, JitterMs, Seed, 0),
		weir.BoundedOutOfOrderness(time.Duration(c.DelayMs)*time.Millisecond,
			func(c Click) time.Time { return time.UnixMilli(c.EventTimeMs) }))
	perAd := weir.KeyBy(clicks, func(c Click) int64 { return c.AdID })
	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Duration(WindowMs)*time.Millisecond)), weir.Count[Click]())
	sink := &digestSink{}
	weir.To(counts, sink)
	if err := job.Run(ctx); err != nil {
		return Digest{}, err
	}
	d := sink.total()
	d.Dropped = job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 { return o.LateDropped.Load() })
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
