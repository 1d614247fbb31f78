package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/nexmark"
)

// newNexmark is `weir nexmark gen|run`.
func newNexmark() *cobra.Command {
	cmd := group("nexmark", "Generate Nexmark events and run the Nexmark queries")
	cmd.AddCommand(newNexmarkGen(), newNexmarkRun())
	return cmd
}

// genFlags are the generator's flags, shared by gen and run.
type genFlags struct {
	events    int64
	seed      uint64
	eventRate float64
	rateLimit float64
}

func (g *genFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Int64Var(&g.events, "events", 1_000_000, "number of events")
	f.Uint64Var(&g.seed, "seed", 1, "generator seed: the same seed gives the same events")
	f.Float64Var(&g.eventRate, "event-rate", nexmark.DefaultEventRate, "events per second of event time (date_time advances by 1/rate per event)")
	f.Float64Var(&g.rateLimit, "rate", 0, "events per second of wall-clock time (0: as fast as possible)")
}

func (g *genFlags) config(splits int) nexmark.GeneratorConfig {
	return nexmark.GeneratorConfig{Events: g.events, Seed: g.seed, EventRate: g.eventRate, RateLimit: g.rateLimit, Splits: splits}
}

func newNexmarkGen() *cobra.Command {
	var (
		g      genFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "gen",
		Short: "Write generated Nexmark events as JSON lines",
		Long: `Writes --events events of the Nexmark generator (1 person, 3 auctions and 46 bids
in every 50) as JSON lines, to --output or stdout:
  {"event_type":0,"person":{...}}  {"event_type":1,"auction":{...}}  {"event_type":2,"bid":{...}}
Times are epoch milliseconds. The same seed and event rate give the same file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if g.events < 0 {
				return fmt.Errorf("--events must not be negative")
			}
			gen, err := nexmark.NewGenerator(g.config(1))
			if err != nil {
				return err
			}
			var w io.Writer = cmd.OutOrStdout()
			if output != "" && output != "-" {
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			if err := writeEvents(cmd.Context(), w, gen, g.events); err != nil {
				return err
			}
			if f, ok := w.(*os.File); ok && output != "" && output != "-" {
				return f.Close()
			}
			return nil
		},
	}
	g.add(cmd)
	cmd.Flags().StringVar(&output, "output", "", "file to write (default stdout)")
	return cmd
}

func writeEvents(ctx context.Context, w io.Writer, gen *nexmark.Generator, n int64) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var e nexmark.Event
	var line []byte
	for i := int64(0); i < n; i++ {
		if i%65536 == 0 && ctx.Err() != nil {
			return context.Cause(ctx)
		}
		gen.Event(i, &e)
		line = append(e.AppendJSON(line[:0]), '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// windowlessColumns explains the rows of the windowed queries whose
// columns (Flink's) do not name the window: rows of different windows
// may look alike.
var windowlessColumns = map[string]string{
	"q5": "each row is a window's hottest auction (hopping windows of 10 s every 2 s); Flink's q5 columns (auction, num) leave the window out, so the rows of consecutive windows may be equal",
	"q7": "each row is a window's highest bid (tumbling windows of 10 s); Flink's q7 columns leave the window out",
}

func newNexmarkRun() *cobra.Command {
	var (
		g           genFlags
		query       string
		parallelism int
		input       string
		output      string
		ckDir       string
		ckInterval  time.Duration
		sideInput   string
		state       stateFlags
		web         webFlags
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a Nexmark query on generated events or on a file written by gen",
		Long: `Runs one Nexmark query (see docs/nexmark.md) as a weir job: on --events generated
events, or on --input, a JSON-lines file written by 'weir nexmark gen'. With
--output the results are written as JSON lines (the Flink query's columns in
lower case, times in epoch milliseconds); at the end of a bounded input every
window fires. The updating queries (q4, q9, q15–q19: GROUP BY or rank
without windows) produce a changelog; their output is its upsert view once the
input ends, one row per key (q4: category; q9: auction; q15: day; q16: channel
and day; q17: auction and day; q18: auction and bidder; q19: auction and
rank_number). q12's windows are of processing time: only its per-bidder totals
are a function of the input. q13 joins the bids to the side input that the
Nexmark suite generates (keys 0..9999, value the key), or to --side-input, a
CSV file of key,value lines.
Prints a summary on stdout (stderr when the rows go to stdout).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := nexmark.Lookup(query)
			if err != nil {
				return err
			}
			if parallelism < 1 {
				return fmt.Errorf("--parallelism must be at least 1")
			}
			var src weir.Source[nexmark.Event]
			events := g.events
			if input != "" {
				if _, err := os.Stat(input); err != nil {
					return err
				}
				src = file.JSONLines[nexmark.Event]([]string{input})
				events = -1
			} else {
				src = nexmark.Source(g.config(parallelism))
			}
			summary := cmd.OutOrStdout()
			var w io.Writer = io.Discard
			switch output {
			case "":
			case "-":
				w, summary = cmd.OutOrStdout(), cmd.ErrOrStderr()
			default:
				f, err := os.Create(output)
				if err != nil {
					return err
				}
				defer f.Close()
				w = f
			}
			jl := nexmark.NewJSONLines(w)
			out := jl.Output()
			var view *nexmark.UpsertView
			if q.Updating() {
				// The query's changelog goes into its upsert view; the
				// view is what is written, once the input ends.
				view = nexmark.NewUpsertView()
				out = view.Output()
			}
			opts := []weir.JobOption{weir.Parallelism(parallelism)}
			if ckDir != "" {
				opts = append(opts, weir.Checkpointing(ckInterval, ckDir))
			}
			stateOpts, stateDone, err := state.options()
			if err != nil {
				return err
			}
			defer stateDone()
			opts = append(opts, stateOpts...)
			if web.addr != "" {
				if ckDir == "" && web.tokenFile == "" {
					return fmt.Errorf("--web-addr needs --web-token-file or --checkpoint-dir (where the token is written)")
				}
				opts = append(opts, web.options(cmd.ErrOrStderr(), ckDir, "")...)
			}
			job := weir.NewJob("nexmark-"+q.Name, opts...)
			if sideInput != "" {
				if q.Name != "q13" {
					return fmt.Errorf("--side-input is for q13, not %s", q.Name)
				}
				if _, err := os.Stat(sideInput); err != nil {
					return err
				}
				side := nexmark.SideInputStream(job, file.CSV([]string{sideInput}, nexmark.ParseSideInput))
				nexmark.Emit(nexmark.Q13(nexmark.Events(job, src), side), out)
			} else {
				q.Build(nexmark.Events(job, src), out)
			}
			if heap := job.HeapStateOperators(); state.backend == "pebble" && len(heap) > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "--state-backend pebble does not cover %s: they keep their keyed state in memory\n", strings.Join(heap, ", "))
			}
			start := time.Now()
			if err := job.Run(cmd.Context()); err != nil {
				return err
			}
			el := time.Since(start)
			rows, changes := jl.Rows(), ""
			if view != nil {
				if output == "" {
					rows, err = view.WriteTo(io.Discard)
				} else {
					bw := bufio.NewWriterSize(w, 1<<16)
					if rows, err = view.WriteTo(bw); err == nil {
						err = bw.Flush()
					}
				}
				if err != nil {
					return err
				}
				changes = fmt.Sprintf(" (upsert view of %d changes)", view.Changes())
			}
			if err := jl.Flush(); err != nil {
				return err
			}
			if f, ok := w.(*os.File); ok && output != "-" {
				if err := f.Close(); err != nil {
					return err
				}
			}
			if events < 0 {
				events = job.Metrics().Sum(func(o *weir.OperatorMetrics) int64 {
					if o.Name == "nexmark" {
						return o.RecordsOut
					}
					return 0
				})
			}
			fmt.Fprintf(summary, "%s: %d events, %d rows%s, %.2fs, %.0f events/s (parallelism %d)\n",
				q.Name, events, rows, changes, el.Seconds(), float64(events)/el.Seconds(), parallelism)
			if note := windowlessColumns[q.Name]; note != "" {
				fmt.Fprintf(summary, "  %s\n", note)
			}
			return nil
		},
	}
	g.add(cmd)
	f := cmd.Flags()
	f.StringVar(&query, "query", "q0", "query to run: "+fmt.Sprint(nexmark.QueryNames()))
	f.IntVar(&parallelism, "parallelism", 1, "job parallelism (and generator splits)")
	f.StringVar(&input, "input", "", "read events from this JSON-lines file (written by gen) instead of generating them")
	f.StringVar(&output, "output", "", "write the result rows as JSON lines to this file (- for stdout)")
	f.StringVar(&ckDir, "checkpoint-dir", "", "take checkpoints into this directory (and resume from it)")
	f.DurationVar(&ckInterval, "checkpoint-interval", 10*time.Second, "checkpoint interval with --checkpoint-dir")
	state.add(f)
	f.StringVar(&sideInput, "side-input", "", "q13's side input: a CSV file of key,value lines (default: the suite's generated 10,000 rows)")
	web.add(cmd, "control.token in --checkpoint-dir")
	return cmd
}
