package weir_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/testing/weirtest"

	"github.com/weirstream/weir"
)

// openSource never ends (until the job is cancelled) and never emits.
type openSource struct{}

func (openSource) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{split("open")}, nil
}

func (openSource) Open(context.Context, weir.Split) (weir.SplitReader[int], error) {
	return openReader{}, nil
}

func (openSource) OpenAt(context.Context, weir.Split, []byte) (weir.SplitReader[int], error) {
	return openReader{}, nil
}

type openReader struct{}

func (openReader) Read(ctx context.Context, _ []int) (int, error) {
	select {
	case <-ctx.Done():
		return 0, context.Cause(ctx)
	case <-time.After(2 * time.Millisecond):
		return 0, nil
	}
}

func (openReader) Position() ([]byte, error) { return []byte{0}, nil }
func (openReader) Close() error              { return nil }

// A bounded source that ends while the job goes on (a side input) ships
// its last records and its final watermark at once, although, waiting for
// the final checkpoint, it no longer runs its buffer timeout: they do not
// wait for the next checkpoint barrier (an hour away here).
func TestEndedSourceFlushesBeforeTheFinalCheckpoint(t *testing.T) {
	job := weir.NewJob("side-flush", weir.Checkpointing(time.Hour, t.TempDir()), weirtest.FirstCheckpointAfter(time.Hour))
	side := weir.FromSource(job, "side", weir.SliceSource([]int{1, 2, 3}), weir.NoWatermarks[int]())
	open := weir.FromSource(job, "open", openSource{}, weir.NoWatermarks[int]())
	var seen atomic.Int64
	out := weir.Process(weir.KeyBy(weir.Union(side, open), func(v int) int { return v }),
		weir.ProcessFunc[int, int, int](func(_ *weir.KeyedContext[int, int], v int) error {
			seen.Add(int64(v))
			return nil
		}))
	weir.Collect(out)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	if !weirtest.Poll(60*time.Second, func() bool { return seen.Load() == 6 }) {
		t.Fatalf("the ended source's records are held back: %d of 6 seen", seen.Load())
	}
	cancel()
	<-done
}
