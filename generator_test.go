package weir_test

import (
	"context"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

func TestGeneratorIsDeterministicAndSplits(t *testing.T) {
	run := func(p, splits int) []int64 {
		job := weir.NewJob("gen", weir.Parallelism(p))
		src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: 1000, Seed: 9, Splits: splits},
			func(i int64, rng *rand.Rand) int64 { return i*1000 + rng.Int64N(1000) }), weir.NoWatermarks[int64]())
		out := weir.Collect(src)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := out.Items()
		sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
		return got
	}
	a, b, c := run(1, 1), run(1, 1), run(3, 3)
	if len(a) != 1000 || len(c) != 1000 {
		t.Fatalf("got %d and %d records, want 1000", len(a), len(c))
	}
	for i := range a {
		if a[i] != b[i] || a[i]/1000 != int64(i) || c[i]/1000 != int64(i) {
			t.Fatalf("record %d: %d %d %d", i, a[i], b[i], c[i])
		}
	}
}

func TestGeneratorRateLimit(t *testing.T) {
	job := weir.NewJob("rate")
	src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: 200, Rate: 2000},
		func(i int64, _ *rand.Rand) int64 { return i }), weir.NoWatermarks[int64]())
	out := weir.Collect(src)
	start := time.Now()
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 200 records at 2000/s cannot take less than ~100ms.
	if el := time.Since(start); el < 90*time.Millisecond || len(out.Items()) != 200 {
		t.Fatalf("%d records in %v: the rate limit was not applied", len(out.Items()), el)
	}
}
