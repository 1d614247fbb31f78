// Command crashjob is the process the crash test kills: a deterministic
// bounded input, keyed tumbling windows and a keyed running counter,
// checkpoints every --interval, results through the exactly-once file sink.
// Started again with the same flags it resumes from the latest checkpoint.
// Keyed state is on the heap (--state heap, the default) or in Pebble
// (--state pebble --state-dir DIR), with incremental checkpoints if
// --incremental.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/internal/engine"
)

// Event is one input record.
type Event struct {
	Key string
	TS  int64
	V   int64
}

func main() {
	var (
		ckDir     = flag.String("checkpoint-dir", "", "checkpoint directory")
		out       = flag.String("output", "", "output directory (exactly-once file sink)")
		events    = flag.Int64("events", 20000, "number of events")
		rate      = flag.Float64("rate", 0, "events per second (0: unlimited)")
		interval  = flag.Duration("interval", 100*time.Millisecond, "checkpoint interval")
		par       = flag.Int("parallelism", 2, "parallelism")
		failpoint = flag.String("failpoint", "", "kill this process with SIGKILL at this checkpoint stage: state-file, files-written or complete")
		failAfter = flag.Int64("failpoint-checkpoint", 2, "... of the first checkpoint with at least this id")
		counter   = flag.Bool("counter", true, "include the keyed running counter (Process with ValueState)")
		backend   = flag.String("state", "heap", "keyed state backend: heap or pebble")
		stateDir  = flag.String("state-dir", "", "directory of the Pebble state (--state pebble; default: the system's temporary directory)")
		stateMem  = flag.Int64("state-memory", 0, "memory budget of the Pebble state in bytes (0: the default)")
		incr      = flag.Bool("incremental", false, "incremental checkpoints (of Pebble state)")
		changelog = flag.Bool("changelog", false, "changelog checkpoints (of Pebble state; weir.StateChangelog, materialized by size alone)")
	)
	flag.Parse()
	if *ckDir == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "crashjob: --checkpoint-dir and --output are required")
		os.Exit(2)
	}
	opts := []weir.JobOption{
		weir.Parallelism(*par),
		weir.Checkpointing(*interval, *ckDir),
		weir.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	switch *backend {
	case "heap":
		opts = append(opts, weir.HeapState())
	case "pebble":
		opts = append(opts, weir.PebbleState(*stateDir, *stateMem))
	default:
		fmt.Fprintf(os.Stderr, "crashjob: --state %q: want heap or pebble\n", *backend)
		os.Exit(2)
	}
	if *incr {
		opts = append(opts, weir.IncrementalCheckpoints())
	}
	if *changelog {
		opts = append(opts, weir.StateChangelog(0))
	}
	if *failpoint != "" {
		opts = append(opts, engine.CheckpointHook(func(stage engine.CheckpointStage, id int64) {
			if string(stage) == *failpoint && id >= *failAfter {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}).(weir.JobOption))
	}
	job := weir.NewJob("crashjob", opts...)
	// One split: with several, which events are late depends on how the
	// splits' watermarks interleave in time, and the reference run could
	// not be compared record for record.
	const base = int64(1_700_000_000_000)
	src := weir.FromSource(job, "events", weir.GeneratorSource(weir.GeneratorConfig{Count: *events, Seed: 7, Rate: *rate, Splits: 1},
		func(i int64, rng *rand.Rand) Event {
			delay := rng.Int64N(1500)
			if rng.IntN(50) == 0 {
				delay += rng.Int64N(20_000) // late: beyond the watermark bound
			}
			return Event{Key: fmt.Sprintf("k%02d", rng.IntN(40)), TS: base + i*10 - delay, V: i}
		}),
		weir.BoundedOutOfOrderness(time.Second, func(e Event) time.Time { return time.UnixMilli(e.TS) }), weir.UID("events"))
	byKey := weir.KeyBy(src, func(e Event) string { return e.Key })
	windows := weir.Aggregate(weir.Window(byKey, weir.Tumbling(time.Second)), weir.Sum(func(e Event) int64 { return e.V }), weir.UID("window-sums"))
	lines := weir.Map(windows, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("window %s %d %d", r.Key, r.Start.UnixMilli(), r.Value)
	})
	if *counter {
		counts := weir.ProcessWith(byKey, func() weir.KeyedProcessFunction[string, Event, string] { return &runningCount{} }, weir.UID("counter"))
		lines = weir.Union(lines, counts)
	}
	weir.To(lines, file.ExactlyOnce[string](*out), weir.UID("sink"))
	if err := job.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "crashjob:", err)
		os.Exit(1)
	}
}

// runningCount counts events per key and emits the count every 25 events
// of that key.
type runningCount struct {
	n *weir.ValueState[string, int64]
}

func (c *runningCount) Open(rc *weir.RuntimeContext[string]) error {
	c.n = weir.NewValueState[int64](rc, "n")
	return nil
}

func (c *runningCount) ProcessElement(ctx *weir.KeyedContext[string, string], e Event) error {
	n, _ := c.n.Value()
	n++
	c.n.Update(n)
	if n%25 == 0 {
		ctx.Emit(fmt.Sprintf("count %s %d", ctx.Key(), n))
	}
	return nil
}
