package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// metaConfig is one random configuration of the metamorphic test: how a
// job runs, which must not change what it outputs.
type metaConfig struct {
	kind        string // "window": tumbling counts; "process": ckProc (every state kind, timers, TTL); "pwindow": ProcessWindow over sessions with lateness; "trigger-window": session counts with a count trigger, lateness and retractions; "sliding": sliding counts
	p           int
	batch       int
	buffer      time.Duration
	pebble      bool
	incremental bool
	ckEvery     int // a checkpoint after every ckEvery records (Job.Checkpoint)
	failAt      int // index of the event at which the job fails once; -1: never
}

func (c metaConfig) String() string {
	be := "heap"
	if c.pebble {
		be = "pebble"
		if c.incremental {
			be += "+incremental"
		}
	}
	return fmt.Sprintf("%s p=%d batch=%d buffer=%v %s checkpoint-every=%d fail-at=%d", c.kind, c.p, c.batch, c.buffer, be, c.ckEvery, c.failAt)
}

func randomMetaConfig(r *rand.Rand, n int) metaConfig {
	c := metaConfig{
		kind:    []string{"window", "process", "pwindow", "trigger-window", "sliding"}[r.IntN(5)],
		p:       1 + r.IntN(3),
		batch:   []int{1, 7, 64, 1024}[r.IntN(4)],
		buffer:  []time.Duration{0, time.Millisecond, 10 * time.Millisecond}[r.IntN(3)],
		pebble:  r.IntN(2) == 0,
		ckEvery: []int{300, 1000, 3000}[r.IntN(3)],
		failAt:  -1,
	}
	c.incremental = c.pebble && r.IntN(2) == 0
	if r.IntN(3) != 0 {
		c.failAt = n/4 + r.IntN(n/2)
	}
	return c
}

// reference is the plain way to run a configuration's job: same kind and
// parallelism (a Process timer sees its subtask's watermark, which depends
// on the parallelism), heap state, default batching, no failure.
func (c metaConfig) reference() metaConfig {
	return metaConfig{kind: c.kind, p: c.p, batch: 1024, buffer: 10 * time.Millisecond, ckEvery: 0, failAt: -1}
}

// metaSeed is the metamorphic test's seed: WEIR_META_SEED, or a fresh one;
// logged either way.
func metaSeed(t *testing.T) uint64 {
	v := uint64(time.Now().UnixNano())
	if s := os.Getenv("WEIR_META_SEED"); s != "" {
		var err error
		if v, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("WEIR_META_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (replay: WEIR_META_SEED=%d go test -run '^TestMetamorphic$')", v, v)
	return v
}

// TestMetamorphic runs one seeded input under random configurations
// (parallelism, batch size, buffer timeout, heap or Pebble state,
// incremental checkpoints, checkpoints at random places, a failure and
// restart) and compares each output with that of a plain run, as pebble's
// metamorphic test compares a run's results across options. A few
// configurations per run; WEIR_META_RUNS=n for more.
func TestMetamorphic(t *testing.T) {
	seed := metaSeed(t)
	r := rand.New(rand.NewPCG(seed, 0x6d657461))
	evs := randomEvents(r, 8000, 200, 3000)
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("WEIR_META_RUNS")); err == nil && n > 0 {
		runs = n
	}
	refs := map[metaConfig][]string{}
	for i := range runs {
		c := randomMetaConfig(r, len(evs))
		if i == 0 {
			// Every run covers the hardest case once: a Process job on
			// incremental Pebble checkpoints that fails and restarts.
			c.kind, c.pebble, c.incremental, c.failAt = "process", true, true, len(evs)/2+r.IntN(len(evs)/4)
		}
		if i == 1 {
			// and its window counterpart: the window's state is in Pebble
			// too (a process function, window_state.go)
			c.kind, c.pebble, c.incremental, c.failAt = "window", true, true, len(evs)/2+r.IntN(len(evs)/4)
		}
		if i == 2 {
			// and a window with a count trigger or a sliding window, on
			// Pebble too (window_state_trigger.go, window_state_sliding.go)
			c.kind, c.pebble, c.failAt = []string{"trigger-window", "sliding"}[r.IntN(2)], true, len(evs)/2+r.IntN(len(evs)/4)
		}
		ref := c.reference()
		want, ok := refs[ref]
		if !ok {
			want = runMeta(t, evs, ref)
			if len(want) < 100 {
				t.Fatalf("reference %v: only %d outputs", ref, len(want))
			}
			refs[ref] = want
		}
		got := runMeta(t, evs, c)
		t.Logf("run %d: %v: %d records", i, c, len(got))
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d run %d: %v: output differs from %v: %d vs %d records\n%s", seed, i, c, ref, len(got), len(want), firstDiff(want, got))
		}
	}
}

// runMeta runs c's job over evs into an exactly-once sink and returns the
// committed output; extra options come after c's.
func runMeta(t *testing.T, evs []ev, c metaConfig, extra ...weir.JobOption) []string {
	t.Helper()
	ckDir := t.TempDir()
	opts := []weir.JobOption{weir.Parallelism(c.p), weir.BatchSize(c.batch), weir.BufferTimeout(c.buffer),
		// Checkpoints at c.ckEvery, and the final one; none periodic.
		weir.Checkpointing(time.Hour, ckDir), weirtest.FirstCheckpointAfter(time.Hour),
		weir.Clock(func() time.Time { return time.UnixMilli(1_000_000) }),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 10, Interval: time.Hour})}
	if c.pebble {
		opts = append(opts, weir.PebbleState(t.TempDir(), 8<<20))
		if c.incremental {
			opts = append(opts, weir.IncrementalCheckpoints())
		}
	}
	job := weir.NewJob("meta", append(opts, extra...)...)
	var in weir.Source[ev] = weir.SliceSource(evs)
	if c.ckEvery > 0 {
		in = weirtest.CheckpointEvery(func() *weir.Job { return job }, in.(weir.RestorableSource[ev]), c.ckEvery)
	}
	src := weir.FromSource(job, "events", in,
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	var failed atomic.Bool
	if c.failAt >= 0 {
		// The source has one split and the map is chained to it: the
		// events arrive in order, so counting them finds the failAt-th.
		var seen atomic.Int64
		src = weir.Map(src, func(e ev) ev {
			if seen.Add(1) == int64(c.failAt) && failed.CompareAndSwap(false, true) {
				panic("injected failure")
			}
			return e
		})
	}
	keyed := weir.KeyBy(src, func(e ev) string { return e.Key })
	var out *weir.Stream[string]
	switch c.kind {
	case "window":
		counts := weir.Aggregate(weir.Window(keyed, weir.Tumbling(time.Second)), weir.Count[ev](), weir.UID("counts"))
		out = weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
			return fmt.Sprintf("%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
		})
	case "pwindow": // on Pebble, its windows' events are lists in Pebble (window_state_process.go)
		out = weir.ProcessWindow(weir.Window(keyed, weir.Session(300*time.Millisecond), weir.AllowedLateness(time.Second)),
			func(k string, w weir.WindowInfo, evs []ev, emit func(string)) error {
				emit(fmt.Sprintf("%s@%d-%d=%s", k, w.Start.UnixMilli(), w.End.UnixMilli(), tsList(evs)))
				return nil
			}, weir.UID("pwindow"))
	case "trigger-window": // on Pebble, window_state_trigger.go
		counts := weir.Aggregate(weir.Window(keyed, weir.Session(300*time.Millisecond), weir.Trigger(weir.CountTrigger(3)),
			weir.AllowedLateness(time.Second), weir.Retracting()), weir.Count[ev](), weir.UID("counts"))
		out = weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
			return fmt.Sprintf("%s@%d-%d=%d %v", r.Key, r.Start.UnixMilli(), r.End.UnixMilli(), r.Value, r.Kind)
		})
	case "sliding": // on Pebble, window_state_sliding.go
		counts := weir.Aggregate(weir.Window(keyed, weir.Sliding(500*time.Millisecond)), weir.Count[ev](), weir.UID("counts"))
		out = weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
			return fmt.Sprintf("%s@%d=%d", r.Key, r.End.UnixMilli(), r.Value)
		})
	case "process":
		out = weir.ProcessWith(keyed, func() weir.KeyedProcessFunction[string, ev, string] { return &ckProc{showWM: c.p == 1} }, weir.UID("proc"))
	}
	sink := newMemSink()
	weir.To(out, weir.Sink[string](sink), weir.UID("sink"))
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("%v: %v", c, err)
	}
	if n := job.Metrics().Checkpoints.Restarts; (c.failAt >= 0) != (n == 1) || n > 1 {
		t.Fatalf("%v: %d restarts (failure injected: %v)", c, n, failed.Load())
	}
	if c.incremental { // the window's state is in Pebble too (window_state.go)
		if shared, _ := os.ReadDir(filepath.Join(ckDir, "shared")); len(shared) == 0 {
			t.Errorf("%v: no shared files after incremental checkpoints", c)
		}
	}
	return sink.output()
}
