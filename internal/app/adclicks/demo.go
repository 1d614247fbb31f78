package adclicks

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/pace"
)

// DemoClick is a click of the demo stream: the shape a user's job would
// read from a log of click events.
type DemoClick struct {
	AdID   string    `json:"ad_id"`
	UserID int64     `json:"user_id"`
	TS     time.Time `json:"ts"`
}

// DemoConfig describes the demo's click stream.
type DemoConfig struct {
	Events int64
	Ads    int
	Seed   uint64
	// Rate limits events per second of wall-clock time (0: unlimited).
	Rate float64
	// Start is the event time of the first click.
	Start time.Time
	// Disorder: every click is delayed by up to Jitter; LateShare of the
	// clicks are delayed further, by up to MaxLate (a phone that was
	// offline, a backlog in a queue).
	Jitter    time.Duration
	LateShare float64
	MaxLate   time.Duration
}

// DefaultDemo is the demo's stream: one click per millisecond of event time
// over 50 ads (Zipf-like popularity), up to 4s of ordinary disorder, and 1%
// of clicks late by up to 20 minutes.
func DefaultDemo() DemoConfig {
	return DemoConfig{
		Events: 2_000_000, Ads: 50, Seed: 1, Start: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC),
		Jitter: 4 * time.Second, LateShare: 0.01, MaxLate: 20 * time.Minute,
	}
}

// DemoSource is a deterministic source of demo clicks: the same seed gives
// the same stream, in the same order.
func DemoSource(c DemoConfig) weir.Source[DemoClick] { return &demoSource{c: c} }

type demoSource struct{ c DemoConfig }

func (s *demoSource) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{genSplit{}}, nil
}

func (s *demoSource) Open(context.Context, weir.Split) (weir.SplitReader[DemoClick], error) {
	return &demoReader{DemoGen: NewDemoGen(s.c), pace: pace.New(s.c.Rate)}, nil
}

// OpenAt reopens the stream at a position saved by Position: the index and
// the generator's state, so the rest of the stream is identical.
func (s *demoSource) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[DemoClick], error) {
	r, err := s.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	dr := r.(*demoReader)
	if len(pos) < 8 {
		return nil, fmt.Errorf("adclicks: bad demo position (%d bytes)", len(pos))
	}
	dr.i = int64(binary.BigEndian.Uint64(pos))
	if err := dr.pcg.UnmarshalBinary(pos[8:]); err != nil {
		return nil, fmt.Errorf("adclicks: bad demo position: %w", err)
	}
	return dr, nil
}

// Position implements weir.CheckpointedReader.
func (r *demoReader) Position() ([]byte, error) {
	st, err := r.pcg.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint64(nil, uint64(r.i)), st...), nil
}

// DemoGen generates the demo stream click by click: click i is the same
// for a given configuration (seed, ads, disorder) whatever Events is, so a
// shorter stream is a prefix of a longer one.
type DemoGen struct {
	c   DemoConfig
	ads []string
	cum []float64
	pcg *rand.PCG
	rng *rand.Rand
	i   int64
}

// NewDemoGen starts the stream of c at its first click.
func NewDemoGen(c DemoConfig) *DemoGen {
	ads := make([]string, c.Ads)
	for i := range ads {
		ads[i] = fmt.Sprintf("ad-%02d", i)
	}
	// Popularity ∝ 1/(rank+1): a cumulative table drawn by binary search.
	cum := make([]float64, c.Ads)
	total := 0.0
	for i := range cum {
		total += 1 / float64(i+1)
		cum[i] = total
	}
	for i := range cum {
		cum[i] /= total
	}
	pcg := rand.NewPCG(c.Seed, c.Seed^0x5eed)
	return &DemoGen{c: c, ads: ads, cum: cum, pcg: pcg, rng: rand.New(pcg)}
}

// Ads returns the ad ids of the stream.
func (g *DemoGen) Ads() []string { return g.ads }

// Index is the index of the next click.
func (g *DemoGen) Index() int64 { return g.i }

// Fill fills dst with the next clicks, up to the end of the stream (Events),
// and returns how many.
func (g *DemoGen) Fill(dst []DemoClick) int {
	k := 0
	base := g.c.Start.UnixMilli()
	for k < len(dst) && g.i < g.c.Events {
		u := g.rng.Float64()
		lo, hi := 0, len(g.cum)-1
		for lo < hi {
			m := (lo + hi) / 2
			if g.cum[m] < u {
				lo = m + 1
			} else {
				hi = m
			}
		}
		delay := g.rng.Int64N(g.c.Jitter.Milliseconds() + 1)
		if g.rng.Float64() < g.c.LateShare {
			delay += g.rng.Int64N(g.c.MaxLate.Milliseconds() + 1)
		}
		dst[k] = DemoClick{AdID: g.ads[lo], UserID: g.rng.Int64N(1_000_000), TS: time.UnixMilli(base + g.i - delay).UTC()}
		k++
		g.i++
	}
	return k
}

// Skip generates and drops the next n clicks (fewer at the end of the
// stream).
func (g *DemoGen) Skip(n int64) {
	var buf [1024]DemoClick
	for n > 0 && g.i < g.c.Events {
		n -= int64(g.Fill(buf[:min(n, int64(len(buf)))]))
	}
}

type demoReader struct {
	*DemoGen
	pace *pace.Pacer // counts from when the reader (re)opened
}

func (r *demoReader) Read(ctx context.Context, dst []DemoClick) (int, error) {
	allowed, err := r.pace.Allow(ctx, len(dst))
	if err != nil || allowed == 0 {
		return 0, err
	}
	k := r.Fill(dst[:allowed])
	r.pace.Emitted(k)
	if r.i >= r.c.Events {
		return k, io.EOF
	}
	return k, nil
}

func (r *demoReader) Close() error {
	r.pace.Stop()
	return nil
}

// DemoTrueCounts is the batch recount of the demo stream: clicks per
// one-minute window over the complete input, however late they arrived.
func DemoTrueCounts(ctx context.Context, c DemoConfig) (map[int64]int64, error) {
	c.Rate = 0
	r, err := DemoSource(c).Open(ctx, genSplit{})
	if err != nil {
		return nil, err
	}
	defer r.Close()
	buf := make([]DemoClick, 4096)
	out := map[int64]int64{}
	for {
		n, err := r.Read(ctx, buf)
		for _, x := range buf[:n] {
			out[WindowStart(x.TS.UnixMilli(), 60_000)]++
		}
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// ProduceDemo generates the clicks of c from index from on (up to
// c.Events) and hands them to emit in batches of up to batch clicks, at
// most c.Rate clicks per second (0: unlimited). The slice is only valid
// during the call. It is how the demo's producer fills its topic: the
// stream is deterministic by index, so a producer that stopped can resume
// at any index.
func ProduceDemo(ctx context.Context, c DemoConfig, from int64, batch int, emit func([]DemoClick) error) error {
	g := NewDemoGen(c)
	g.Skip(from)
	p := pace.New(c.Rate)
	defer p.Stop()
	buf := make([]DemoClick, max(batch, 1))
	for g.Index() < c.Events {
		n, err := p.Allow(ctx, len(buf))
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		k := g.Fill(buf[:n])
		p.Emitted(k)
		if err := emit(buf[:k]); err != nil {
			return err
		}
	}
	return nil
}
