package cli

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/app/adclicks"
)

// microbatchUsage is the help of every command's --microbatch flag.
const microbatchUsage = "run in microbatch epochs of this much processing time (e.g. 100ms; 0: continuous, record at a time): the watermark moves and output commits only between epochs (docs/microbatch.md)"

// checkMicrobatch refuses a negative --microbatch.
func checkMicrobatch(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("--microbatch %v: must not be negative (0: continuous)", d)
	}
	return nil
}

// adclicksLatency runs the adclicks workload paced at rate events per
// second for about dur (the --latency-* run of `weir bench adclicks`, as
// `weir bench nexmark` does it) and returns the latency of every window
// result: its sink time minus the scheduled time of the first event that
// could move the watermark past the window's end (window end + delay; the
// scheduled, not the actual, read time, so a source that falls behind
// counts: no coordinated omission). Event i has event time at most StartMs
// + i, so no event before index end + delay - StartMs can fire the window:
// the latency is never underestimated.
func adclicksLatency(ctx context.Context, rate float64, dur time.Duration, delayMs int64, parallelism, splits int, opts []weir.JobOption) (*histogram, error) {
	n := max(int64(rate*dur.Seconds()), 1)
	splits = max(splits, 1)
	perSplit := rate
	if splits > 1 {
		perSplit = rate / float64(splits)
	}
	src := &startedSource[adclicks.Click]{src: adclicks.SplitSource(n, adclicks.JitterMs, adclicks.Seed, perSplit, splits).(weir.RestorableSource[adclicks.Click])}
	job := weir.NewJob("bench-adclicks-latency", append([]weir.JobOption{weir.Parallelism(parallelism)}, opts...)...)
	clicks := weir.FromSource(job, "clicks", weir.Source[adclicks.Click](src),
		weir.BoundedOutOfOrderness(time.Duration(delayMs)*time.Millisecond, func(c adclicks.Click) time.Time { return time.UnixMilli(c.EventTimeMs) }))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(clicks, func(c adclicks.Click) int64 { return c.AdID }),
		weir.Tumbling(time.Duration(adclicks.WindowMs)*time.Millisecond)), weir.Count[adclicks.Click]())
	// sched is the scheduled time (ns after the start) of event i: split
	// s = (i/SplitBlock) mod splits emits its k-th event at k/perSplit.
	sched := func(i int64) int64 {
		k := i
		if splits > 1 {
			b := i / adclicks.SplitBlock
			k = (b/int64(splits))*adclicks.SplitBlock + i%adclicks.SplitBlock
		}
		return int64(float64(k) / perSplit * 1e9)
	}
	// ready is the scheduled time by which every split may have read an
	// event at or past the window end + delay (or read all its events).
	ready := func(endMs int64) int64 {
		i0 := max(endMs+delayMs-adclicks.StartMs, 0)
		var t int64
		for s := int64(0); s < int64(splits); s++ {
			i := i0
			if b := i0 / adclicks.SplitBlock; splits > 1 && b%int64(splits) != s {
				nb := b + (s-b%int64(splits)+int64(splits))%int64(splits)
				i = nb * adclicks.SplitBlock
			}
			t = max(t, sched(min(i, n-1)))
		}
		return t
	}
	var mu sync.Mutex
	h := &histogram{}
	weir.To(counts, weir.SinkFunc[weir.WindowResult[int64, int64]](func(_ context.Context, rs []weir.WindowResult[int64, int64]) error {
		now := time.Now().UnixNano()
		start := src.started.Load()
		mu.Lock()
		defer mu.Unlock()
		for i := range rs {
			due := start + ready(rs[i].End.UnixMilli())
			h.add(max(now-due, 0) / 1e3)
		}
		return nil
	}))
	if err := job.Run(ctx); err != nil {
		return nil, err
	}
	if h.count == 0 {
		return nil, fmt.Errorf("the latency run produced no results (rate %.0f/s for %v)", rate, dur)
	}
	return h, nil
}

// startedSource records when its first reader was opened (unix ns): the
// readers' pacers start after that, so a schedule counted from it is never
// later than the real one.
type startedSource[T any] struct {
	src     weir.RestorableSource[T]
	started atomic.Int64
}

func (s *startedSource[T]) Splits(ctx context.Context) ([]weir.Split, error) {
	return s.src.Splits(ctx)
}

func (s *startedSource[T]) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[T], error) {
	s.started.CompareAndSwap(0, time.Now().UnixNano())
	return s.src.Open(ctx, sp)
}

func (s *startedSource[T]) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[T], error) {
	s.started.CompareAndSwap(0, time.Now().UnixNano())
	return s.src.OpenAt(ctx, sp, pos)
}

// msOf is a histogram quantile in ms (NaN as 0 for JSON).
func msOf(us float64) float64 {
	if math.IsNaN(us) {
		return 0
	}
	return us / 1e3
}
