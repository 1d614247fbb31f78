package cep

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/weirstream/weir"
)

// TestDifferentialWideTime is TestDifferential with time stretched 4000
// times: events seconds apart and windows of 8 to 40 s, so that the keys'
// wakes land beyond the sweep's wheel (16 s) and the watermark jumps over
// empty stretches of time. The matches still equal the oracle's.
func TestDifferentialWideTime(t *testing.T) {
	const scale = 4000
	seeds := 80
	if raceEnabled {
		seeds = 20
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 17))
		p := randPattern(rng)
		p.window *= scale
		disorder := int64(1 + rng.IntN(4))
		evs := randEvents(rng, 3, 8, disorder)
		for i := range evs {
			evs[i].TS = 1000 + (evs[i].TS-1000)*scale
		}
		want := p.expected(evs)
		for _, par := range []int{1, 3} {
			got := runDetect(t, p.build(), p.stageNames(), evs, disorder*scale, weir.Parallelism(par))
			if !slices.Equal(want, got) {
				t.Fatalf("seed %d parallelism %d: pattern%s\nevents %v\n%s", seed, par, p, evs, diffStrings(want, got))
			}
		}
	}
}
