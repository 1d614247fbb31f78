package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/app/cepbench"
)

// cepBenchResult is the --json line of `weir bench cep`; the first three
// fields are a contract read by scripts.
type cepBenchResult struct {
	EventsPerSec        float64 `json:"events_per_sec"`
	EventsPerSecPerCore float64 `json:"events_per_sec_per_core"`
	PeakRSSBytes        int64   `json:"peak_rss_bytes"`
	Events              int64   `json:"events"`
	Keys                int     `json:"keys"`
	Patterns            int     `json:"patterns"`
	Parallelism         int     `json:"parallelism"`
	WithinMs            int64   `json:"within_ms"`
	Matches             int64   `json:"matches"`
	CPUSeconds          float64 `json:"cpu_seconds"`
	Seconds             float64 `json:"seconds"`
	Cores               int     `json:"cores"`
}

func newBenchCEP() *cobra.Command {
	c := cepbench.Default()
	var (
		asJSON     bool
		cpuprofile string
		memprofile string
		batchSize  int
	)
	cmd := &cobra.Command{
		Use:   "cep",
		Short: "Complex event processing: a 3-stage relaxed pattern with Within over 100 K keys",
		Long: `Runs the cep workload of docs/performance.md: a seeded stream of card events
over --keys keys (one event per key per second of event time at the default
density, 50 ms of disorder against a 100 ms watermark bound) through
--patterns patterns at once, each "small charge, then a large one, then a
declined one, within --within" with its own thresholds, run by one
cep.DetectAll on the keyed stream.
Prints the rate over wall time, the rate per core (events per CPU-second of
the process, generation included) and the peak RSS.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			c.Options = []weir.JobOption{weir.BatchSize(batchSize)}
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			resetPeakRSS()
			cpu0 := cpuTime()
			start := time.Now()
			r, err := cepbench.Run(cmd.Context(), c)
			if err != nil {
				return err
			}
			el := time.Since(start)
			cpu := cpuTime() - cpu0
			if memprofile != "" {
				f, err := os.Create(memprofile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
					return err
				}
			}
			res := cepBenchResult{
				EventsPerSec: float64(c.Events) / el.Seconds(), PeakRSSBytes: peakRSS(),
				Events: c.Events, Keys: c.Keys, Patterns: c.Patterns, Parallelism: c.Parallelism,
				WithinMs: c.Within.Milliseconds(), Matches: r.Matches, CPUSeconds: cpu.Seconds(), Seconds: el.Seconds(),
				Cores: runtime.GOMAXPROCS(0),
			}
			if cpu > 0 {
				res.EventsPerSecPerCore = float64(c.Events) / cpu.Seconds()
			}
			fmt.Fprintf(out, "workload   cep n=%d keys=%d patterns=%d within=%v parallelism=%d\n", c.Events, c.Keys, c.Patterns, c.Within, c.Parallelism)
			fmt.Fprintf(out, "weir       %6.2f M events/s  %6.2f M events/s per core (%.1f CPU-s in %.1f s)  peak RSS %.0f MiB  %d matches\n",
				res.EventsPerSec/1e6, res.EventsPerSecPerCore/1e6, res.CPUSeconds, res.Seconds, float64(res.PeakRSSBytes)/(1<<20), r.Matches)
			if asJSON {
				b, _ := json.Marshal(res)
				fmt.Fprintln(out, string(b))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.Int64Var(&c.Events, "events", c.Events, "number of events")
	f.IntVar(&c.Keys, "keys", c.Keys, "distinct keys")
	f.IntVar(&c.Patterns, "patterns", c.Patterns, "patterns at once (one cep.DetectAll)")
	f.IntVar(&c.Parallelism, "parallelism", c.Parallelism, "job parallelism")
	f.DurationVar(&c.Within, "within", c.Within, "the patterns' Within")
	f.Int64Var(&c.EventsPerMs, "events-per-ms", c.EventsPerMs, "event-time density: events per ms of event time over all keys")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on the last line")
	f.StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file")
	f.StringVar(&memprofile, "memprofile", "", "write an allocation profile of the run to this file")
	f.IntVar(&batchSize, "batch-size", 1024, "records per batch")
	return cmd
}
