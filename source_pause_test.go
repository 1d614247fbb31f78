package weir_test

import (
	"context"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// pauseSource has two splits. "slow" returns its first `before` events,
// then nothing (0, nil: an unbounded split with no new data) until release
// is closed, then (after one more empty read) the rest and io.EOF. "fast"
// returns its events in steps: step i waits for a token on steps (step 0
// is returned at once); after the last step it returns nothing until slow
// ended (endFast false) or io.EOF at once (endFast true), closing fastEnd.
type pauseSource struct {
	slow    []ev
	before  int
	fast    [][]ev
	endFast bool
	steps   chan struct{}
	paused  chan struct{} // closed on slow's first empty read
	stepped chan struct{} // gets a value when a step (after step 0) was fully read
	release chan struct{}
	slowEnd chan struct{}
	fastEnd chan struct{}
}

func newPauseSource(slow []ev, before int, fast [][]ev, endFast bool) *pauseSource {
	return &pauseSource{slow: slow, before: before, fast: fast, endFast: endFast, steps: make(chan struct{}, len(fast)),
		paused: make(chan struct{}), stepped: make(chan struct{}, len(fast)), release: make(chan struct{}), slowEnd: make(chan struct{}), fastEnd: make(chan struct{})}
}

func (s *pauseSource) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{split("fast"), split("slow")}, nil
}

func (s *pauseSource) Open(_ context.Context, sp weir.Split) (weir.SplitReader[ev], error) {
	if sp.ID() == "slow" {
		return &slowReader{s: s}, nil
	}
	return &fastReader{s: s}, nil
}

// wait is how a reader with nothing to return waits a little (bounded, as
// the SplitReader contract asks), or less when ch is ready.
func wait(ctx context.Context, ch <-chan struct{}) (bool, error) {
	select {
	case <-ch:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(time.Millisecond):
		return false, nil
	}
}

type slowReader struct {
	s        *pauseSource
	i        int
	released bool
	armed    bool
}

func (r *slowReader) Read(ctx context.Context, dst []ev) (int, error) {
	s := r.s
	if r.i >= s.before && !r.armed {
		if r.i == s.before && !r.released {
			select {
			case <-s.paused:
			default:
				close(s.paused)
			}
		}
		if !r.released {
			ok, err := wait(ctx, s.release)
			if !ok || err != nil {
				return 0, err
			}
			r.released = true
		}
		// One more empty read after the release: the source loop judges
		// the split's idleness after it, before the split's next records.
		r.armed = true
		return 0, nil
	}
	end := len(s.slow)
	if !r.armed {
		end = s.before
	}
	k := copy(dst, s.slow[r.i:end])
	r.i += k
	if r.i == len(s.slow) {
		close(s.slowEnd)
		return k, io.EOF
	}
	return k, nil
}

func (r *slowReader) Close() error { return nil }

type fastReader struct {
	s    *pauseSource
	step int
	i    int
}

func (r *fastReader) Read(ctx context.Context, dst []ev) (int, error) {
	s := r.s
	if r.i == len(s.fast[r.step]) && r.step+1 < len(s.fast) {
		ok, err := wait(ctx, s.steps)
		if !ok || err != nil {
			return 0, err
		}
		r.step, r.i = r.step+1, 0
	}
	if r.i < len(s.fast[r.step]) {
		k := copy(dst, s.fast[r.step][r.i:])
		r.i += k
		if r.i == len(s.fast[r.step]) && r.step > 0 {
			s.stepped <- struct{}{}
		}
		return k, nil
	}
	if !s.endFast {
		if ok, err := wait(ctx, s.slowEnd); !ok || err != nil {
			return 0, err
		}
	}
	close(s.fastEnd)
	return 0, io.EOF
}

func (r *fastReader) Close() error { return nil }

func evs(from, to, step int64) []ev {
	var out []ev
	for t := from; t < to; t += step {
		out = append(out, ev{Key: "a", TS: t})
	}
	return out
}

func runPause(t *testing.T, src *pauseSource, ws weir.WatermarkStrategy[ev], opts ...weir.JobOption) (*weir.Collector[weir.LateEvent[string, ev]], *weir.Collector[weir.WindowResult[string, int64]], func() error) {
	t.Helper()
	job := weir.NewJob("pause", opts...)
	in := weir.FromSource(job, "two", weir.Source[ev](src), ws)
	counts := weir.Aggregate(weir.Window(weir.KeyBy(in, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev]())
	late := weir.Collect(weir.LateEvents[ev](counts))
	out := weir.Collect(counts)
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	return late, out, func() error {
		select {
		case err := <-done:
			return err
		case <-time.After(time.Minute):
			t.Fatal("the job did not end")
			return nil
		}
	}
}

func sum(rs []weir.WindowResult[string, int64]) int64 {
	var n int64
	for _, r := range rs {
		n += r.Value
	}
	return n
}

// A split that pauses (returns 0, nil) holds the subtask's watermark while
// the other split runs far ahead and even ends: with no idleness declared,
// none of the paused split's later records is late. A split that has not
// produced any record yet (before = 0) holds it at "no watermark".
func TestPausedSplitHoldsWatermark(t *testing.T) {
	for _, before := range []int{0, 10} {
		slow := evs(1000, 2000, 10)                                              // 100 events
		src := newPauseSource(slow, before, [][]ev{evs(1000, 60_000, 10)}, true) // fast ends
		late, out, wait := runPause(t, src, weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		<-src.paused
		<-src.fastEnd
		close(src.release)
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		if n := len(late.Items()); n > 0 {
			l := late.Items()[0]
			t.Fatalf("before=%d: %d events late, the first at %d behind watermark %d", before, n, l.Timestamp.UnixMilli(), l.Watermark.UnixMilli())
		}
		if got, want := sum(out.Items()), int64(100+5900); got != want {
			t.Fatalf("before=%d: counted %d, want %d", before, got, want)
		}
	}
}

// With WithIdleness(d), a paused split becomes idle once d has passed on
// the job's clock since its last record: the watermark then follows the
// other split, and the paused split's later records that are behind it are
// late, dropped and counted (Flink's semantics). Before d has passed the
// paused split still holds the watermark, however long it pauses in wall
// time. The clock is the test's: it moves only when the test says.
func TestPausedSplitIdleAfterIdleness(t *testing.T) {
	for _, advance := range []time.Duration{500 * time.Millisecond, 2 * time.Second} {
		var clock atomic.Int64
		clock.Store(1_000_000)
		now := func() time.Time { return time.UnixMilli(clock.Load()) }
		slow := evs(1000, 2000, 10) // 100 events: 10 before the pause, 90 after
		src := newPauseSource(slow, 10, [][]ev{evs(1000, 2000, 10), evs(2000, 20_000, 10)}, false)
		ws := weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) }).WithIdleness(time.Second)
		late, out, wait := runPause(t, src, ws, weir.Clock(now))
		<-src.paused // slow read its first 10 records
		clock.Add(advance.Milliseconds())
		src.steps <- struct{}{} // fast runs ahead to 19990
		<-src.stepped
		close(src.release)
		if err := wait(); err != nil {
			t.Fatal(err)
		}
		wantLate := 0
		if advance > time.Second {
			wantLate = 90
		}
		if n := len(late.Items()); n != wantLate {
			t.Fatalf("clock advanced %v: %d events late, want %d", advance, n, wantLate)
		}
		for _, l := range late.Items() {
			if l.Timestamp.UnixMilli() < 1100 || l.Watermark.UnixMilli() < 1990 {
				t.Fatalf("late event at %d with watermark %d: not one of the paused split's after the pause", l.Timestamp.UnixMilli(), l.Watermark.UnixMilli())
			}
		}
		if got, want := sum(out.Items()), int64(100+100+1800-wantLate); got != want {
			t.Fatalf("clock advanced %v: counted %d, want %d", advance, got, want)
		}
	}
}
