package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir/internal/app/groupbench"
)

// newBenchGroup is `weir bench group`: issue 15's benchmark, one job as
// one process against N processes of a group-mode job, each on one core.
func newBenchGroup() *cobra.Command {
	var (
		procs, records, parts int
		runs                  int
		asJSON                bool
		worker                bool
		brokers, appID        string
		in, out               string
		commit                time.Duration
	)
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Throughput of one job as 1 process against N processes of a group (--app-id), one core each",
		Long: `Starts a kfake cluster on loopback TCP in this process, fills an input topic
(--records over --partitions), then runs the same job twice in group mode,
each run reading the whole input to its end: once as 1 process, once as
--processes processes. The processes are this binary, each with GOMAXPROCS=1
and pinned to a core with taskset where there is one. Prints the job that ran,
each run's records/s and their ratio (issue 15's target: at least 1.7 with 2
processes). The broker runs in this process, unpinned: it needs CPU too, so
the figures include its work and, on a machine with no more cores than
processes, its competition with them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if worker {
				if brokers == "" || in == "" || out == "" {
					return errors.New("--worker needs --brokers, --in and --out")
				}
				return groupbench.Worker(cmd.Context(), strings.Split(brokers, ","), appID, in, out, commit, os.Getenv(groupbench.VerboseEnv) != "")
			}
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench group: the path of this binary: %w", err)
			}
			w := cmd.ErrOrStderr()
			res, err := groupbench.Run(cmd.Context(), groupbench.Config{Processes: procs, Records: records, Partitions: parts, Runs: runs,
				CommitInterval: commit, Exe: exe, WorkerArgs: []string{"bench", "group", "--worker"},
				Log: func(format string, args ...any) { fmt.Fprintf(w, "bench group: "+format+"\n", args...) }})
			if err != nil {
				return err
			}
			o := cmd.OutOrStdout()
			if asJSON {
				return json.NewEncoder(o).Encode(res)
			}
			fmt.Fprintf(o, "job:        %s\n", res.Job)
			fmt.Fprintf(o, "input:      %d records over %d partitions; %d run(s) of each, alternating, medians shown\n", res.Records, res.Partitions, res.Runs)
			fmt.Fprintf(o, "commits:    one transaction per process every %s\n", res.CommitInterval)
			fmt.Fprintf(o, "pinning:    %s\n", res.Pinning)
			fmt.Fprintf(o, "broker:     %s\n", res.Broker)
			for _, r := range []groupbench.RunResult{res.One, res.Many} {
				fmt.Fprintf(o, "%d process(es) (cores %s): %.0f records/s (%.2f s from the first record read; %.0f records/s, %.2f s from starting the processes); %d records out; CPU: workers %.2f s, broker %.2f s; every run: %v records/s\n",
					r.Processes, strings.Join(r.Cores, ","), r.RecordsPerSec, r.Seconds, r.WallRecordsPerSec, r.WallSeconds, r.Output, r.WorkerCPUSeconds, r.BrokerCPUSeconds, r.AllRecordsPerSec)
			}
			fmt.Fprintf(o, "ratio:      %.2fx (%d processes against 1, from the first record; %.2fx from starting the processes; target >= 1.7x with 2)\n",
				res.Ratio, res.Many.Processes, res.WallRatio)
			fmt.Fprintf(o, "load:       %s before, %s after (1/5/15 min; %d CPUs)\n", res.LoadBefore, res.LoadAfter, res.CPUs)
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&procs, "processes", 2, "processes of the second run")
	f.IntVar(&records, "records", 1_000_000, "records in the input topic")
	f.IntVar(&parts, "partitions", 8, "partitions of the input topic")
	f.IntVar(&runs, "runs", 1, "runs of each kind, alternating; the figures are the medians")
	f.DurationVar(&commit, "commit-interval", 0, "the workers' commit interval (0: group mode's default, 100ms)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	f.BoolVar(&worker, "worker", false, "run as one worker process of a run (started by the benchmark)")
	f.StringVar(&brokers, "brokers", "", "worker: Kafka seed brokers")
	f.StringVar(&appID, "app-id", "", "worker: the run's app id")
	f.StringVar(&in, "in", "", "worker: input topic")
	f.StringVar(&out, "out", "", "worker: output topic")
	for _, n := range []string{"worker", "brokers", "app-id", "in", "out"} {
		f.MarkHidden(n)
	}
	return cmd
}
