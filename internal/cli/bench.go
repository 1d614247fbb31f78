package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/adclicks"
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
	DelayMs              int64   `json:"delay_ms"`
	Results              int64   `json:"results"`
	Sum                  int64   `json:"sum"`
	Dropped              int64   `json:"dropped"`
	DigestsMatch         bool    `json:"digests_match"`
	Runs                 int     `json:"runs"`
}

func newBenchAdclicks() *cobra.Command {
	var (
		events      int64
		delay       int64
		parallelism int
		runs        int
		asJSON      bool
		cpuprofile  string
		batchSize   int
	)
	cmd := &cobra.Command{
		Use:   "adclicks",
		Short: "The standard workload: 60s tumbling counts per ad, weir against a hand-written loop",
		Long: `Runs the adclicks-tumbling workload of shared/bench/WORKLOAD.md twice in this
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
			var weirRates, baseRates []float64
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
				start := time.Now()
				var err error
				d, err = adclicks.RunWeir(cmd.Context(), adclicks.BenchConfig{
					N: events, DelayMs: delay, Parallelism: parallelism,
					Options: []weir.Option{weir.BatchSize(batchSize)},
				})
				el := time.Since(start)
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
				Events: events, Parallelism: parallelism, DelayMs: delay,
				Results: d.Results, Sum: d.Sum, Dropped: d.Dropped, DigestsMatch: d == bd, Runs: runs,
			}
			res.Ratio = res.EventsPerSec / res.BaselineEventsPerSec
			fmt.Fprintf(out, "workload   adclicks-tumbling n=%d delay=%dms window=60s\n", events, delay)
			fmt.Fprintf(out, "weir       %6.2f M events/s  (parallelism %d, median of %d)  %s\n", res.EventsPerSec/1e6, parallelism, runs, d)
			fmt.Fprintf(out, "baseline   %6.2f M events/s  (hand-written single loop)     %s\n", res.BaselineEventsPerSec/1e6, bd)
			fmt.Fprintf(out, "ratio      %.3f\n", res.Ratio)
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
	f.IntVar(&runs, "runs", 3, "runs of each; the median rate is reported")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on the last line")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the first weir run to this file")
	f.IntVar(&batchSize, "batch-size", 1024, "records per batch")
	return cmd
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}
