package pace

import (
	"context"
	"testing"
	"time"
)

func TestUnlimited(t *testing.T) {
	p := New(0)
	if n, err := p.Allow(context.Background(), 100); n != 100 || err != nil {
		t.Fatalf("unlimited pacer allowed %d, %v", n, err)
	}
}

// A pacer never allows more than rate × elapsed records.
func TestNeverAhead(t *testing.T) {
	p := New(1000)
	total := 0
	start := time.Now()
	for total < 100 {
		n, err := p.Allow(context.Background(), 50)
		if err != nil {
			t.Fatal(err)
		}
		p.Emitted(n)
		total += n
		if limit := int(time.Since(start).Seconds()*1000) + 1; total > limit {
			t.Fatalf("%d records allowed after %v at 1000/s", total, time.Since(start))
		}
	}
}

// A rate too large for int64 arithmetic (1e308 records a second) lets
// every record out at once instead of overflowing into a wait for ever,
// and one too small waits at most MaxHold per call (issue 35).
func TestExtremeRates(t *testing.T) {
	p := New(1e308)
	clock := p.start.Add(time.Millisecond)
	p.now = func() time.Time { return clock }
	p.sleep = func(context.Context, time.Duration) error { t.Fatal("a pacer at 1e308/s waited"); return nil }
	for range 3 {
		n, err := p.Allow(context.Background(), 1000)
		if n != 1000 || err != nil {
			t.Fatalf("at 1e308/s: allowed %d, %v", n, err)
		}
		p.Emitted(n)
	}
	if d := Due(5, 1e-300); d <= 0 {
		t.Fatalf("Due at 1e-300/s = %v, want a positive (saturated) duration", d)
	}
	slow := New(1e-300)
	slow.now = func() time.Time { return slow.start.Add(time.Hour) }
	var slept time.Duration
	slow.sleep = func(_ context.Context, d time.Duration) error { slept = d; return nil }
	if n, err := slow.Allow(context.Background(), 1); n != 0 || err != nil || slept <= 0 || slept > MaxHold {
		t.Fatalf("at 1e-300/s: allowed %d, %v, slept %v", n, err, slept)
	}
}

func TestCancel(t *testing.T) {
	p := New(0.001)
	p.Emitted(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Allow(ctx, 1); err == nil {
		t.Fatal("a cancelled wait must return the cause")
	}
}

// fakeRun drives a pacer at rate records/s on a fake clock that its sleeps
// advance and that each allowed batch of k advances by perBatch +
// k·perRecord (the job sending it on), until total records are emitted.
// It returns the batch sizes and the longest a record was held after its
// slot.
func fakeRun(t *testing.T, rate float64, total, want int, perBatch, perRecord time.Duration) (sizes []int, held time.Duration) {
	t.Helper()
	p := New(rate)
	clock := p.start
	p.now = func() time.Time { return clock }
	p.sleep = func(_ context.Context, d time.Duration) error {
		if d <= 0 {
			t.Fatalf("sleep of %v", d)
		}
		clock = clock.Add(d)
		return nil
	}
	emitted := 0
	for calls := 0; emitted < total; calls++ {
		if calls > 10*total+100 {
			t.Fatal("the pacer does not let the records through")
		}
		n, err := p.Allow(context.Background(), min(want, total-emitted))
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			continue
		}
		for i := emitted; i < emitted+n; i++ {
			slot := p.start.Add(time.Duration(float64(i+1) / rate * 1e9))
			if clock.Before(slot) {
				t.Fatalf("record %d allowed %v before its slot", i, slot.Sub(clock))
			}
			held = max(held, clock.Sub(slot))
		}
		p.Emitted(n)
		emitted += n
		sizes = append(sizes, n)
		clock = clock.Add(perBatch + time.Duration(n)*perRecord)
	}
	return sizes, held
}

// A pacer a little behind (some records due, fewer than want) waits for
// want as when none is due, holding a record at most Grain: allowing what
// was due made each batch smaller than the one before (sizes 64 34 19 11
// 8 6 5 4 4 4 … here) once sending a batch took a while.
func TestPacerAllowsBatches(t *testing.T) {
	// 1 M records/s, want 64 (due every 64 µs), sending 2 µs a batch
	// and 0.5 µs a record.
	sizes, held := fakeRun(t, 1e6, 64_000, 64, 2*time.Microsecond, 500*time.Nanosecond)
	if len(sizes) > 64_000/64+10 {
		t.Fatalf("%d batches for 64,000 records, want about 1,000 (sizes %v)", len(sizes), sizes[:min(len(sizes), 30)])
	}
	if held > 64*time.Microsecond+time.Microsecond {
		t.Fatalf("a record held %v, more than a batch's span", held)
	}
	// 10 K records/s, want 64: a batch would take 6.4 ms; the pacer
	// allows what is due once the first has waited Grain (about 10).
	sizes, held = fakeRun(t, 1e4, 500, 64, 0, 0)
	if len(sizes) > 500/8 {
		t.Fatalf("%d batches for 500 records at 10 K/s, want about 50 (sizes %v)", len(sizes), sizes[:min(len(sizes), 30)])
	}
	if held > Grain+time.Microsecond {
		t.Fatalf("a record held %v, more than Grain", held)
	}
	// Behind by more than a batch: full batches at once.
	sizes, _ = fakeRun(t, 1e7, 64_000, 64, 2*time.Microsecond, 200*time.Nanosecond)
	for i, k := range sizes[:len(sizes)-1] {
		if k != 64 {
			t.Fatalf("batch %d behind the pace: %d records, want 64", i, k)
		}
	}
}

// Hold waits for a batch, or until the next record has been due for
// Grain, whichever comes first, and never longer than MaxHold.
func TestHold(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		elapsed, next, batch, want time.Duration
	}{
		{10 * ms, 12 * ms, 12*ms + 400*time.Microsecond, 2*ms + 400*time.Microsecond}, // nothing due: until the batch
		{10 * ms, 9 * ms, 15 * ms, 0},                                           // the next due for Grain: read
		{10 * ms, 9*ms + 500*time.Microsecond, 15 * ms, 500 * time.Microsecond}, // due, not for Grain yet
		{10 * ms, 9 * ms, 10 * ms, 0},                                           // the batch is due
		{10 * ms, 50 * ms, 80 * ms, MaxHold},                                    // far ahead: at most MaxHold
	} {
		if got := Hold(c.elapsed, c.next, c.batch); got != c.want {
			t.Errorf("Hold(%v, %v, %v) = %v, want %v", c.elapsed, c.next, c.batch, got, c.want)
		}
	}
}
