// Package adclicks is the ad-click workload: the deterministic click
// generator of the standard benchmark (docs/workload.md, identical
// event for event to its reference generator), a weir source over it, the
// order-independent result digest, and the hand-written single-loop
// baseline that weir is measured against.
package adclicks

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Workload constants (docs/workload.md).
const (
	NumAds   = 10_000
	NumUsers = 1_000_000
	StartMs  = int64(1_700_000_000_000)
	Seed     = 42
	ZipfS    = 1.1
	WindowMs = int64(60_000)
	DelayMs  = int64(5_000)
	JitterMs = int64(5_000)
	DefaultN = 5_000_000
)

// Click is one ad click.
type Click struct {
	AdID        int64
	UserID      int64
	EventTimeMs int64
}

type aliasTable struct {
	prob  [NumAds]uint64 // accept threshold on the low 32 bits; 1<<32 = always
	alias [NumAds]int32
}

var table = buildAlias()

// buildAlias builds Vose's alias table for P(ad=k) ∝ 1/(k+1)^ZipfS, in the
// same order of operations as the reference so the tables are bit-identical.
func buildAlias() *aliasTable {
	const n = NumAds
	p := make([]float64, n)
	sum := 0.0
	for k := 0; k < n; k++ {
		p[k] = 1 / math.Pow(float64(k+1), ZipfS)
		sum += p[k]
	}
	for k := range p {
		p[k] = p[k] / sum * n
	}
	t := &aliasTable{}
	small, large := make([]int, 0, n), make([]int, 0, n)
	for k := n - 1; k >= 0; k-- {
		if p[k] < 1 {
			small = append(small, k)
		} else {
			large = append(large, k)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s := small[len(small)-1]
		small = small[:len(small)-1]
		l := large[len(large)-1]
		t.prob[s] = uint64(p[s] * (1 << 32))
		t.alias[s] = int32(l)
		p[l] = (p[l] + p[s]) - 1
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, k := range large {
		t.prob[k] = 1 << 32
		t.alias[k] = int32(k)
	}
	for _, k := range small {
		t.prob[k] = 1 << 32
		t.alias[k] = int32(k)
	}
	return t
}

// Gen produces the stream: PCG(seed, seed), two draws per event.
type Gen struct {
	rng    rand.PCG
	i, n   int64
	jitter uint64
	// scratch holds the PCG state while a split jumps (no allocation).
	scratch [20]byte
}

// NewGen returns a generator of n events with jitter in [0, jitterMs),
// seeded like the reference (Seed) unless seed says otherwise.
func NewGen(n, jitterMs int64, seed uint64) *Gen {
	g := &Gen{n: n, jitter: uint64(jitterMs)}
	g.rng.Seed(seed, seed)
	return g
}

// Next fills c with the next event; false at the end.
func (g *Gen) Next(c *Click) bool {
	if g.i >= g.n {
		return false
	}
	r1 := g.rng.Uint64()
	r2 := g.rng.Uint64()
	col := ((r1 >> 32) * NumAds) >> 32
	ad := int64(col)
	if r1&0xffffffff >= table.prob[col] {
		ad = int64(table.alias[col])
	}
	c.AdID = ad
	c.UserID = int64(((r2 & 0xffffffff) * NumUsers) >> 32)
	c.EventTimeMs = StartMs + g.i - int64(((r2>>32)*g.jitter)>>32)
	g.i++
	return true
}

// Fill writes up to len(dst) events and returns how many.
func (g *Gen) Fill(dst []Click) int {
	k := 0
	for k < len(dst) && g.Next(&dst[k]) {
		k++
	}
	return k
}

// Index is the number of events generated so far.
func (g *Gen) Index() int64 { return g.i }

// WindowStart is the start of the tumbling window holding ts.
func WindowStart(ts, size int64) int64 {
	m := ts % size
	if m < 0 {
		m += size
	}
	return ts - m
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// ResultHash hashes one (ad_id, window_start, count) result.
func ResultHash(ad, windowStart, count int64) uint64 {
	return mix64(mix64(mix64(uint64(ad))^uint64(windowStart)) ^ uint64(count))
}

// Digest is the order-independent summary of all results.
type Digest struct {
	Results  int64
	Sum      int64
	Dropped  int64
	Checksum uint64
}

// Add records one result.
func (d *Digest) Add(ad, windowStart, count int64) {
	d.Results++
	d.Sum += count
	d.Checksum += ResultHash(ad, windowStart, count)
}

// Merge adds another digest.
func (d *Digest) Merge(o Digest) {
	d.Results += o.Results
	d.Sum += o.Sum
	d.Dropped += o.Dropped
	d.Checksum += o.Checksum
}

func (d Digest) String() string {
	return fmt.Sprintf("results=%d sum=%d dropped=%d checksum=%016x", d.Results, d.Sum, d.Dropped, d.Checksum)
}
