package cep

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

func matchString(key int, m Match[ev], order []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "k%d", key)
	for _, name := range order {
		if es, ok := m[name]; ok {
			fmt.Fprintf(&b, " %s:", name)
			for i, e := range es {
				if i > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%d", e.ID)
			}
		}
	}
	return b.String()
}

func (p oPattern) stageNames() []string {
	var out []string
	for _, s := range p.stages {
		out = append(out, s.name)
	}
	return out
}

// expected runs the oracle per key.
func (p oPattern) expected(evs []ev) []string {
	var out []string
	for key, l := range byKeyInOrder(evs) {
		for _, m := range p.oracle(l) {
			mm := Match[ev]{}
			for _, t := range m {
				name := p.stages[t.stage].name
				mm[name] = append(mm[name], l[t.pos])
			}
			out = append(out, matchString(key, mm, p.stageNames()))
		}
	}
	slices.Sort(out)
	return out
}

// runDetect runs Detect over evs in a job and returns the matches.
func runDetect(t *testing.T, pat *Pattern[ev], order []string, evs []ev, disorder int64, opts ...weir.JobOption) []string {
	t.Helper()
	job := weir.NewJob("cep-test", opts...)
	src := weir.FromSource(job, "events", weir.SliceSource(evs),
		weir.BoundedOutOfOrderness(time.Duration(disorder)*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	ks := weir.KeyBy(src, func(e ev) int { return e.Key })
	out := weir.Collect(Detect(ks, pat, func(k int, m Match[ev]) string { return matchString(k, m, order) }))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	return got
}

func diffStrings(want, got []string) string {
	var b strings.Builder
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j >= len(got) || (i < len(want) && want[i] < got[j]):
			fmt.Fprintf(&b, "  missing: %s\n", want[i])
			i++
		case i >= len(want) || got[j] < want[i]:
			fmt.Fprintf(&b, "  extra:   %s\n", got[j])
			j++
		default:
			i++
			j++
		}
	}
	return b.String()
}

// TestDifferential checks Detect against the brute-force oracle over
// random patterns and random keyed inputs with bounded disorder, at
// parallelism 1 and 3.
func TestDifferential(t *testing.T) {
	seeds := 400
	if testing.Short() || raceEnabled {
		seeds = 80
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		p := randPattern(rng)
		disorder := int64(1 + rng.IntN(4))
		evs := randEvents(rng, 3, 8, disorder)
		want := p.expected(evs)
		for _, par := range []int{1, 3} {
			got := runDetect(t, p.build(), p.stageNames(), evs, disorder, weir.Parallelism(par))
			if !slices.Equal(want, got) {
				t.Fatalf("seed %d parallelism %d: pattern%s\nevents %v\n%s", seed, par, p, evs, diffStrings(want, got))
			}
		}
	}
}

// TestDifferentialDetectAll runs several random patterns in one DetectAll:
// each pattern's matches equal the oracle's.
func TestDifferentialDetectAll(t *testing.T) {
	seeds := 60
	if raceEnabled {
		seeds = 20
	}
	for seed := 0; seed < seeds; seed++ {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		var ps []oPattern
		var pats []*Pattern[ev]
		for i := 0; i < 3; i++ {
			p := randPattern(rng)
			ps = append(ps, p)
			pats = append(pats, p.build())
		}
		disorder := int64(1 + rng.IntN(4))
		evs := randEvents(rng, 3, 8, disorder)
		var want []string
		for i, p := range ps {
			for _, s := range p.expected(evs) {
				want = append(want, fmt.Sprintf("p%d %s", i, s))
			}
		}
		slices.Sort(want)
		for _, par := range []int{1, 3} {
			job := weir.NewJob("cep-all", weir.Parallelism(par))
			src := weir.FromSource(job, "events", weir.SliceSource(evs),
				weir.BoundedOutOfOrderness(time.Duration(disorder)*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
			out := weir.Collect(DetectAll(weir.KeyBy(src, func(e ev) int { return e.Key }), pats, func(k, i int, m Match[ev]) string {
				return fmt.Sprintf("p%d %s", i, matchString(k, m, ps[i].stageNames()))
			}))
			if err := job.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := out.Items()
			slices.Sort(got)
			if !slices.Equal(want, got) {
				t.Fatalf("seed %d parallelism %d:\n%s", seed, par, diffStrings(want, got))
			}
		}
	}
}
