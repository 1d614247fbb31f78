package nexmark

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
)

// EventSource is a weir source of generated events: Splits splits of the
// event numbers (split s has n ≡ s mod Splits), each read in order,
// restorable from the next event number (events are a function of their
// number, so nothing else needs saving). Build one with Source.
type EventSource struct {
	g     *Generator
	err   error
	start atomic.Int64 // unix ns when the first split opened; 0 before
}

// Source returns a source of cfg's events. A bad configuration makes the
// job fail when it starts.
func Source(cfg GeneratorConfig) *EventSource {
	g, err := NewGenerator(cfg)
	return &EventSource{g: g, err: err}
}

// Generator is the source's generator (nil if the configuration is bad).
func (s *EventSource) Generator() *Generator { return s.g }

// Started is when the source's first split opened: with RateLimit, event n
// is due at Started() + n/RateLimit. Zero before the job starts.
func (s *EventSource) Started() time.Time {
	if ns := s.start.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

type genSplit int

func (s genSplit) ID() string { return "nexmark-" + strconv.Itoa(int(s)) }

// Splits implements weir.Source.
func (s *EventSource) Splits(context.Context) ([]weir.Split, error) {
	if s.err != nil {
		return nil, s.err
	}
	out := make([]weir.Split, s.g.cfg.Splits)
	for i := range out {
		out[i] = genSplit(i)
	}
	return out, nil
}

// Open implements weir.Source.
func (s *EventSource) Open(_ context.Context, sp weir.Split) (weir.SplitReader[Event], error) {
	i, ok := sp.(genSplit)
	if !ok || int(i) >= s.g.cfg.Splits {
		return nil, fmt.Errorf("nexmark: no split %s", sp.ID())
	}
	s.start.CompareAndSwap(0, time.Now().UnixNano())
	return &reader{s: s, next: int64(i)}, nil
}

// OpenAt implements weir.RestorableSource.
func (s *EventSource) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[Event], error) {
	if len(pos) != 8 {
		return nil, fmt.Errorf("nexmark: split %s: position of %d bytes, want 8", sp.ID(), len(pos))
	}
	next := int64(binary.BigEndian.Uint64(pos))
	if rl := s.g.cfg.RateLimit; rl > 0 {
		// A new process resumes the pace where the checkpoint left it
		// instead of waiting for the schedule to catch up.
		s.start.CompareAndSwap(0, time.Now().Add(-time.Duration(float64(next)/rl*1e9)).UnixNano())
	}
	r, err := s.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	if int64(next)%int64(s.g.cfg.Splits) != int64(sp.(genSplit)) {
		return nil, fmt.Errorf("nexmark: split %s: position %d is not one of its events", sp.ID(), next)
	}
	r.(*reader).next = next
	return r, nil
}

type reader struct {
	s     *EventSource
	next  int64 // next event number
	timer *time.Timer
}

// Read implements weir.SplitReader.
func (r *reader) Read(ctx context.Context, dst []Event) (int, error) {
	g := r.s.g
	cfg := &g.cfg
	end := cfg.Events
	if end < 0 {
		end = 1<<63 - 1
	}
	if cfg.RateLimit > 0 {
		start := r.s.start.Load()
		due := int64(float64(time.Now().UnixNano()-start) / 1e9 * cfg.RateLimit) // events due by now
		if r.next >= due && r.next < end {
			wait := time.Duration(float64(r.next-due+1) / cfg.RateLimit * 1e9)
			return 0, r.wait(ctx, min(wait, 10*time.Millisecond))
		}
		end = min(end, due)
	}
	step := int64(cfg.Splits)
	k := 0
	for k < len(dst) && r.next < end {
		g.Event(r.next, &dst[k])
		r.next += step
		k++
	}
	if cfg.Events >= 0 && r.next >= cfg.Events {
		return k, io.EOF
	}
	return k, nil
}

func (r *reader) wait(ctx context.Context, d time.Duration) error {
	if r.timer == nil {
		r.timer = time.NewTimer(d)
	} else {
		r.timer.Reset(d)
	}
	select {
	case <-ctx.Done():
		r.timer.Stop()
		return context.Cause(ctx)
	case <-r.timer.C:
		return nil
	}
}

// Position implements weir.CheckpointedReader.
func (r *reader) Position() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(r.next)), nil
}

// Close implements weir.SplitReader.
func (r *reader) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}

// Watermarks is the watermark strategy of the Flink DDL: event time
// date_time, bounded out-of-orderness of WatermarkDelay (4 s).
func Watermarks() weir.WatermarkStrategy[Event] {
	return weir.BoundedOutOfOrderness(WatermarkDelay, func(e Event) time.Time { return time.UnixMilli(e.DateTime()) })
}

// Events adds src to job as the stream the queries read, with Watermarks.
func Events(job *weir.Job, src weir.Source[Event], opts ...weir.Option) *weir.Stream[Event] {
	return weir.FromSource(job, "nexmark", src, Watermarks(), opts...)
}

// Bids is the bid view of the Flink DDL: the bids of events.
func Bids(events *weir.Stream[Event]) *weir.Stream[Bid] {
	return weir.FlatMap(events, func(e Event, emit func(Bid)) {
		if e.Type == BidEvent {
			emit(e.Bid)
		}
	}, weir.Name("bids"))
}

// Auctions is the auction view of the Flink DDL.
func Auctions(events *weir.Stream[Event]) *weir.Stream[Auction] {
	return weir.FlatMap(events, func(e Event, emit func(Auction)) {
		if e.Type == AuctionEvent {
			emit(e.Auction)
		}
	}, weir.Name("auctions"))
}

// Persons is the person view of the Flink DDL.
func Persons(events *weir.Stream[Event]) *weir.Stream[Person] {
	return weir.FlatMap(events, func(e Event, emit func(Person)) {
		if e.Type == PersonEvent {
			emit(e.Person)
		}
	}, weir.Name("persons"))
}
