package weir_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// twoSplits has a busy split and a silent one that never ends.
type twoSplits struct{ n int64 }

func (s twoSplits) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{split("busy"), split("silent")}, nil
}

func (s twoSplits) Open(_ context.Context, sp weir.Split) (weir.SplitReader[ev], error) {
	return &twoReader{silent: sp.ID() == "silent", n: s.n}, nil
}

type twoReader struct {
	silent bool
	i, n   int64
}

func (r *twoReader) Read(ctx context.Context, dst []ev) (int, error) {
	if r.silent || r.i >= r.n {
		select { // an unbounded split with nothing to say waits a little
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Millisecond):
		}
		return 0, nil
	}
	k := 0
	for k < len(dst) && r.i < r.n {
		dst[k] = ev{Key: "a", TS: r.i * 100}
		r.i++
		k++
	}
	return k, nil
}

func (r *twoReader) Close() error { return nil }

// A silent split holds every window back, unless the strategy declares
// splits idle after a while: then windows fire while it stays silent.
// Without idleness, the test waits until the window operator took all 100
// records and checks that its watermark is still "none" (nothing can
// fire); it does not wait some time for a wrong firing to show.
// The window runs on the heap's window operator, and on PebbleState's
// process function (window_state.go).
func TestIdleSplitStopsHoldingTheWatermark(t *testing.T) {
	for _, c := range []struct{ idle, pebble bool }{{false, false}, {true, false}, {false, true}, {true, true}} {
		idle := c.idle
		var clock atomic.Int64 // a fake clock that moves 10ms per reading
		now := func() time.Time { return time.UnixMilli(clock.Add(10)) }
		opts := []weir.JobOption{weir.Clock(now)}
		if c.pebble {
			opts = append(opts, weir.PebbleState(t.TempDir(), 4<<20))
		}
		job := weir.NewJob("idle", opts...)
		ws := weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) })
		if idle {
			ws = ws.WithIdleness(time.Second)
		}
		src := weir.FromSource(job, "two", weir.Source[ev](twoSplits{n: 100}), ws)
		out := weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev](), weir.Name("counts")))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- job.Run(ctx) }()
		if idle {
			// Events cover [0, 9900]: with the silent split idle, windows
			// up to [8000, 9000) fire (the watermark reaches 9899).
			weirtest.WaitFor(t, "9 windows", 30*time.Second, func() bool { return len(out.Items()) >= 9 })
		} else {
			var wm int64
			weirtest.WaitFor(t, "the window operator to take all 100 records", 30*time.Second, func() bool {
				for _, o := range job.Metrics().Operators {
					if o.Name == "counts" && o.RecordsIn == 100 {
						wm = o.Watermark
						return true
					}
				}
				return false
			})
			if wm != math.MinInt64 {
				t.Errorf("without idleness the silent split must hold the watermark: the window operator has %d", wm)
			}
		}
		got := len(out.Items())
		cancel()
		<-done
		if idle && got != 9 {
			t.Fatalf("with idleness: %d windows fired, want 9", got)
		}
		if !idle && got != 0 {
			t.Fatalf("without idleness the silent split must hold every window: %d fired", got)
		}
	}
}
