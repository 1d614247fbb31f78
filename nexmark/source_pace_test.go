package nexmark

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/pace"
)

// pacedRun reads split 0 of a paced source of events events at rate
// events/s to its end on a fake clock that the reader's sleeps advance, and
// returns the size of each non-empty read and, for each event, how long
// after it was due it was read (its due time is start + (n+1)/rate, as the
// reader computes it). After each read the clock also advances by
// perRead + k·perEvent: the time the job takes to send k events on.
func pacedRun(t *testing.T, rate float64, events int64, batch int, perRead, perEvent time.Duration) (sizes []int, held []time.Duration) {
	t.Helper()
	src := Source(GeneratorConfig{Events: events, Seed: 1, RateLimit: rate, Splits: 1})
	clock := int64(1e9)
	src.now = func() int64 { return clock }
	src.sleep = func(_ context.Context, _ *time.Timer, d time.Duration) error {
		if d <= 0 {
			t.Fatalf("sleep of %v", d)
		}
		clock += int64(d)
		return nil
	}
	r, err := src.Open(context.Background(), genSplit(0))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rd := r.(*reader)
	start := src.start.Load()
	dst := make([]Event, batch)
	for reads := 0; ; reads++ {
		if reads > 10*int(events)+100 {
			t.Fatal("the reader does not end")
		}
		first := rd.next
		k, err := r.Read(context.Background(), dst)
		for n := first; n < first+int64(k); n++ {
			due := start + int64(float64(n+1)/rate*1e9)
			if clock+1 < due { // 1 ns: float rounding
				t.Fatalf("event %d read at %d ns, before it is due at %d ns", n, clock-start, due-start)
			}
			held = append(held, time.Duration(max(clock-due, 0)))
		}
		if k > 0 {
			sizes = append(sizes, k)
			clock += int64(perRead) + int64(k)*int64(perEvent)
		}
		if err == io.EOF {
			return sizes, held
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A paced reader waits for a batch's worth of its events to be due (at
// most pace.Grain after the next one is), not for the next event alone: at
// a high rate it reads full batches; at a low one no event is held back
// more than pace.Grain; and none is read before its scheduled time.
func TestPacedReaderReadsBatches(t *testing.T) {
	// 1 M events/s: a batch of 64 is due every 64 µs, well within
	// pace.Grain, so every read but the last is a full batch. Waiting for
	// the next event only (the old reader) read one event at a time.
	sizes, held := pacedRun(t, 1e6, 6400, 64, 0, 0)
	for i, k := range sizes[:len(sizes)-1] {
		if k != 64 {
			t.Fatalf("read %d of %d at 1 M events/s: %d events, want full batches of 64 (sizes %v)", i, len(sizes), k, sizes[:min(len(sizes), 20)])
		}
	}
	for n, h := range held {
		if h > 64*time.Microsecond {
			t.Fatalf("event %d held %v after its due time, more than a batch's span", n, h)
		}
	}
	// 10 K events/s: a batch of 64 would take 6.4 ms; the reader reads
	// what is due pace.Grain after the next event, about 10 events.
	sizes, held = pacedRun(t, 1e4, 500, 64, 0, 0)
	if len(sizes) > 500/8 {
		t.Fatalf("%d reads for 500 events at 10 K/s, want about 50 (sizes %v)", len(sizes), sizes[:min(len(sizes), 20)])
	}
	for n, h := range held {
		if h > pace.Grain+time.Microsecond { // µs: rounding
			t.Fatalf("event %d held %v after its due time, more than pace.Grain", n, h)
		}
	}
}

// A paced reader that is a little behind (a few events due, fewer than a
// batch) waits for a batch as when nothing is due, instead of reading the
// few: the events that come due while the job sends a batch on made the
// next read small, and the next smaller, until every read was a few
// events. In Nexmark q8's latency run at 6.4 M events/s the readers read
// 6.7 events a read (28 M reads), each read its time.Now, its batch through
// the source's operators and its channel sends.
func TestPacedReaderBehindReadsBatches(t *testing.T) {
	// 1 M events/s, batches of 64 due every 64 µs; sending costs 2 µs a
	// batch and 0.5 µs an event, so a full batch takes 34 µs, during
	// which 34 more events come due.
	sizes, held := pacedRun(t, 1e6, 64_000, 64, 2*time.Microsecond, 500*time.Nanosecond)
	if len(sizes) > 64_000/64+10 {
		t.Fatalf("%d reads for 64,000 events, want about 1,000 full batches (sizes %v)", len(sizes), sizes[:min(len(sizes), 30)])
	}
	for n, h := range held {
		if h > pace.Grain+time.Microsecond {
			t.Fatalf("event %d held %v after its due time, more than pace.Grain", n, h)
		}
	}
	// 10 M events/s with sending at 0.2 µs an event: the reader cannot
	// keep up (a batch of 64 takes 14.8 µs to send and 6.4 µs to come
	// due), so it reads full batches of what is due without waiting.
	sizes, _ = pacedRun(t, 1e7, 64_000, 64, 2*time.Microsecond, 200*time.Nanosecond)
	for i, k := range sizes[:len(sizes)-1] {
		if k != 64 {
			t.Fatalf("read %d behind the pace: %d events, want 64", i, k)
		}
	}
}
