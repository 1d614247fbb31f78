package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/internal/incremental"
)

// checkpointBenchResult is `weir bench checkpoint --json`: one object
// with every mode's checkpoints.
type checkpointBenchResult struct {
	Keys        int                        `json:"keys"`
	ValueBytes  int                        `json:"value_bytes"`
	Change      float64                    `json:"change"`
	Checkpoints []incremental.MeasureRound `json:"checkpoints"`
	// MaxWrittenRatio is, per mode, the most that a checkpoint after the
	// first wrote, as a fraction of the state it lists.
	MaxWrittenRatio map[string]float64 `json:"max_written_ratio"`
	// MeanWrittenRatio: the bytes all checkpoints after the first wrote,
	// over the state they list, per mode.
	MeanWrittenRatio map[string]float64 `json:"mean_written_ratio"`
}

func newBenchCheckpoint() *cobra.Command {
	var (
		keys, valueBytes, checkpoints int
		change                        float64
		modes, dir                    string
		budget                        int64
		asJSON                        bool
	)
	cmd := &cobra.Command{
		Use:   "checkpoint",
		Short: "Bytes a checkpoint of Pebble state writes, against the state's size",
		Long: `Writes --keys entries of --value-bytes into the Pebble backend of one
operator subtask, then takes --checkpoints checkpoints as a job does (a
barrier's snapshot, the coordinator's upload and commit), with --change of
the keys (a fraction, spread over all of them) rewritten before each but the
first. It prints, per checkpoint, the state's size (the files a restore
reads), the files it lists (with the changelog, the next base's files
uploaded so far too) and the bytes it wrote, for each of --modes: full (by key group, as
without IncrementalCheckpoints), incremental (IncrementalCheckpoints: the
new SST files) and changelog (StateChangelog: the new log segment; a
checkpoint materializes when the log passes half of the base).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = os.TempDir()
			}
			res := checkpointBenchResult{Keys: keys, ValueBytes: valueBytes, Change: change,
				MaxWrittenRatio: map[string]float64{}, MeanWrittenRatio: map[string]float64{}}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', tabwriter.AlignRight)
			if !asJSON {
				fmt.Fprintf(out, "%d keys of %d bytes, %.2f%% of them rewritten between checkpoints\n", keys, valueBytes, 100*change)
				fmt.Fprintln(tw, "mode\tcheckpoint\tchanged keys\tstate MB\tlisted MB\twritten MB\twritten/state\tlog segments\ttime\t")
			}
			for _, mode := range strings.Split(modes, ",") {
				mode = strings.TrimSpace(mode)
				var written, listed int64
				err := incremental.Measure(cmd.Context(), incremental.MeasureOptions{Dir: dir, Keys: keys, ValueBytes: valueBytes,
					Change: change, Checkpoints: checkpoints, Mode: mode, MemoryBudget: budget}, func(r incremental.MeasureRound) {
					res.Checkpoints = append(res.Checkpoints, r)
					ratio := float64(r.Written) / float64(max(r.StateBytes, 1))
					if r.Checkpoint > 1 {
						written += r.Written
						listed += r.StateBytes
						res.MaxWrittenRatio[mode] = max(res.MaxWrittenRatio[mode], ratio)
					}
					if !asJSON {
						fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.2f\t%.1f%%\t%d\t%v\t\n", mode, r.Checkpoint, r.Changed,
							float64(r.StateBytes)/1e6, float64(r.ListedBytes)/1e6, float64(r.Written)/1e6, 100*ratio, r.LogSegments, r.Duration.Round(time.Millisecond))
					}
				})
				if err != nil {
					return fmt.Errorf("%s: %w", mode, err)
				}
				if listed > 0 {
					res.MeanWrittenRatio[mode] = float64(written) / float64(listed)
				}
			}
			if asJSON {
				return json.NewEncoder(out).Encode(res)
			}
			tw.Flush()
			for _, mode := range strings.Split(modes, ",") {
				mode = strings.TrimSpace(mode)
				fmt.Fprintf(out, "%s: after the first, a checkpoint wrote at most %.1f%% of the state, %.1f%% over all\n",
					mode, 100*res.MaxWrittenRatio[mode], 100*res.MeanWrittenRatio[mode])
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&keys, "keys", 1_000_000, "keys of state")
	f.IntVar(&valueBytes, "value-bytes", 100, "bytes of each key's value")
	f.Float64Var(&change, "change", 0.01, "fraction of the keys rewritten between two checkpoints")
	f.IntVar(&checkpoints, "checkpoints", 6, "checkpoints to take, the first after all keys were written")
	f.StringVar(&modes, "modes", "full,incremental,changelog", "comma-separated: full, incremental, changelog")
	f.StringVar(&dir, "dir", "", "directory for the database and the checkpoints (default: the temporary directory; removed at the end)")
	f.Int64Var(&budget, "state-memory", 0, "Pebble memory budget in bytes (0: the default, 64 MiB)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
