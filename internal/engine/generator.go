package engine

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/weirstream/weir/internal/pace"
)

// GeneratorConfig configures GeneratorSource.
type GeneratorConfig struct {
	// Count is the number of records (< 0: unbounded).
	Count int64
	// Seed seeds each split's generator: split s uses PCG(Seed, s).
	Seed uint64
	// Rate limits records per second per split (0: as fast as possible).
	Rate float64
	// Splits divides the index space: split s produces the indexes i with
	// i mod Splits == s, so the source can run in parallel (default 1).
	Splits int
}

// GeneratorSource is a deterministic source: record i is gen(i, rng), where
// rng is the split's own seeded generator, drawn in index order. The same
// config gives the same records in the same order per split, at any
// parallelism. Useful for demos, benchmarks and tests.
func GeneratorSource[T any](cfg GeneratorConfig, gen func(i int64, rng *rand.Rand) T) Source[T] {
	if cfg.Splits < 1 {
		cfg.Splits = 1
	}
	return &genSource[T]{cfg: cfg, gen: gen}
}

type genSource[T any] struct {
	cfg GeneratorConfig
	gen func(int64, *rand.Rand) T
}

func (g *genSource[T]) Splits(context.Context) ([]Split, error) {
	out := make([]Split, g.cfg.Splits)
	for i := range out {
		out[i] = indexSplit(i)
	}
	return out, nil
}

func (g *genSource[T]) Open(_ context.Context, s Split) (SplitReader[T], error) {
	i, ok := s.(indexSplit)
	if !ok || int(i) >= g.cfg.Splits {
		return nil, fmt.Errorf("weir: generator has no split %s", s.ID())
	}
	pcg := rand.NewPCG(g.cfg.Seed, uint64(i))
	return &genReader[T]{g: g, next: int64(i), pcg: pcg, rng: rand.New(pcg), pace: pace.New(g.cfg.Rate)}, nil
}

// genPos is a generator split's checkpointed position.
type genPos struct {
	Next, Emitted int64
	PCG           []byte
}

// OpenAt implements RestorableSource.
func (g *genSource[T]) OpenAt(ctx context.Context, s Split, pos []byte) (SplitReader[T], error) {
	r, err := g.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	var p genPos
	if err := decode(pos, &p); err != nil {
		return nil, err
	}
	gr := r.(*genReader[T])
	gr.next, gr.emitted = p.Next, p.Emitted
	if err := gr.pcg.UnmarshalBinary(p.PCG); err != nil {
		return nil, fmt.Errorf("weir: generator position: %w", err)
	}
	return gr, nil
}

// Position implements CheckpointedReader.
func (r *genReader[T]) Position() ([]byte, error) {
	st, err := r.pcg.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return encode(genPos{r.next, r.emitted, st})
}

type genReader[T any] struct {
	g       *genSource[T]
	next    int64 // next index
	emitted int64
	pcg     *rand.PCG
	rng     *rand.Rand
	pace    *pace.Pacer // counts from when the reader (re)opened
}

func (r *genReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	cfg := &r.g.cfg
	allowed, err := r.pace.Allow(ctx, len(dst))
	if err != nil || allowed == 0 {
		return 0, err
	}
	dst = dst[:allowed]
	k := 0
	step := int64(cfg.Splits)
	for k < len(dst) && (cfg.Count < 0 || r.next < cfg.Count) {
		dst[k] = r.g.gen(r.next, r.rng)
		r.next += step
		k++
	}
	r.emitted += int64(k)
	r.pace.Emitted(k)
	if cfg.Count >= 0 && r.next >= cfg.Count {
		return k, io.EOF
	}
	return k, nil
}

func (r *genReader[T]) Close() error {
	r.pace.Stop()
	return nil
}
