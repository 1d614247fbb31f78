// Package cepbench is the workload of `weir bench cep`: a seeded stream of
// card events over many keys through one or more three-stage relaxed
// patterns with Within.
package cepbench

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
)

// Event is one generated event: a kind (0-3) and an amount for a key.
type Event struct {
	Key    uint32
	Kind   uint8
	Amount int32
	TS     int64 // unix ms
}

// Config is a benchmark run.
type Config struct {
	Events      int64 // number of events
	Keys        int   // distinct keys
	Patterns    int   // patterns run at once (one cep.DetectAll)
	Parallelism int
	// EventsPerMs is the event-time density: events per millisecond of
	// event time over all keys (100 with 100 K keys: one event per key
	// per second).
	EventsPerMs int64
	Within      time.Duration
	Seed        uint64
	Options     []weir.JobOption
}

// Default is the workload of docs/performance.md.
func Default() Config {
	return Config{Events: 5_000_000, Keys: 100_000, Patterns: 1, Parallelism: 1, EventsPerMs: 100, Within: 10 * time.Second, Seed: 1}
}

// Result is what a run counted.
type Result struct {
	Matches int64
}

// Gen is event i: a random key, a kind with amounts spread so that every
// stage's condition holds for part of the events, and up to 50 ms of
// disorder (the watermark allows 100 ms).
func (c Config) Gen(i int64, rng *rand.Rand) Event {
	r := rng.Uint64()
	return Event{
		Key:    uint32((r >> 8) % uint64(c.Keys)),
		Kind:   uint8(r & 3),
		Amount: int32((r >> 40) % 1000),
		TS:     1_700_000_000_000 + i/c.EventsPerMs - int64((r>>32)&31),
	}
}

// Pattern is pattern j of the workload: a small charge, then (relaxed) a
// large one, then (relaxed) a decline, within the window. The thresholds
// differ per pattern so that patterns do not all match alike.
func (c Config) Pattern(j int) *cep.Pattern[Event] {
	small := int32(100 + j%50)
	large := int32(700 - j%50)
	return cep.Begin[Event]("small").Where(func(e Event) bool { return e.Kind == 0 && e.Amount < small }).
		FollowedBy("large").Where(func(e Event) bool { return e.Kind == 1 && e.Amount > large }).
		FollowedBy("declined").Where(func(e Event) bool { return e.Kind == 2 }).
		Within(c.Within)
}

// Run runs the workload as a weir job.
func Run(ctx context.Context, c Config) (Result, error) {
	job := weir.NewJob("bench-cep", append([]weir.JobOption{weir.Parallelism(c.Parallelism)}, c.Options...)...)
	src := weir.FromSource(job, "events", weir.GeneratorSource(weir.GeneratorConfig{Count: c.Events, Seed: c.Seed}, c.Gen),
		weir.BoundedOutOfOrderness(100*time.Millisecond, func(e Event) time.Time { return time.UnixMilli(e.TS) }))
	keyed := weir.KeyBy(src, func(e Event) uint32 { return e.Key })
	var ps []*cep.Pattern[Event]
	for j := 0; j < max(c.Patterns, 1); j++ {
		ps = append(ps, c.Pattern(j))
	}
	// One operator for all patterns: each event is buffered once per key
	// and one timer per key serves them all.
	m := cep.DetectAll(keyed, ps, func(_ uint32, _ int, m cep.Match[Event]) int64 {
		return int64(len(m["large"]))
	})
	var matches atomic.Int64
	weir.To(m, weir.SinkFunc[int64](func(_ context.Context, xs []int64) error {
		matches.Add(int64(len(xs)))
		return nil
	}))
	err := job.Run(ctx)
	return Result{Matches: matches.Load()}, err
}
