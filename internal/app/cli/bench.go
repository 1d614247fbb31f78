package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/app/adclicks"
)

// benchResult is the --json line of `weir bench adclicks`. The first five
// fields are a contract read by scripts.
type benchResult struct {
	EventsPerSec         float64 `json:"events_per_sec"`
	BaselineEventsPerSec float64 `json:"baseline_events_per_sec"`
	Ratio                float64 `json:"ratio"`
	Checksum             string  `json:"checksum"`
	BaselineChecksum     string  `json:"baseline_checksum"`
	Events               int64   `json:"events"`
	Parallelism          int     `json:"parallelism"`
	Splits               int     `json:"splits"`
	DelayMs              int64   `json:"delay_ms"`
	Results              int64   `json:"results"`
	Sum                  int64   `json:"sum"`
	Dropped              int64   `json:"dropped"`
	DigestsMatch         bool    `json:"digests_match"`
	Runs                 int     `json:"runs"`
	// With --checkpoint-interval:
	CheckpointInterval     string  `json:"checkpoint_interval,omitempty"`
	CheckpointEventsPerSec float64 `json:"checkpoint_events_per_sec,omitempty"`
	CheckpointRatio        float64 `json:"checkpoint_throughput_ratio,omitempty"`
	CheckpointsCompleted   int64   `json:"checkpoints_completed,omitempty"`
	RecoveryMs             float64 `json:"recovery_ms,omitempty"`
	// With --microbatch, --latency-duration (bench_microbatch.go):
	Microbatch          string  `json:"microbatch,omitempty"`
	Epochs              int64   `json:"epochs,omitempty"`
	EventsPerSecPerCore float64 `json:"events_per_sec_per_core,omitempty"`
	LatencyRate         float64 `json:"latency_rate,omitempty"`
	P50LatencyMs        float64 `json:"p50_latency_ms,omitempty"`
	P99LatencyMs        float64 `json:"p99_latency_ms,omitempty"`
}

func newBenchAdclicks() *cobra.Command {
	var (
		events      int64
		delay       int64
		parallelism int
		splits      int
		runs        int
		asJSON      bool
		cpuprofile  string
		batchSize   int
		ckInterval  time.Duration
		ckEvents    int64
		microbatch  time.Duration
		latFraction float64
		latDuration time.Duration
	)
	cmd := &cobra.Command{
		Use:   "adclicks",
		Short: "The standard workload: 60s tumbling counts per ad, weir against a hand-written loop",
		Long: `Runs the adclicks-tumbling workload of docs/workload.md twice in this
process: as a weir job written with the public API (generator source, key-group
shuffle, event-time tumbling window, digest sink) at the given parallelism, and
as the hand-written single loop. Prints both rates (medians over --runs, event
generation included), their ratio and both digests.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			if runs < 1 {
				return fmt.Errorf("--runs must be at least 1")
			}
			if err := checkMicrobatch(microbatch); err != nil {
				return err
			}
			if latFraction <= 0 || latFraction > 1 {
				return fmt.Errorf("--latency-fraction %v: want a fraction in (0, 1]", latFraction)
			}
			// Without checkpoints (the bench's default) the epochs commit
			// in memory: the cost measured is the epochs', not the disk's.
			jobOpts := []weir.JobOption{weir.BatchSize(batchSize)}
			if microbatch > 0 {
				jobOpts = append(jobOpts, weir.Microbatch(microbatch))
			}
			if splits == 0 {
				// One split per subtask when no event can be late in any
				// interleaving of the splits (see adclicks.SplitSource).
				splits = 1
				if delay >= adclicks.JitterMs {
					splits = max(parallelism, 1)
				}
			}
			if splits > 1 && delay < adclicks.JitterMs {
				return fmt.Errorf("--splits %d needs --delay >= %d (the jitter): with a smaller delay which events are late depends on how the splits interleave, and the digest cannot be compared with the baseline's", splits, adclicks.JitterMs)
			}
			var weirRates, baseRates, cpuRates []float64
			var epochs int64
			var d, bd adclicks.Digest
			for r := 0; r < runs; r++ {
				if cpuprofile != "" && r == 0 {
					f, err := os.Create(cpuprofile)
					if err != nil {
						return err
					}
					if err := pprof.StartCPUProfile(f); err != nil {
						return err
					}
				}
				start, cpu0 := time.Now(), cpuTime()
				var err error
				var ran *weir.Job
				d, err = adclicks.RunWeir(cmd.Context(), adclicks.BenchConfig{
					N: events, DelayMs: delay, Parallelism: parallelism, Splits: splits,
					Options: jobOpts, Job: &ran,
				})
				el := time.Since(start)
				cpuRates = append(cpuRates, float64(events)/(cpuTime()-cpu0).Seconds())
				if err == nil {
					epochs = ran.Metrics().Checkpoints.Completed
				}
				if cpuprofile != "" && r == 0 {
					pprof.StopCPUProfile()
				}
				if err != nil {
					return err
				}
				weirRates = append(weirRates, float64(events)/el.Seconds())
				start = time.Now()
				bd = adclicks.RunBaseline(events, delay)
				baseRates = append(baseRates, float64(events)/time.Since(start).Seconds())
			}
			res := benchResult{
				EventsPerSec: median(weirRates), BaselineEventsPerSec: median(baseRates),
				Checksum: fmt.Sprintf("%016x", d.Checksum), BaselineChecksum: fmt.Sprintf("%016x", bd.Checksum),
				Events: events, Parallelism: parallelism, Splits: max(splits, 1), DelayMs: delay,
				Results: d.Results, Sum: d.Sum, Dropped: d.Dropped, DigestsMatch: d == bd, Runs: runs,
			}
			res.Ratio = res.EventsPerSec / res.BaselineEventsPerSec
			res.EventsPerSecPerCore = median(cpuRates)
			if microbatch > 0 {
				res.Microbatch, res.Epochs = microbatch.String(), epochs
			}
			if latDuration > 0 {
				res.LatencyRate = latFraction * res.EventsPerSec
				h, err := adclicksLatency(cmd.Context(), res.LatencyRate, latDuration, delay, parallelism, res.Splits, jobOpts)
				if err != nil {
					return err
				}
				res.P50LatencyMs, res.P99LatencyMs = msOf(h.quantile(0.5)), msOf(h.quantile(0.99))
			}
			if ckInterval > 0 {
				if err := benchCheckpoints(cmd.Context(), &res, ckInterval, ckEvents, runs, batchSize); err != nil {
					return err
				}
			}
			fmt.Fprintf(out, "workload   adclicks-tumbling n=%d delay=%dms window=60s\n", events, delay)
			fmt.Fprintf(out, "weir       %6.2f M events/s  (parallelism %d, median of %d)  %s\n", res.EventsPerSec/1e6, parallelism, runs, d)
			fmt.Fprintf(out, "baseline   %6.2f M events/s  (hand-written single loop)     %s\n", res.BaselineEventsPerSec/1e6, bd)
			fmt.Fprintf(out, "ratio      %.3f\n", res.Ratio)
			if microbatch > 0 {
				fmt.Fprintf(out, "microbatch %v epochs (%d in the last run)\n", microbatch, epochs)
			}
			if latDuration > 0 {
				fmt.Fprintf(out, "latency    p50 %.1f ms  p99 %.1f ms  (paced at %.2f M events/s for %v)\n", res.P50LatencyMs, res.P99LatencyMs, res.LatencyRate/1e6, latDuration)
			}
			if ckInterval > 0 {
				fmt.Fprintf(out, "checkpoints %6.2f M events/s  (%d events, every %v, %d completed; %.1f%% of the same run without)\n",
					res.CheckpointEventsPerSec/1e6, ckEvents, ckInterval, res.CheckpointsCompleted, 100*res.CheckpointRatio)
				fmt.Fprintf(out, "recovery   %.1f ms from an injected failure to processing again (restart + restore of the latest checkpoint)\n", res.RecoveryMs)
			}
			if d != bd {
				fmt.Fprintf(out, "DIGESTS DIFFER\n")
			}
			if asJSON {
				b, _ := json.Marshal(res)
				fmt.Fprintln(out, string(b))
			}
			if d != bd {
				return fmt.Errorf("weir's digest %s differs from the baseline's %s", d, bd)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&events, "events", adclicks.DefaultN, "number of events")
	f.Int64Var(&delay, "delay", adclicks.DelayMs, "watermark delay in ms (5000: no drops; 1000: drops)")
	f.IntVar(&parallelism, "parallelism", 2, "weir job parallelism")
	f.IntVar(&splits, "splits", 0, "source splits of the generator, split by event number (0: one per subtask if --delay >= 5000, else 1; more than 1 needs --delay >= 5000)")
	f.IntVar(&runs, "runs", 3, "runs of each; the median rate is reported")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on the last line")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the first weir run to this file")
	f.IntVar(&batchSize, "batch-size", 1024, "records per batch")
	f.DurationVar(&ckInterval, "checkpoint-interval", 0, "also run with checkpoints at this interval (into a temporary directory) and measure recovery from a failure")
	f.DurationVar(&microbatch, "microbatch", 0, microbatchUsage+"; the epochs commit in memory")
	f.Float64Var(&latFraction, "latency-fraction", 0.5, "rate of the latency run, as a fraction of the measured weir rate")
	f.DurationVar(&latDuration, "latency-duration", 0, "length of a latency run paced at --latency-fraction (0: none): p50/p99 from the moment a window could fire to its result at the sink")
	f.Int64Var(&ckEvents, "checkpoint-events", 50_000_000, "events of the checkpoint comparison (long enough for several checkpoints)")
	return cmd
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// benchCheckpoints runs the workload with checkpointing (median of runs)
// and once more with a failure half way, for the recovery time.
func benchCheckpoints(ctx context.Context, res *benchResult, interval time.Duration, n int64, runs, batchSize int) error {
	run := func(opts []weir.JobOption) (float64, *weir.Job, error) {
		var ran *weir.Job
		start := time.Now()
		_, err := adclicks.RunWeir(ctx, adclicks.BenchConfig{
			N: n, DelayMs: res.DelayMs, Parallelism: res.Parallelism, Splits: res.Splits,
			Options: append([]weir.JobOption{weir.BatchSize(batchSize)}, opts...), Job: &ran,
		})
		return float64(n) / time.Since(start).Seconds(), ran, err
	}
	var with, without []float64
	var completed int64
	for r := 0; r < runs; r++ {
		rate, _, err := run(nil)
		if err != nil {
			return err
		}
		without = append(without, rate)
		dir, err := os.MkdirTemp("", "weir-bench-ck-")
		if err != nil {
			return err
		}
		rate, job, err := run([]weir.JobOption{weir.Checkpointing(interval, dir)})
		os.RemoveAll(dir)
		if err != nil {
			return err
		}
		with = append(with, rate)
		completed = job.Metrics().Checkpoints.Completed
	}
	res.CheckpointInterval = interval.String()
	res.CheckpointEventsPerSec = median(with)
	res.CheckpointRatio = res.CheckpointEventsPerSec / median(without)
	res.CheckpointsCompleted = completed
	dir, err := os.MkdirTemp("", "weir-bench-recovery-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var rec time.Duration
	_, err = adclicks.RunWeir(ctx, adclicks.BenchConfig{
		N: n, DelayMs: res.DelayMs, Parallelism: res.Parallelism, Splits: res.Splits,
		Options: []weir.JobOption{weir.BatchSize(batchSize), weir.Checkpointing(interval, dir),
			weir.Restarts(weir.RestartPolicy{MaxFailures: 1, Interval: time.Hour})},
		FailAt: n / 2, Recovery: &rec,
	})
	if err != nil {
		return err
	}
	res.RecoveryMs = float64(rec.Microseconds()) / 1e3
	return nil
}
