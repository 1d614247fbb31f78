package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

type ev struct {
	Key string
	TS  int64 // ms
}

// modelWindows is the naive record-at-a-time model of an event-time window
// count: the watermark is max(ts) - bound - 1 after each event, and an event
// is dropped for a window whose end-1 <= watermark at its arrival.
func modelWindows(evs []ev, bound, size, slide, offset int64) (map[wkey]int64, int64) {
	counts := map[wkey]int64{}
	wm := int64(-1 << 63)
	maxTS := int64(-1 << 63)
	var dropped int64
	for _, e := range evs {
		r := (e.TS - offset) % slide
		if r < 0 {
			r += slide
		}
		accepted := false
		for s := e.TS - r; s > e.TS-size; s -= slide {
			if s+size-1 <= wm {
				continue
			}
			counts[wkey{e.Key, s}]++
			accepted = true
		}
		if !accepted {
			dropped++
		}
		if e.TS > maxTS {
			maxTS = e.TS
			wm = maxTS - bound - 1
		}
	}
	return counts, dropped
}

// randomEvents makes n events, most within `bound` of disorder and a share
// up to `late` behind, with negative timestamps included.
func randomEvents(r *rand.Rand, n int, bound, late int64) []ev {
	out := make([]ev, n)
	t := int64(-50_000)
	for i := range out {
		t += r.Int64N(40)
		d := r.Int64N(bound + 1)
		if r.IntN(10) == 0 {
			d = r.Int64N(late + 1)
		}
		out[i] = ev{Key: fmt.Sprintf("k%d", r.IntN(7)), TS: t - d}
	}
	return out
}

func runWindows(t *testing.T, evs []ev, w weir.Windows, bound time.Duration, p, batch int) (map[wkey]int64, int64) {
	t.Helper()
	job := weir.NewJob("w", weir.Parallelism(p), weir.BatchSize(batch))
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(bound, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w), weir.Count[ev]())
	out := weir.Collect(res)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[wkey]int64{}
	for _, r := range out.Items() {
		k := wkey{r.Key, r.Start.UnixMilli()}
		if _, dup := got[k]; dup {
			t.Fatalf("window %v emitted twice", k)
		}
		got[k] = r.Value
	}
	return got, job.Metrics().Sum(lateDropped)
}

// Windows with late events, checked against the naive model, for every
// parallelism and batch size: the per-record watermark makes the result
// independent of how the stream is cut into batches.
func TestWindowsMatchRecordAtATimeModel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 4; trial++ {
		evs := randomEvents(r, 3000, 500, 5000)
		for _, wc := range []struct {
			name                string
			w                   weir.Windows
			size, slide, offset int64
		}{
			{"tumbling", weir.Tumbling(time.Second), 1000, 1000, 0},
			{"tumbling-offset", weir.Tumbling(time.Second).WithOffset(300 * time.Millisecond), 1000, 1000, 300},
			{"hopping", weir.Hopping(3*time.Second, time.Second), 3000, 1000, 0},
			{"hopping-offset", weir.Hopping(2500*time.Millisecond, 700*time.Millisecond).WithOffset(-100 * time.Millisecond), 2500, 700, 600},
		} {
			want, wantDropped := modelWindows(evs, 500, wc.size, wc.slide, wc.offset)
			if wantDropped == 0 {
				t.Fatalf("test input has no late events")
			}
			for _, p := range []int{1, 2, 4} {
				for _, bs := range []int{1, 13, 1024} {
					t.Run(fmt.Sprintf("%d/%s/p%d/b%d", trial, wc.name, p, bs), func(t *testing.T) {
						got, dropped := runWindows(t, evs, wc.w, 500*time.Millisecond, p, bs)
						diff(t, got, want)
						if dropped != wantDropped {
							t.Fatalf("dropped %d, model drops %d", dropped, wantDropped)
						}
					})
				}
			}
		}
	}
}

// Hand-worked: a late event exactly at the edge.
func TestLateEdge(t *testing.T) {
	// Bound 0: watermark = max - 1. After ts=1999 arrives, W = 1998, so
	// window [1000,2000) (end-1 = 1999) has not fired and ts=1000 counts.
	// After ts=2000, W = 1999 fires it, and ts=1500 is late.
	evs := []ev{{"a", 1000}, {"a", 1999}, {"a", 1000}, {"a", 2000}, {"a", 1500}, {"a", 2999}}
	got, dropped := runWindows(t, evs, weir.Tumbling(time.Second), 0, 1, 1024)
	want := map[wkey]int64{{"a", 1000}: 3, {"a", 2000}: 2}
	diff(t, got, want)
	if dropped != 1 {
		t.Fatalf("dropped %d, want 1", dropped)
	}
}

func TestInvalidWindowsFailRun(t *testing.T) {
	job := weir.NewJob("bad")
	src := weir.FromSource(job, "s", weir.SliceSource([]ev{{"a", 1}}), weir.NoWatermarks[ev]())
	weir.Collect(weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Hopping(time.Second, 2*time.Second)), weir.Count[ev]()))
	if err := job.Run(context.Background()); err == nil {
		t.Fatal("slide > size must be rejected")
	}
}
