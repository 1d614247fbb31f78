package cep

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

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

// TestIdleKeysPruned: 100 keys each start a partial match and then go
// quiet while another key's events move the watermark on. Once the
// watermark passes their windows, the sweep has removed every quiet key
// from state (on the heap and in Pebble), before the end of the input.
func TestIdleKeysPruned(t *testing.T) {
	var evs []ev
	for k := range 100 {
		evs = append(evs, ev{ID: k, Key: k, TS: 1000 + int64(k), Mask: 1}) // a
	}
	for i := range 300 {
		evs = append(evs, ev{ID: 100 + i, Key: 1000, TS: 1100 + int64(i)*10, Mask: 4}) // neither a nor b
	}
	p := Begin[ev]("a").Where(func(e ev) bool { return e.Mask&1 != 0 }).
		FollowedBy("b").Where(func(e ev) bool { return e.Mask&2 != 0 }).
		Within(50 * time.Millisecond)
	for _, pebble := range []bool{false, true} {
		t.Run(fmt.Sprintf("pebble=%v", pebble), func(t *testing.T) {
			var mu sync.Mutex
			held, after := 0, -1 // most keys held; keys held once the windows passed
			testHookSwept = func(wm int64, keys int) {
				mu.Lock()
				defer mu.Unlock()
				held = max(held, keys)
				if wm >= 1300 && wm < 3000 {
					after = keys
				}
			}
			defer func() { testHookSwept = nil }()
			var opts []weir.JobOption
			if pebble {
				opts = append(opts, weir.PebbleState(t.TempDir(), 16<<20))
			}
			if got := runDetect(t, p, []string{"a", "b"}, evs, 1, opts...); len(got) != 0 {
				t.Fatalf("matches %v", got)
			}
			mu.Lock()
			defer mu.Unlock()
			if held < 50 {
				t.Errorf("at most %d keys in state while windows were open", held)
			}
			if after != 0 {
				t.Errorf("%d keys in state after their windows passed", after)
			}
		})
	}
}
