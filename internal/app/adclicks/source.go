package adclicks

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/pace"
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
	return &reader{g: NewGen(s.n, s.jitter, s.seed), pace: pace.New(s.rate)}, nil
}

type reader struct {
	g    *Gen
	pace *pace.Pacer
}

func (r *reader) Read(ctx context.Context, dst []Click) (int, error) {
	allowed, err := r.pace.Allow(ctx, len(dst))
	if err != nil || allowed == 0 {
		return 0, err
	}
	dst = dst[:allowed]
	k := r.g.Fill(dst)
	r.pace.Emitted(k)
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
	r.pace.Stop()
	return nil
}
