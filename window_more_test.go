package weir_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

func keyed(t *testing.T, job *weir.Job, evs []ev, bound time.Duration) *weir.KeyedStream[string, ev] {
	t.Helper()
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(bound, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	return weir.KeyBy(src, func(e ev) string { return e.Key })
}

func TestProcessWindowSeesAllEventsAndBounds(t *testing.T) {
	evs := []ev{{"a", 100}, {"a", 900}, {"b", 500}, {"a", 1500}, {"a", 1700}, {"a", 5000}}
	for _, p := range []int{1, 2} {
		job := weir.NewJob("pw", weir.Parallelism(p))
		ws := weir.Window(keyed(t, job, evs, 0), weir.Session(time.Second))
		out := weir.Collect(weir.ProcessWindow(ws, func(key string, w weir.WindowInfo, events []ev, emit func(string)) error {
			var ts []string
			for _, e := range events {
				ts = append(ts, fmt.Sprint(e.TS))
			}
			emit(fmt.Sprintf("%s [%d,%d) %s", key, w.Start.UnixMilli(), w.End.UnixMilli(), strings.Join(ts, ",")))
			return nil
		}))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := out.Items()
		sort.Strings(got)
		want := []string{"a [100,2700) 100,900,1500,1700", "a [5000,6000) 5000", "b [500,1500) 500"}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("p=%d: got %q, want %q", p, got, want)
		}
	}
}

type visit struct {
	Page string
	User int
	TS   int64
}

func TestCountDistinctAndClockCorrection(t *testing.T) {
	type tap struct {
		Key                   string
		Device, Sent, Receive int64
	}
	// The device clock is 10s behind: sent 1000 by the device is received
	// at 11000 by the server, so device time 500 is really 10500.
	corr := weir.ClockCorrected(
		func(x tap) time.Time { return time.UnixMilli(x.Device) },
		func(x tap) time.Time { return time.UnixMilli(x.Sent) },
		func(x tap) time.Time { return time.UnixMilli(x.Receive) })
	if got := corr(tap{"a", 500, 1000, 11000}).UnixMilli(); got != 10500 {
		t.Fatalf("corrected %d, want 10500", got)
	}

	vs := []visit{{"home", 1, 10}, {"home", 2, 20}, {"home", 1, 30}, {"cart", 3, 40}, {"home", 3, 1500}}
	job := weir.NewJob("distinct", weir.Parallelism(2))
	src := weir.FromSource(job, "visits", weir.SliceSource(vs),
		weir.MonotonousTimestamps(func(v visit) time.Time { return time.UnixMilli(v.TS) }))
	res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(v visit) string { return v.Page }), weir.Tumbling(time.Second)),
		weir.CountDistinct(func(v visit) int { return v.User }))
	out := weir.Collect(res)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range out.Items() {
		got[fmt.Sprintf("%s@%d", r.Key, r.Start.UnixMilli())] = r.Value
	}
	want := map[string]int64{"home@0": 2, "cart@0": 1, "home@1000": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// fakeClock is a processing-time clock the test moves by hand.
// reads counts the times the job looked at it.
type fakeClock struct{ ms, reads atomic.Int64 }

func (c *fakeClock) now() time.Time {
	c.reads.Add(1)
	return time.UnixMilli(c.ms.Load())
}

// feed is an unbounded source fed by the test through a channel.
type feed chan ev

func (f feed) Splits(context.Context) ([]weir.Split, error) { return []weir.Split{split("feed")}, nil }
func (f feed) Open(context.Context, weir.Split) (weir.SplitReader[ev], error) {
	return feedReader(f), nil
}

type feedReader chan ev

func (r feedReader) Read(ctx context.Context, dst []ev) (int, error) {
	select {
	case e := <-r:
		dst[0] = e
		return 1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(time.Millisecond):
		return 0, nil
	}
}
func (r feedReader) Close() error { return nil }

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	weirtest.WaitFor(t, what, 30*time.Second, cond)
}

// Early firings give a speculative result before the watermark passes the
// window, driven by processing time; the on-time firing corrects it.
func TestEarlyFiringsAndProcessingTimeTrigger(t *testing.T) {
	for _, mode := range []string{"early", "processing"} {
		clock := &fakeClock{}
		job := weir.NewJob("early", weir.Clock(clock.now))
		in := make(feed, 16)
		src := weir.FromSource(job, "feed", weir.Source[ev](in),
			weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		tr := weir.EventTimeTrigger().WithEarlyFirings(time.Second)
		if mode == "processing" {
			tr = weir.ProcessingTimeTrigger()
		}
		res := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(10*time.Second), weir.Trigger(tr)), weir.Count[ev]())
		out := weir.Collect(res)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- job.Run(ctx) }()
		in <- ev{"a", 1000}
		in <- ev{"a", 2000}
		// Nothing fires until processing time moves.
		clock.ms.Store(500)
		// Give a wrong firing its chance: the job has looked at the
		// clock several times since it moved (a count, not a duration,
		// so a busy machine only makes this take longer).
		seen := clock.reads.Load()
		waitFor(t, "the job to read the clock", func() bool { return clock.reads.Load() >= seen+20 })
		if n := len(out.Items()); n != 0 {
			t.Fatalf("%s: %d results before the clock moved", mode, n)
		}
		clock.ms.Store(20_000) // past the early interval and past the window end
		waitFor(t, mode+" firing", func() bool { return len(out.Items()) == 1 })
		r := out.Items()[0]
		if r.Value != 2 || r.Kind != weir.Insert {
			t.Fatalf("%s: first firing %+v, want Insert 2", mode, r)
		}
		if mode == "early" {
			in <- ev{"a", 3000}
			in <- ev{"a", 11_000} // the watermark passes the window: on-time firing
			waitFor(t, "on-time firing", func() bool { return len(out.Items()) == 2 })
			if r := out.Items()[1]; r.Value != 3 || r.Kind != weir.UpdateAfter {
				t.Fatalf("on-time firing %+v, want UpdateAfter 3", r)
			}
		}
		cancel()
		<-done
	}
}
