package adclicks

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/weirstream/weir"
)

// Source is a weir source of one split over the generator. With rate > 0
// it emits at most rate events per second of wall-clock time.
func Source(n, jitterMs int64, seed uint64, rate float64) weir.Source[Click] {
	return &source{n: n, jitter: jitterMs, seed: seed, rate: rate}
}

type source struct {
	n, jitter int64
	seed      uint64
	rate      float64
}

type genSplit struct{}

func (genSplit) ID() string { return "adclicks-0" }

func (s *source) Splits(context.Context) ([]weir.Split, error) { return []weir.Split{genSplit{}}, nil }

func (s *source) Open(context.Context, weir.Split) (weir.SplitReader[Click], error) {
	return &reader{g: NewGen(s.n, s.jitter, s.seed), rate: s.rate, start: time.Now()}, nil
}

type reader struct {
	g       *Gen
	rate    float64
	resumed int64
	start   time.Time
	timer   *time.Timer
}

func (r *reader) Read(ctx context.Context, dst []Click) (int, error) {
	if r.rate > 0 {
		due := int64(time.Since(r.start).Seconds()*r.rate) - (r.g.Index() - r.resumed)
		if due <= 0 {
			// Wait for the next event's slot, at most 10ms.
			wait := min(time.Duration(float64(time.Second)/r.rate), 10*time.Millisecond)
			if r.timer == nil {
				r.timer = time.NewTimer(wait)
			} else {
				r.timer.Reset(wait)
			}
			select {
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			case <-r.timer.C:
			}
			return 0, nil
		}
		if int64(len(dst)) > due {
			dst = dst[:due]
		}
	}
	k := r.g.Fill(dst)
	if r.g.Index() >= r.g.n {
		return k, io.EOF
	}
	return k, nil
}

// OpenAt reopens the generator at a saved position.
func (s *source) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[Click], error) {
	r, err := s.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	g := r.(*reader).g
	if len(pos) < 8 {
		return nil, fmt.Errorf("adclicks: bad position (%d bytes)", len(pos))
	}
	g.i = int64(binary.BigEndian.Uint64(pos))
	if err := g.rng.UnmarshalBinary(pos[8:]); err != nil {
		return nil, fmt.Errorf("adclicks: bad position: %w", err)
	}
	r.(*reader).resumed = g.i
	return r, nil
}

// Position implements weir.CheckpointedReader.
func (r *reader) Position() ([]byte, error) {
	st, err := r.g.rng.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint64(nil, uint64(r.g.i)), st...), nil
}

func (r *reader) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}
	return nil
}
