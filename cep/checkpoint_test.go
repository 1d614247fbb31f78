package cep

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// genEv is event i of the checkpoint test: 40 keys, 1ms apart with up to
// 5ms of disorder, letters a, b, c.
func genEv(i int64, rng *rand.Rand) ev {
	return ev{ID: int(i), Key: rng.IntN(40), TS: 1000 + i - rng.Int64N(5), Mask: uint8(1 + rng.IntN(7))}
}

// cpPattern has many partial matches in flight at any time: a, then any
// later b, then the next c, within 200ms.
func cpPattern() *Pattern[ev] {
	return Begin[ev]("a").Where(func(e ev) bool { return e.Mask&1 != 0 }).
		FollowedByAny("b").Where(func(e ev) bool { return e.Mask&2 != 0 }).
		FollowedBy("c").Where(func(e ev) bool { return e.Mask&4 != 0 }).
		Within(200 * time.Millisecond)
}

func cpJob(count int64, rate float64, p int, dir string, out *weir.Collector[string], opts ...weir.JobOption) (*weir.Job, *weir.Collector[string]) {
	job := weir.NewJob("cep-cp", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(20*time.Millisecond, dir)}, opts...)...)
	src := weir.FromSource(job, "gen", weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 5, Rate: rate}, genEv),
		weir.BoundedOutOfOrderness(5*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }), weir.UID("gen"))
	m := Detect(weir.KeyBy(src, func(e ev) int { return e.Key }), cpPattern(),
		func(k int, m Match[ev]) string { return matchString(k, m, []string{"a", "b", "c"}) }, weir.UID("cep"))
	c := weir.Collect(m, weir.UID("collect"))
	return job, c
}

// TestCheckpointRestoreRescale stops a job with a savepoint while keys have
// partial matches, restores it at parallelism 1 and 3, on the heap and in
// Pebble: the matches before plus after equal one uninterrupted run.
func TestCheckpointRestoreRescale(t *testing.T) {
	const n = 20000
	ref, refOut := cpJob(n, 0, 2, t.TempDir(), nil)
	if err := ref.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := refOut.Items()
	slices.Sort(want)
	if len(want) < 1000 {
		t.Fatalf("only %d matches in the reference run", len(want))
	}
	for _, tc := range []struct {
		p      int
		pebble bool
	}{{1, false}, {3, false}, {3, true}} {
		t.Run(fmt.Sprintf("p=%d,pebble=%v", tc.p, tc.pebble), func(t *testing.T) {
			var backend []weir.JobOption
			if tc.pebble {
				backend = []weir.JobOption{weir.PebbleState(t.TempDir(), 16<<20)}
			}
			// 10 K events/s: the savepoint has two seconds to land before the
			// first run passes the reference run's end, on a loaded machine too.
			job, first := cpJob(-1, 10_000, 2, t.TempDir(), nil, backend...)
			done := make(chan error, 1)
			go func() { done <- job.Run(context.Background()) }()
			waitFor(t, "first matches", func() bool { return len(first.Items()) > 200 })
			path, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("stop with savepoint: %v", err)
			}
			before := first.Items()
			if len(before) >= len(want) {
				t.Fatalf("the first run reached the end (%d matches): savepoint too late", len(before))
			}
			if tc.pebble {
				backend = []weir.JobOption{weir.PebbleState(t.TempDir(), 16<<20)}
			}
			job2, second := cpJob(n, 0, tc.p, t.TempDir(), nil, append(backend, weir.RestoreFrom(path))...)
			if err := job2.Run(context.Background()); err != nil {
				t.Fatalf("restore at p=%d: %v", tc.p, err)
			}
			got := append(before, second.Items()...)
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%d before + %d after the savepoint; want %d as one run\n%s", len(before), len(second.Items()), len(want), diffStrings(want, got))
			}
		})
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	weirtest.WaitFor(t, what, 20*time.Second, cond)
}
