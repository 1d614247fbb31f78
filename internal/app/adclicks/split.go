package adclicks

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/pace"
)

// SplitBlock is the number of consecutive events of one block of a split
// source: block b (events b*SplitBlock up to the next block) belongs to
// split b mod splits.
const SplitBlock = 1024

// SplitSource is Source divided into splits by event number, so the
// generator (and the partitioner chained to it) runs in parallel: the
// events are cut into blocks of SplitBlock and split s generates blocks s,
// s+splits, s+2*splits, ... in order. Together the splits produce exactly
// the events of the one-split stream, each event identical to its twin
// (same index, same random draws): a split jumps the shared PCG stream over
// the other splits' blocks instead of drawing its own numbers. Each split
// is in index order, so its watermark (generated per split by weir) never
// runs ahead of the one-split stream's at the same event; with a watermark
// delay of at least the jitter no event is late in either, and event-time
// results are the same. With a smaller delay which events are late depends
// on how the splits interleave, as it would with any parallel source.
// splits <= 1 is Source.
func SplitSource(n, jitterMs int64, seed uint64, rate float64, splits int) weir.Source[Click] {
	if splits <= 1 {
		return Source(n, jitterMs, seed, rate)
	}
	s := &splitSource{n: n, jitter: jitterMs, seed: seed, rate: rate, splits: splits}
	s.next = make([]atomic.Int64, splits)
	s.wake = make([]chan struct{}, splits)
	for i := range s.wake {
		s.wake[i] = make(chan struct{}, 1)
		s.next[i].Store(math.MaxInt64) // not open: holds no one back
	}
	return s
}

// MaxDrift is how far (in events) a split may run ahead of the slowest
// open split before its reader waits: the splits' events reach the same
// window subtasks, whose state holds every window from the slowest split's
// watermark to the fastest split's events, so unbounded drift (one split's
// goroutine descheduled on a busy machine) means many open windows and a
// working set far beyond the caches. This is source-side watermark
// alignment (as Flink's FLIP-182) done inside this source, whose splits
// share a process.
const MaxDrift = 16 * SplitBlock

type splitSource struct {
	n, jitter int64
	seed      uint64
	rate      float64 // per split
	splits    int
	next      []atomic.Int64  // per split: the next index of its open reader; MaxInt64 when none
	wake      []chan struct{} // per split: poked when another split advanced
}

// blockSplit is split s of n.
type blockSplit struct{ s, n int }

func (b blockSplit) ID() string { return fmt.Sprintf("adclicks-%d-of-%d", b.s, b.n) }

func (s *splitSource) Splits(context.Context) ([]weir.Split, error) {
	out := make([]weir.Split, s.splits)
	for i := range out {
		out[i] = blockSplit{i, s.splits}
	}
	return out, nil
}

func (s *splitSource) Open(_ context.Context, sp weir.Split) (weir.SplitReader[Click], error) {
	b, ok := sp.(blockSplit)
	if !ok || b.n != s.splits || b.s < 0 || b.s >= b.n {
		return nil, fmt.Errorf("adclicks: split source of %d splits has no split %s", s.splits, sp.ID())
	}
	r := &splitReader{g: NewGen(s.n, s.jitter, s.seed), pace: pace.New(s.rate), src: s, split: b.s}
	r.skipEvents = int64(s.splits-1) * SplitBlock
	r.skip = pcgJump(2 * uint64(r.skipEvents)) // two draws per event
	first := int64(b.s) * SplitBlock
	r.g.jump(pcgJump(2*uint64(first)), first)
	s.next[b.s].Store(first)
	return r, nil
}

// OpenAt reopens a split at a position saved by Position (the same format
// as Source's: the next event's index and the PCG state).
func (s *splitSource) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[Click], error) {
	r, err := s.Open(ctx, sp)
	if err != nil {
		return nil, err
	}
	g := r.(*splitReader).g
	if len(pos) < 8 {
		return nil, fmt.Errorf("adclicks: split %s: bad position (%d bytes)", sp.ID(), len(pos))
	}
	i := int64(binary.BigEndian.Uint64(pos))
	if b := sp.(blockSplit); i < g.n && int((i/SplitBlock)%int64(b.n)) != b.s {
		return nil, fmt.Errorf("adclicks: split %s: position %d is in another split's block", sp.ID(), i)
	}
	g.i = i
	s.next[sp.(blockSplit).s].Store(i)
	if err := g.rng.UnmarshalBinary(pos[8:]); err != nil {
		return nil, fmt.Errorf("adclicks: split %s: bad position: %w", sp.ID(), err)
	}
	return r, nil
}

type splitReader struct {
	g          *Gen
	skip       affine // the PCG advance over the other splits' blocks
	skipEvents int64
	pace       *pace.Pacer
	src        *splitSource
	split      int
	timer      *time.Timer
}

// ahead reports whether this split is more than MaxDrift events ahead of
// the slowest other open split.
func (r *splitReader) ahead() bool {
	lo := int64(math.MaxInt64)
	for i := range r.src.next {
		if i != r.split {
			lo = min(lo, r.src.next[i].Load())
		}
	}
	return r.g.i-lo > MaxDrift
}

// waitForPeers waits up to a millisecond for another split to advance. It
// must not wait long: another split may be read by this same goroutine
// (fewer subtasks than splits), and it advances only after Read returns.
func (r *splitReader) waitForPeers(ctx context.Context) {
	if r.timer == nil {
		r.timer = time.NewTimer(time.Millisecond)
	} else {
		r.timer.Reset(time.Millisecond)
	}
	select {
	case <-r.src.wake[r.split]:
	case <-r.timer.C:
	case <-ctx.Done():
	}
	r.timer.Stop()
}

// advanced publishes this split's progress and wakes the others.
func (r *splitReader) advanced() {
	r.src.next[r.split].Store(r.g.i)
	r.wakePeers()
}

func (r *splitReader) Read(ctx context.Context, dst []Click) (int, error) {
	if r.ahead() {
		if r.waitForPeers(ctx); r.ahead() {
			return 0, nil
		}
	}
	allowed, err := r.pace.Allow(ctx, len(dst))
	if err != nil || allowed == 0 {
		return 0, err
	}
	g := r.g
	k := 0
	for k < allowed && g.i < g.n {
		end := (g.i/SplitBlock + 1) * SplitBlock // this block's end
		k += g.Fill(dst[k:min(allowed, k+int(end-g.i))])
		if g.i == end {
			g.jump(r.skip, r.skipEvents) // on to this split's next block
		}
	}
	r.pace.Emitted(k)
	if g.i >= g.n {
		r.src.next[r.split].Store(math.MaxInt64)
		r.wakePeers()
		return k, io.EOF
	}
	r.advanced()
	return k, nil
}

// Position implements weir.CheckpointedReader. The index always points
// into one of this split's blocks (or past the end): the jump over the
// other splits' blocks is taken as soon as a block is done.
func (r *splitReader) Position() ([]byte, error) {
	st, err := r.g.rng.MarshalBinary()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint64(nil, uint64(r.g.i)), st...), nil
}

func (r *splitReader) Close() error {
	r.src.next[r.split].Store(math.MaxInt64) // a closed split holds no one back
	r.wakePeers()
	r.pace.Stop()
	return nil
}

// wakePeers pokes the other splits' readers (a waiting one looks again).
func (r *splitReader) wakePeers() {
	for i, w := range r.src.wake {
		if i != r.split {
			select {
			case w <- struct{}{}:
			default:
			}
		}
	}
}

// u128 is an unsigned 128-bit integer (arithmetic mod 2^128).
type u128 struct{ hi, lo uint64 }

func (a u128) mul(b u128) u128 {
	hi, lo := bits.Mul64(a.lo, b.lo)
	hi += a.hi*b.lo + a.lo*b.hi
	return u128{hi, lo}
}

func (a u128) add(b u128) u128 {
	lo, c := bits.Add64(a.lo, b.lo, 0)
	hi, _ := bits.Add64(a.hi, b.hi, c)
	return u128{hi, lo}
}

// affine is the map x -> a*x + c on PCG states.
type affine struct{ a, c u128 }

func (f affine) apply(x u128) u128 { return f.a.mul(x).add(f.c) }

// then is f followed by g.
func (f affine) then(g affine) affine { return affine{g.a.mul(f.a), g.a.mul(f.c).add(g.c)} }

// pcgStep is one step of math/rand/v2's PCG: its 128-bit LCG.
var pcgStep = affine{
	a: u128{2549297995355413924, 4865540595714422341},
	c: u128{6364136223846793005, 1442695040888963407},
}

// pcgJump is the LCG advanced by k steps (Brown's jump-ahead: square and
// multiply on the affine map), O(log k).
func pcgJump(k uint64) affine {
	acc := affine{a: u128{0, 1}}
	base := pcgStep
	for ; k > 0; k >>= 1 {
		if k&1 != 0 {
			acc = acc.then(base)
		}
		base = base.then(base)
	}
	return acc
}

// jump advances the generator by events events whose PCG advance is f,
// without generating them.
func (g *Gen) jump(f affine, events int64) {
	b, _ := g.rng.AppendBinary(g.scratch[:0])
	x := f.apply(u128{binary.BigEndian.Uint64(b[4:]), binary.BigEndian.Uint64(b[12:])})
	binary.BigEndian.PutUint64(b[4:], x.hi)
	binary.BigEndian.PutUint64(b[12:], x.lo)
	if err := g.rng.UnmarshalBinary(b); err != nil {
		panic(err) // b is AppendBinary's own format
	}
	g.i += events
}
