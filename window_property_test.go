package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

type spanKey struct {
	key        string
	start, end int64
}

// batchSessions is the batch answer for sessions: per key, sorted events
// split where two consecutive events are more than gap apart.
func batchSessions(evs []ev, gap int64) map[spanKey]int64 {
	by := map[string][]int64{}
	for _, e := range evs {
		by[e.Key] = append(by[e.Key], e.TS)
	}
	out := map[spanKey]int64{}
	for k, ts := range by {
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		start, last, n := ts[0], ts[0], int64(1)
		for _, t := range ts[1:] {
			if t > last+gap {
				out[spanKey{k, start, last + gap}] = n
				start, n = t, 0
			}
			last = t
			n++
		}
		out[spanKey{k, start, last + gap}] = n
	}
	return out
}

// batchSliding: for every event, the count of the key's events in (t-d, t].
func batchSliding(evs []ev, d int64) map[spanKey]int64 {
	out := map[spanKey]int64{}
	for _, e := range evs {
		var n int64
		for _, x := range evs {
			if x.Key == e.Key && x.TS > e.TS-d && x.TS <= e.TS {
				n++
			}
		}
		out[spanKey{e.Key, e.TS - d, e.TS}] = n // peers share a result
	}
	return out
}

func batchAligned(evs []ev, size, slide int64) map[spanKey]int64 {
	out := map[spanKey]int64{}
	for _, e := range evs {
		r := e.TS % slide
		if r < 0 {
			r += slide
		}
		for s := e.TS - r; s > e.TS-size; s -= slide {
			out[spanKey{e.Key, s, s + size}]++
		}
	}
	return out
}

// runSigned runs a count and returns, per window, the signed sum of its
// results (Insert and UpdateAfter add, UpdateBefore and Delete subtract)
// and the last value, plus the number of dropped events.
func runSigned(t *testing.T, evs []ev, w weir.Windows, bound time.Duration, p, bs int, opts ...weir.WindowOption) (signed, last map[spanKey]int64, dropped int64) {
	t.Helper()
	return runSignedOn(t, evs, w, bound, p, bs, nil, opts...)
}

// runSignedOn is runSigned with job options (PebbleState).
func runSignedOn(t *testing.T, evs []ev, w weir.Windows, bound time.Duration, p, bs int, jobOpts []weir.JobOption, opts ...weir.WindowOption) (signed, last map[spanKey]int64, dropped int64) {
	t.Helper()
	job := weir.NewJob("prop", append([]weir.JobOption{weir.Parallelism(p), weir.BatchSize(bs)}, jobOpts...)...)
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(bound, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), w, opts...), weir.Count[ev]())
	out := weir.Collect(res)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	signed, last = map[spanKey]int64{}, map[spanKey]int64{}
	for _, r := range out.Items() {
		k := spanKey{r.Key, r.Start.UnixMilli(), r.End.UnixMilli()}
		switch r.Kind {
		case weir.Insert, weir.UpdateAfter:
			signed[k] += r.Value
			last[k] = r.Value
		case weir.UpdateBefore, weir.Delete:
			signed[k] -= r.Value
			if r.Kind == weir.Delete {
				delete(last, k)
			}
		}
	}
	for k, v := range signed {
		if v == 0 {
			delete(signed, k)
		}
	}
	return signed, last, job.Metrics().Sum(lateDropped)
}

// Within the bound, every window kind gives the batch answer, at any
// parallelism and batch size.
func TestPropertyWithinBoundEqualsBatch(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for trial := 0; trial < 3; trial++ {
		evs := randomEvents(r, 1500, 400, 400) // disorder never beyond 400ms
		kinds := []struct {
			name string
			w    weir.Windows
			want map[spanKey]int64
		}{
			{"tumbling", weir.Tumbling(time.Second), batchAligned(evs, 1000, 1000)},
			{"hopping", weir.Hopping(2*time.Second, 500*time.Millisecond), batchAligned(evs, 2000, 500)},
			{"session", weir.Session(300 * time.Millisecond), batchSessions(evs, 300)},
			{"sliding", weir.Sliding(time.Second), batchSliding(evs, 1000)},
		}
		for _, k := range kinds {
			for _, p := range []int{1, 2, 4} {
				for _, bs := range []int{1, 64, 1024} {
					_, last, dropped := runSigned(t, evs, k.w, 400*time.Millisecond, p, bs)
					if dropped != 0 {
						t.Fatalf("%s p%d b%d: %d dropped within the bound", k.name, p, bs, dropped)
					}
					diffCounts(t, fmt.Sprintf("trial %d %s p%d b%d", trial, k.name, p, bs), last, k.want)
				}
			}
		}
	}
}

// Beyond the bound, with allowed lateness and retractions: the signed sum
// per window equals the number of events the window accepted, and every
// event is either accepted once per window it belongs to or dropped.
func TestPropertyRetractingSignedSums(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for trial := 0; trial < 3; trial++ {
		evs := randomEvents(r, 2000, 300, 4000)
		for _, p := range []int{1, 3} {
			// Tumbling and hopping against the record-at-a-time model.
			for _, c := range []struct {
				name        string
				w           weir.Windows
				size, slide int64
			}{
				{"tumbling", weir.Tumbling(time.Second), 1000, 1000},
				{"hopping", weir.Hopping(3*time.Second, time.Second), 3000, 1000},
			} {
				want, wantDropped := modelWindowsLateness(evs, 300, c.size, c.slide, 1000)
				signed, _, dropped := runSigned(t, evs, c.w, 300*time.Millisecond, p, 100,
					weir.AllowedLateness(time.Second), weir.Retracting())
				diffCounts(t, fmt.Sprintf("trial %d %s p%d", trial, c.name, p), signed, want)
				if dropped != wantDropped {
					t.Fatalf("%s: dropped %d, model %d", c.name, dropped, wantDropped)
				}
			}
			// Sessions: retracted merges net out; accepted + dropped = all.
			// (Final sessions may overlap: a session whose lateness passed
			// is gone, and a later event may open a new one over it, as in
			// Flink.)
			signed, _, dropped := runSigned(t, evs, weir.Session(200*time.Millisecond), 300*time.Millisecond, p, 100,
				weir.AllowedLateness(time.Second), weir.Retracting())
			var total int64
			for k, v := range signed {
				if v < 0 {
					t.Fatalf("session %v has a negative signed sum %d", k, v)
				}
				total += v
			}
			if total+dropped != int64(len(evs)) {
				t.Fatalf("sessions: %d accepted + %d dropped != %d events", total, dropped, len(evs))
			}
		}
	}
}

// modelWindowsLateness is modelWindows with allowed lateness: an event is
// dropped for a window whose end-1+lateness <= watermark at its arrival.
func modelWindowsLateness(evs []ev, bound, size, slide, lateness int64) (map[spanKey]int64, int64) {
	counts := map[spanKey]int64{}
	wm, maxTS := int64(-1<<63), int64(-1<<63)
	var dropped int64
	for _, e := range evs {
		r := e.TS % slide
		if r < 0 {
			r += slide
		}
		accepted := false
		for s := e.TS - r; s > e.TS-size; s -= slide {
			if s+size-1+lateness <= wm {
				continue
			}
			counts[spanKey{e.Key, s, s + size}]++
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
