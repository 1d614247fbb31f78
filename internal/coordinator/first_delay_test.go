package coordinator

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
)

// fakeClock is a hand-advanced clock for the coordinator's Time: timers
// and tickers fire, in order, when advance moves now past them. Their
// channels are unbuffered, so advance returns only once the coordinator's
// loop has taken every firing.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Duration // since the start
	timers []*fakeTimer
}

type fakeTimer struct {
	ch     chan time.Time
	at     time.Duration
	period time.Duration // 0: fires once
	name   string
}

func (c *fakeClock) add(name string, d, period time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{ch: make(chan time.Time), at: c.now + d, period: period, name: name}
	c.timers = append(c.timers, t)
	return t.ch, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if x == t {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				return
			}
		}
	}
}

// next takes the earliest timer due at or before to, moving now to it.
func (c *fakeClock) next(to time.Duration) *fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first *fakeTimer
	for _, t := range c.timers {
		if t.at <= to && (first == nil || t.at < first.at) {
			first = t
		}
	}
	if first == nil {
		c.now = to
		return nil
	}
	c.now = first.at
	if first.period > 0 {
		first.at += first.period
	} else {
		for i, x := range c.timers {
			if x == first {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
	}
	return first
}

// TestFirstCheckpointDelay: the first periodic checkpoint is due at the
// delay Config.FirstDelay picks, not before, and the next ones every
// interval from it (a fixed rate: the time a checkpoint takes does not
// shift them). With the first checkpoint one interval after the start (the
// coordinator before the random delay) it fails at 700 ms.
func TestFirstCheckpointDelay(t *testing.T) {
	const interval = 2 * time.Second
	clock := &fakeClock{}
	var asked []time.Duration
	c := New(Config{
		Interval: interval, Timeout: time.Hour, Log: slog.New(slog.DiscardHandler), Metrics: &metrics.Checkpoints{},
		Sources: map[int]int{0: 1}, Tasks: 1,
		FirstDelay: func(d time.Duration) time.Duration { asked = append(asked, d); return 700 * time.Millisecond },
		Persist:    func(context.Context, int64, bool, []*TaskSnapshot) error { return nil },
		Commit:     func(context.Context, int64, []*TaskSnapshot) error { return nil },
		Time: Time{
			Ticks:   func(d time.Duration) (<-chan time.Time, func()) { return clock.add("tick", d, d) },
			After:   func(d time.Duration) (<-chan time.Time, func()) { return clock.add("first", d, 0) },
			Timeout: func(d time.Duration) (<-chan time.Time, func()) { return clock.add("timeout", d, 0) },
			Now:     func() time.Time { return time.Unix(0, 0) },
		},
	})
	// Unbuffered, so that a send returns once the loop took it (the env's
	// sync in coordinator_test.go).
	c.acks = make(chan *TaskSnapshot)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	// Once the loop takes a no-op acknowledgement it has armed its
	// timers.
	c.acks <- &TaskSnapshot{ID: -1}
	// advance moves the clock to `to`, handing each timer due on the way
	// to the loop; barrier reports the checkpoint it then triggered, if
	// any (the loop has handled a firing once its unbuffered send
	// returned, and a no-op acknowledgement after it returns once the
	// loop's select came round again).
	advance := func(to time.Duration) {
		for {
			tm := clock.next(to)
			if tm == nil {
				return
			}
			select {
			case tm.ch <- time.Time{}:
			case err := <-done:
				t.Fatalf("coordinator returned at %v: %v", clock.now, err)
			}
			c.acks <- &TaskSnapshot{ID: -1}
		}
	}
	barrier := func() int64 {
		select {
		case b := <-c.Trigger(0, 0):
			return b.ID
		default:
			return 0
		}
	}
	ack := func(id int64) { c.acks <- &TaskSnapshot{ID: id, Task: "t"} }

	advance(699 * time.Millisecond)
	if id := barrier(); id != 0 {
		t.Fatalf("checkpoint %d triggered at %v, before the first delay of 700ms", id, clock.now)
	}
	advance(700 * time.Millisecond)
	if id := barrier(); id != 1 {
		t.Fatalf("at 700ms (the first delay): barrier %d, want 1", id)
	}
	ack(1)
	for i, at := range []time.Duration{2700, 4700, 6700} {
		advance((at - 1) * time.Millisecond)
		if id := barrier(); id != 0 {
			t.Fatalf("checkpoint %d triggered at %v, before %vms", id, clock.now, at)
		}
		advance(at * time.Millisecond)
		want := int64(i + 2)
		if id := barrier(); id != want {
			t.Fatalf("at %vms: barrier %d, want %d", at, id, want)
		}
		ack(want)
	}
	if len(asked) != 1 || asked[0] != interval {
		t.Fatalf("FirstDelay asked %v, want once with the interval %v", asked, interval)
	}
}

// TestFirstDelayClamped: a FirstDelay outside [0, interval] is clamped to
// it, and the default draws within it, both ends included over many
// draws of a small interval.
func TestFirstDelayClamped(t *testing.T) {
	for _, tc := range []struct{ pick, want time.Duration }{{-time.Second, 0}, {3 * time.Second, 2 * time.Second}, {time.Second, time.Second}} {
		c := &Coordinator{interval: 2 * time.Second, firstDelay: func(time.Duration) time.Duration { return tc.pick }}
		if got := c.pickFirstDelay(); got != tc.want {
			t.Errorf("FirstDelay %v: %v, want %v", tc.pick, got, tc.want)
		}
	}
	seen := map[time.Duration]bool{}
	for range 10000 {
		d := RandomFirstDelay(3)
		if d < 0 || d > 3 {
			t.Fatalf("RandomFirstDelay(3ns) = %v", d)
		}
		seen[d] = true
	}
	if len(seen) != 4 {
		t.Fatalf("RandomFirstDelay(3ns) drew %v, want each of 0..3ns", seen)
	}
	if d := RandomFirstDelay(0); d != 0 {
		t.Fatalf("RandomFirstDelay(0) = %v", d)
	}
}
