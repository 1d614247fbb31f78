package weir_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// wmWriter records what a sink writer is told, in order.
type wmWriter struct {
	mu     *sync.Mutex
	events *[]string
	wms    *[]time.Time
}

func (w wmWriter) Write(_ context.Context, items []ev) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for range items {
		*w.events = append(*w.events, "r")
	}
	return nil
}

func (w wmWriter) WriteWatermark(_ context.Context, wm time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	*w.events = append(*w.events, "w")
	*w.wms = append(*w.wms, wm)
	return nil
}

func (w wmWriter) Close(context.Context) error { return nil }

type wmSink struct{ w wmWriter }

func (s wmSink) OpenWriter(context.Context, int, int) (weir.SinkWriter[ev], error) { return s.w, nil }

// A sink writer that takes watermarks is told each advance, in order
// with the records, and the end of the input as the largest time.
func TestWatermarkWriter(t *testing.T) {
	var evs []ev
	for i := range 3000 {
		evs = append(evs, ev{Key: "k", TS: int64(i)})
	}
	var mu sync.Mutex
	var events []string
	var wms []time.Time
	job := weir.NewJob("wm", weir.Parallelism(1))
	src := weir.FromSource(job, "events", weir.SliceSource(evs), weir.BoundedOutOfOrderness(10*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	weir.To(src, weir.Sink[ev](wmSink{wmWriter{&mu, &events, &wms}}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(wms) < 2 {
		t.Fatalf("%d watermarks, want several", len(wms))
	}
	for i := 1; i < len(wms); i++ {
		if !wms[i].After(wms[i-1]) {
			t.Fatalf("watermark %d (%v) does not advance past %v", i, wms[i], wms[i-1])
		}
	}
	if last := wms[len(wms)-1]; last.UnixMilli() != math.MaxInt64 {
		t.Fatalf("the last watermark is %v, want the end of time", last)
	}
	if events[len(events)-1] != "w" || events[0] != "r" {
		t.Fatalf("records and watermarks out of order: first %q, last %q", events[0], events[len(events)-1])
	}
	if wms[len(wms)-2].UnixMilli() > 2999-10 {
		t.Fatalf("the watermark before the end is %d, past the bound of the last record", wms[len(wms)-2].UnixMilli())
	}
}
