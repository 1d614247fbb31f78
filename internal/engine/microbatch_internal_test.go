package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/coordinator"
	"github.com/weirstream/weir/internal/testing/poll"
)

// gateSource is one split of event times that the test hands to the
// reader batch by batch; closing feed ends the input.
type gateSource struct{ feed chan []int64 }

type gateSplit struct{}

func (gateSplit) ID() string { return "gate" }

func (s *gateSource) Splits(context.Context) ([]Split, error) { return []Split{gateSplit{}}, nil }
func (s *gateSource) Open(context.Context, Split) (SplitReader[int64], error) {
	return &gateReader{feed: s.feed}, nil
}
func (s *gateSource) OpenAt(context.Context, Split, []byte) (SplitReader[int64], error) {
	return nil, errors.New("gateSource: no restore in this test")
}

type gateReader struct {
	feed chan []int64
	read uint64
	t    *time.Timer
}

func (r *gateReader) Read(ctx context.Context, dst []int64) (int, error) {
	if r.t == nil {
		r.t = time.NewTimer(time.Millisecond)
	} else {
		r.t.Reset(time.Millisecond)
	}
	select {
	case b, ok := <-r.feed:
		if !ok {
			return 0, io.EOF
		}
		r.read += uint64(len(b))
		return copy(dst, b), nil
	case <-r.t.C: // nothing yet: let the source task take barriers
		return 0, nil
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	}
}
func (r *gateReader) Position() ([]byte, error) { return binary.AppendUvarint(nil, r.read), nil }
func (r *gateReader) Close() error              { return nil }

// waitUntil waits for cond, failing the test after a minute.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.WaitFor(t, what, time.Minute, cond)
}

// TestMicrobatchWatermarkHeldWithinEpoch drives the epochs of a
// microbatch job by an injected coordinator clock: the test ends an epoch
// by a tick, once the operator saw every record of it. Every record of
// epoch k sees the watermark computed from the event times of epochs < k
// (Spark's rule), however the records inside the epoch are ordered; in
// continuous mode it would rise record by record. The epoch clock restarts
// after each epoch has settled.
func TestMicrobatchWatermarkHeldWithinEpoch(t *testing.T) {
	ticks := make(chan time.Time)
	var clockStarts atomic.Int64
	ckTime := coordinator.Time{Ticks: func(time.Duration) (<-chan time.Time, func()) {
		clockStarts.Add(1)
		return ticks, func() {}
	}}
	src := &gateSource{feed: make(chan []int64)}
	const delay = 10
	job := NewJob("microbatch-wm", Microbatch(time.Hour), jobOpt{"ckTime", func(c *config) { c.ckTime = ckTime }})
	in := FromSource(job, "in", Source[int64](src), BoundedOutOfOrderness(delay*time.Millisecond, func(ts int64) time.Time { return time.UnixMilli(ts) }))
	var mu sync.Mutex
	seen := map[int64]int64{} // event time -> watermark the operator saw with it
	out := Process(KeyBy(in, func(int64) int { return 0 }), ProcessFunc[int, int64, int64](func(ctx *KeyedContext[int, int64], ts int64) error {
		mu.Lock()
		seen[ts] = ctx.Watermark().UnixMilli()
		mu.Unlock()
		return nil
	}))
	To(out, SinkFunc[int64](func(context.Context, []int64) error { return nil }))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()

	// Epoch k holds event times 1000k .. 1000k+99, disordered within the
	// bound: descending by 3 from the top, then the rest.
	epoch := func(k int64) []int64 {
		var b []int64
		for i := int64(99); i >= 0; i -= 3 {
			b = append(b, 1000*k+i)
		}
		for i := int64(0); i < 100; i++ {
			if (99-i)%3 != 0 {
				b = append(b, 1000*k+i)
			}
		}
		return b
	}
	fed := 0
	for k := int64(1); k <= 4; k++ {
		b := epoch(k)
		src.feed <- b
		fed += len(b)
		waitUntil(t, fmt.Sprintf("epoch %d at the operator", k), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(seen) == fed
		})
		ticks <- time.Time{} // the epoch ends
		waitUntil(t, fmt.Sprintf("epoch %d committed", k), func() bool { return job.Metrics().Checkpoints.Completed == k })
		// The coordinator restarts the clock once the epoch has settled,
		// which may be just after the metrics count it completed.
		waitUntil(t, fmt.Sprintf("the epoch clock restarted after epoch %d", k), func() bool { return clockStarts.Load() >= k+1 })
		if got := clockStarts.Load(); got != k+1 {
			t.Fatalf("after epoch %d: the epoch clock started %d times, want %d (once, then after each epoch)", k, got, k+1)
		}
	}
	close(src.feed)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for k := int64(1); k <= 4; k++ {
		want := int64(1000*(k-1) + 99 - delay - 1) // from the largest event time of epoch k-1
		for _, ts := range epoch(k) {
			got := seen[ts]
			if k == 1 {
				if got >= 1000 {
					t.Fatalf("epoch 1, event %d: watermark %d, want none yet", ts, got)
				}
				continue
			}
			if got != want {
				t.Fatalf("epoch %d, event %d: watermark %d, want %d held since the epoch began", k, ts, got, want)
			}
		}
	}
}
