package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// nexmarkBenchResult is one --json line of `weir bench nexmark`; the first
// five fields are the contract read by scripts.
type nexmarkBenchResult struct {
	Query               string  `json:"query"`
	EventsPerSec        float64 `json:"events_per_sec"`
	EventsPerSecPerCore float64 `json:"events_per_sec_per_core"`
	PeakRSSBytes        int64   `json:"peak_rss_bytes"`
	P99LatencyMs        float64 `json:"p99_latency_ms"`

	Events             int64   `json:"events"`
	Rows               int64   `json:"rows"`
	Seconds            float64 `json:"seconds"`
	CPUSeconds         float64 `json:"cpu_seconds"`
	Parallelism        int     `json:"parallelism"`
	EventRate          float64 `json:"event_rate"`
	CheckpointInterval string  `json:"checkpoint_interval,omitempty"`
	Checkpoints        int64   `json:"checkpoints"`
	LatencyRate        float64 `json:"latency_rate,omitempty"`
	LatencyEvents      int64   `json:"latency_events,omitempty"`
	LatencyRows        int64   `json:"latency_rows,omitempty"` // the rows p99/p50/max rest on
	P50LatencyMs       float64 `json:"p50_latency_ms,omitempty"`
	MaxLatencyMs       float64 `json:"max_latency_ms,omitempty"`
	// The latency run's length (--latency-duration, plus the warm-up of a
	// windowed query) and its rows fired by the end of the input, whose
	// figures are reported apart (see latencyWriter).
	LatencySeconds  float64 `json:"latency_seconds,omitempty"`
	EndRows         int64   `json:"end_rows,omitempty"`
	EndP99LatencyMs float64 `json:"end_p99_latency_ms,omitempty"`
	EndMaxLatencyMs float64 `json:"end_max_latency_ms,omitempty"`
	// LatencyRunSeconds is the latency run's wall time: longer than
	// latency_seconds when the job could not keep up with the paced rate,
	// and its latencies then are mostly the queue it fell behind by.
	LatencyRunSeconds float64 `json:"latency_run_seconds,omitempty"`
	Microbatch        string  `json:"microbatch,omitempty"` // --microbatch; "" is continuous

	// The maximum the latency run is paced against (latency_rate =
	// --latency-fraction × pacing_max_events_per_sec) and the run it comes
	// from: "throughput" (the run above) or "windows" (a windowed query's
	// run of its own whose event time spans two window extents + the
	// watermark delay, so that windows fire during it; see pacingRun). A
	// windowed query runs both, and the maximum is the lower of the two
	// (pacing_run_events_per_sec is the windows run's). Absent with
	// --latency-rate.
	PacingMaxEventsPerSec float64 `json:"pacing_max_events_per_sec,omitempty"`
	PacingFrom            string  `json:"pacing_from,omitempty"`
	PacingRunEventsPerSec float64 `json:"pacing_run_events_per_sec,omitempty"`
	PacingEvents          int64   `json:"pacing_events,omitempty"`
	PacingEventRate       float64 `json:"pacing_event_rate,omitempty"`
	PacingEventTimeSecs   float64 `json:"pacing_event_time_seconds,omitempty"`
	PacingSeconds         float64 `json:"pacing_seconds,omitempty"`
	PacingCPUSeconds      float64 `json:"pacing_cpu_seconds,omitempty"`
	PacingRows            int64   `json:"pacing_rows,omitempty"`
	// PacingWindowRows are the pacing run's rows fired by the watermark
	// before the end of its input (its windows that closed during it).
	PacingWindowRows int64 `json:"pacing_window_rows,omitempty"`
	// the throughput run's operators' keyed state
	// (nexmark_bench_state.go)
	stateReport
}

type nexmarkBenchOpts struct {
	queries         []string
	events          int64
	eventRate       float64
	parallelism     int
	fraction        float64
	latencyRate     float64 // > 0: the latency run's rate, instead of fraction × the maximum
	pacingEvents    int64   // cap on a windowed query's pacing run; 0: defaultPacingEvents × events
	latencyDuration time.Duration
	warmup          time.Duration // < 0: the query's Extent + WatermarkDelay
	ckInterval      time.Duration
	cpuprofile      string
	latencyProfile  string // DIR: CPU profile and runtime/trace of each latency run
	microbatch      time.Duration
	state           stateFlags
}

func newBenchNexmark() *cobra.Command {
	var (
		o       nexmarkBenchOpts
		queries string
		asJSON  bool
		withSQL bool
		// miniBatch > 0 adds a run of the SQL plan with Flink's
		// table.exec.mini-batch options, that size
		miniBatch int
		// distinctSplit adds runs of the SQL plans with Flink's
		// table.optimizer.distinct-agg.split.enabled
		distinctSplit bool
	)
	cmd := &cobra.Command{
		Use:   "nexmark",
		Short: "Nexmark queries: events/s, events/s per core, peak memory, p99 latency",
		Long: `For each query, two runs in this process (see docs/nexmark.md):

1. throughput: --events generated events (event time at --event-rate, the
   Flink suite's 10M/s) as fast as possible into a discarding sink; events/s
   is events over wall time, events/s per core is events over the process's
   CPU time (getrusage: generator, job and sink included); peak memory is
   the process's peak RSS during the run (VmHWM, reset before it).
2. latency: the generator paced at --latency-fraction of the maximum
   (pacing_max_events_per_sec): for a query without windows the rate just
   measured; for a windowed query the events/s of a run of its own, as fast
   as it goes, whose event time spans two window extents + the 4 s
   watermark delay (generated at --latency-fraction of the rate just
   measured, at most --pacing-events events), so that the maximum includes
   firing windows. Its event time moves with the wall clock, for
   --latency-duration. A row's latency is its sink time minus the moment it
   could be emitted: the scheduled generation time of its input event, or,
   for a window, of the first event that moves the watermark past it
   (window end + 4 s); the scheduled, not the actual, time, so a source
   that falls behind counts. A windowed query's run is longer by
   --latency-warmup (default: its window size or session gap + 4 s), so
   that windows close by the watermark during the run. p99_latency_ms is
   over those rows (latency_rows of them); the rows of the windows still
   open when the input ends, all fired by its final watermark, are
   reported apart (end_rows, end_p99_latency_ms), measured from the
   scheduled time of the last event. If no window closed during the run,
   p99_latency_ms is over the end-of-input rows.

Checkpoints are taken every --checkpoint-interval (0: off) into a
temporary directory, as in the published figures.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			o.queries = strings.Split(queries, ",")
			for _, q := range o.queries {
				if _, err := nexmark.Lookup(q); err != nil {
					return err
				}
			}
			if err := checkMicrobatch(o.microbatch); err != nil {
				return err
			}
			if !cmd.Flags().Changed("latency-warmup") {
				o.warmup = -1
			}
			if o.parallelism < 1 || o.events < 1 || o.fraction <= 0 || o.fraction > 1 {
				return fmt.Errorf("--parallelism and --events must be at least 1, --latency-fraction in (0, 1]")
			}
			if !asJSON {
				fmt.Fprintf(out, "nexmark  %d events, event time %.0f/s, parallelism %d, checkpoints every %v, latency at %.0f%% of max for %v, GOMAXPROCS %d\n",
					o.events, o.eventRate, o.parallelism, o.ckInterval, 100*o.fraction, o.latencyDuration, runtime.GOMAXPROCS(0))
				fmt.Fprintf(out, "%-5s %12s %14s %10s %10s %12s %12s %12s\n", "query", "events/s", "per core", "peak RSS", "p99 ms", "rows", "lat. rows", "end p99 ms")
			}
			for _, q := range o.queries {
				res, err := benchNexmarkQuery(cmd.Context(), q, o)
				if err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
				if asJSON {
					b, _ := json.Marshal(res)
					fmt.Fprintln(out, string(b))
				} else {
					// without a latency run its columns are "-", not 0.0
					p99, latRows, endP99 := "-", "-", "-"
					if o.latencyDuration > 0 {
						p99, latRows, endP99 = fmt.Sprintf("%.1f", res.P99LatencyMs), fmt.Sprint(res.LatencyRows), fmt.Sprintf("%.1f", res.EndP99LatencyMs)
					}
					fmt.Fprintf(out, "%-5s %10.0f K %12.0f K %7.0f MiB %10s %12d %12s %12s\n", res.Query, res.EventsPerSec/1e3,
						res.EventsPerSecPerCore/1e3, float64(res.PeakRSSBytes)/(1<<20), p99, res.Rows, latRows, endP99)
					fmt.Fprintf(out, "      %s\n", benchRunsLine(res))
				}
				if withSQL {
					splits := []bool{false}
					if distinctSplit {
						splits = append(splits, true)
					}
					for _, split := range splits {
						what := map[bool]string{false: "sql", true: "sql, distinct split"}[split]
						if err := benchNexmarkSQLLine(cmd.Context(), out, q, o, res, asJSON, 0, split); err != nil {
							return fmt.Errorf("%s (%s): %w", q, what, err)
						}
						if miniBatch > 0 {
							if err := benchNexmarkSQLLine(cmd.Context(), out, q, o, res, asJSON, miniBatch, split); err != nil {
								return fmt.Errorf("%s (%s, mini-batch): %w", q, what, err)
							}
						}
					}
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&queries, "queries", strings.Join(nexmark.QueryNames(), ","), "comma-separated queries")
	f.BoolVar(&asJSON, "json", false, "one JSON object per query per line")
	f.BoolVar(&withSQL, "sql", false, "also run each query's Flink SQL (weir sql's plan, throughput only) and print it beside the hand-written query")
	f.IntVar(&miniBatch, "mini-batch", 0, "with --sql: also run the SQL plan with 'table.exec.mini-batch.enabled' and this 'table.exec.mini-batch.size' (updating GROUP BY aggregations fold each batch's rows per key), printed as QUERY/sql-mb")
	f.BoolVar(&distinctSplit, "distinct-split", false, "with --sql: also run the SQL plans with 'table.optimizer.distinct-agg.split.enabled' (a DISTINCT aggregation becomes a partial one per bucket of the distinct values and a final one), printed as QUERY/sql-ds and QUERY/sql-mb-ds")
	f.Int64Var(&o.events, "events", 10_000_000, "events of the throughput run")
	f.Float64Var(&o.eventRate, "event-rate", nexmark.DefaultEventRate, "event-time rate of the throughput run (events per second of date_time)")
	f.IntVar(&o.parallelism, "parallelism", 2, "job parallelism (and generator splits)")
	o.state.add(f)
	f.Float64Var(&o.fraction, "latency-fraction", 0.8, "rate of the latency run, as a fraction of the measured maximum")
	f.DurationVar(&o.latencyDuration, "latency-duration", 15*time.Second, "length of the latency run (0: skip it)")
	f.Float64Var(&o.latencyRate, "latency-rate", 0, "pace the latency run at this many events/s instead of --latency-fraction of the measured maximum (for comparisons at equal load)")
	f.Int64Var(&o.pacingEvents, "pacing-events", 0, "at most this many events in a windowed query's pacing run (the run its latency rate comes from; its event rate is lowered so that its event time still spans two windows + the watermark delay); 0: 25 × --events")
	f.DurationVar(&o.warmup, "latency-warmup", 0, "added to a windowed query's latency run so that windows opened at its start close during it (default: the query's window size or session gap + the 4 s watermark delay)")
	f.DurationVar(&o.ckInterval, "checkpoint-interval", 2*time.Second, "checkpoint interval (0: no checkpoints)")
	f.DurationVar(&o.microbatch, "microbatch", 0, microbatchUsage+"; with checkpoints, each epoch's end is one (the interval is not used)")
	f.StringVar(&o.cpuprofile, "cpuprofile", "", "write a CPU profile of each throughput run to DIR/QUERY.prof (and DIR/QUERY-sql.prof with --sql)")
	f.StringVar(&o.latencyProfile, "latency-profile", "", "write a CPU profile and an execution trace (go tool trace) of each latency run to DIR/QUERY-latency.prof and DIR/QUERY-latency.trace, and its allocations to DIR/QUERY-latency.allocs (cumulative: use -base DIR/QUERY-latency-start.allocs)")
	return cmd
}

// benchRunsLine says what a query's runs processed and how long they
// took: the latency runs process far more events than --events, and a
// latency run that fell behind its paced schedule measured a queue.
func benchRunsLine(res nexmarkBenchResult) string {
	line := fmt.Sprintf("runs: throughput %d events in %.1f s", res.Events, res.Seconds)
	if res.PacingEvents > 0 {
		line += fmt.Sprintf("; pacing %d events in %.1f s", res.PacingEvents, res.PacingSeconds)
	}
	if res.LatencyEvents == 0 {
		return line
	}
	line += fmt.Sprintf("; latency %d events at %.0f K/s in %.1f s (schedule %.1f s)",
		res.LatencyEvents, res.LatencyRate/1e3, res.LatencyRunSeconds, res.LatencySeconds)
	if behind := res.LatencyRunSeconds - res.LatencySeconds; behind > 0.1*res.LatencySeconds && behind > 0.5 {
		line += fmt.Sprintf(": %.1f s behind, the job did not keep up with the paced rate and its p99 is mostly that queue (try a lower --latency-fraction)", behind)
	}
	return line
}

// freshHeap collects the garbage of the runs before and returns the freed
// memory to the operating system, so that each measured run starts as a
// new process would.
func freshHeap() {
	runtime.GC()
	debug.FreeOSMemory()
}

func benchNexmarkQuery(ctx context.Context, name string, o nexmarkBenchOpts) (nexmarkBenchResult, error) {
	q, _ := nexmark.Lookup(name)
	res := nexmarkBenchResult{Query: name, Events: o.events, Parallelism: o.parallelism, EventRate: o.eventRate}
	if o.ckInterval > 0 {
		res.CheckpointInterval = o.ckInterval.String()
	}
	if o.microbatch > 0 {
		res.Microbatch = o.microbatch.String()
	}

	// Throughput.
	freshHeap()
	resetPeakRSS()
	cnt := &rowCounter{}
	// Seed 0, the SQL 'nexmark' connector's, so that the hand-written
	// query and its SQL plan (--sql) read the same events.
	src := nexmark.Source(nexmark.GeneratorConfig{Events: o.events, Seed: 0, EventRate: o.eventRate, Splits: o.parallelism})
	var stopProfile func()
	if o.cpuprofile != "" {
		if err := os.MkdirAll(o.cpuprofile, 0o755); err != nil {
			return res, err
		}
		f, err := os.Create(filepath.Join(o.cpuprofile, name+".prof"))
		if err != nil {
			return res, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return res, err
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}
	cpu0 := cpuTime()
	start := time.Now()
	job, err := runBenchJob(ctx, q, src, cnt.output(), o)
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	if stopProfile != nil {
		stopProfile()
	}
	if err != nil {
		return res, err
	}
	res.Rows = cnt.total()
	res.Seconds = el.Seconds()
	res.CPUSeconds = cpu.Seconds()
	res.EventsPerSec = float64(o.events) / el.Seconds()
	res.EventsPerSecPerCore = float64(o.events) / cpu.Seconds()
	res.PeakRSSBytes = peakRSS()
	res.Checkpoints = job.Metrics().Checkpoints.Completed
	res.stateReport = stateReportOf(job.Metrics())

	// Latency, at a fraction of that rate, with event time = wall time.
	if o.latencyDuration <= 0 {
		return res, nil
	}
	// pacingMax collects the heap before its run, freshHeap before the
	// latency run.
	rate := o.latencyRate
	if rate <= 0 {
		if err := pacingMax(ctx, q, o, &res); err != nil {
			return res, err
		}
		rate = o.fraction * res.PacingMaxEventsPerSec
	}
	d := o.latencyDuration
	if q.Windowed {
		if o.warmup < 0 {
			d += q.Extent + nexmark.WatermarkDelay
		} else {
			d += o.warmup
		}
	}
	n := int64(rate * d.Seconds())
	// The latency run starts from a collected heap too: otherwise the
	// pacing run's garbage keeps the heap large until the latency run's
	// first collection, and the window tables of its warm-up come from
	// fresh pages meanwhile, whose first writes make table doublings many
	// times slower.
	freshHeap()
	lsrc := nexmark.Source(nexmark.GeneratorConfig{Events: n, Seed: 2, EventRate: rate, RateLimit: rate, Splits: o.parallelism})
	g := lsrc.Generator()
	lat := &latencyRecorder{src: lsrc, base: g.Config().BaseTime, last: g.Timestamp(n - 1)}
	stop := func() {}
	if o.latencyProfile != "" {
		if stop, err = startLatencyProfile(o.latencyProfile, name); err != nil {
			return res, err
		}
	}
	lstart := time.Now()
	_, err = runBenchJob(ctx, q, lsrc, lat.output(), o)
	res.LatencyRunSeconds = time.Since(lstart).Seconds()
	stop()
	if err != nil {
		return res, err
	}
	h, end := lat.merged()
	res.LatencyRate, res.LatencyEvents, res.LatencySeconds = rate, n, d.Seconds()
	res.EndRows = end.count
	if end.count > 0 {
		res.EndP99LatencyMs = end.quantile(0.99) / 1e3
		res.EndMaxLatencyMs = float64(end.max) / 1e3
	}
	if h.count == 0 {
		h = end // no window closed during the run: the end is all there is
	}
	res.LatencyRows = h.count
	if h.count > 0 {
		res.P99LatencyMs = h.quantile(0.99) / 1e3
		res.P50LatencyMs = h.quantile(0.50) / 1e3
		res.MaxLatencyMs = float64(h.max) / 1e3
	}
	return res, nil
}

func runBenchJob(ctx context.Context, q *nexmark.Query, src weir.Source[nexmark.Event], out nexmark.Output, o nexmarkBenchOpts) (*weir.Job, error) {
	opts := []weir.JobOption{weir.Parallelism(o.parallelism)}
	if o.ckInterval > 0 {
		dir, err := os.MkdirTemp("", "weir-nexmark-ck-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		opts = append(opts, weir.Checkpointing(o.ckInterval, dir))
	}
	if o.microbatch > 0 {
		opts = append(opts, weir.Microbatch(o.microbatch))
	}
	stateOpts, stateDone, err := o.state.options()
	if err != nil {
		return nil, err
	}
	defer stateDone()
	opts = append(opts, stateOpts...)
	job := weir.NewJob("bench-nexmark-"+q.Name, opts...)
	q.Build(nexmark.Events(job, src), out)
	return job, job.Run(ctx)
}

// rowCounter is a discarding sink (Flink's blackhole) that counts rows.
type rowCounter struct {
	mu     sync.Mutex
	counts []*int64
}

func (c *rowCounter) output() nexmark.Output {
	return func(int) (nexmark.RowWriter, error) {
		n := new(int64)
		c.mu.Lock()
		c.counts = append(c.counts, n)
		c.mu.Unlock()
		return countWriter{n}, nil
	}
}

func (c *rowCounter) total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t int64
	for _, n := range c.counts {
		t += *n
	}
	return t
}

type countWriter struct{ n *int64 }

func (w countWriter) Write(nexmark.Row) error { *w.n++; return nil }
func (w countWriter) Close() error            { return nil }

// latencyRecorder records each row's latency in histograms per sink
// subtask.
type latencyRecorder struct {
	src        *nexmark.EventSource
	base, last int64 // event time of event 0 and of the last event
	mu         sync.Mutex
	hists      []*histogram // steady state and end of input, per subtask
	now        func() int64 // unix µs; nil: the wall clock
}

func (l *latencyRecorder) output() nexmark.Output {
	return func(int) (nexmark.RowWriter, error) {
		h, end := &histogram{}, &histogram{}
		l.mu.Lock()
		l.hists = append(l.hists, h, end)
		l.mu.Unlock()
		return &latencyWriter{l: l, h: h, end: end}, nil
	}
}

// merged returns the histograms of the rows that could be emitted during
// the run and of those only the end of the input could fire.
func (l *latencyRecorder) merged() (steady, end *histogram) {
	l.mu.Lock()
	defer l.mu.Unlock()
	steady, end = &histogram{}, &histogram{}
	for i, h := range l.hists {
		if i%2 == 0 {
			steady.merge(h)
		} else {
			end.merge(h)
		}
	}
	return steady, end
}

// latencyWriter measures each row from the moment it could be emitted.
//
// A row whose Ready is within the input's event time could be emitted
// during the run: a record's own, or a window the watermark passed. A
// window still open when the input ends (Ready after the last event) fires
// only at the final watermark, together with every other open window: its
// row could be emitted when the input ended, the scheduled time of the
// last event, and is counted there, but in a histogram of its own. That
// burst is a property of a bounded input (a drain), not of a stream in
// steady state, and a short run with 10 s windows would otherwise be made
// of nothing else: before the split, all of q8's and q11's rows and most of
// q5's were end-of-input rows.
type latencyWriter struct {
	l       *latencyRecorder
	h, end  *histogram
	started int64 // unix µs of the source's start
	// now is the clock at the start of the current batch (StartBatch):
	// its rows reached the sink together.
	now    int64
	logged bool // a slow row of this batch was logged
}

// StartBatch implements nexmark.BatchStarter: the rows that follow reached
// the sink now.
func (w *latencyWriter) StartBatch() {
	w.now, w.logged = w.clock(), false
}

func (w *latencyWriter) clock() int64 {
	if w.l.now != nil {
		return w.l.now()
	}
	return time.Now().UnixMicro()
}

func (w *latencyWriter) Write(r nexmark.Row) error {
	if !nexmark.Adds(r) {
		// An updating query's retraction comes with the row that
		// replaces it: the latency is the new row's.
		return nil
	}
	if w.started == 0 {
		w.started = w.l.src.Started().UnixMicro()
	}
	// Event time = base + wall time since the start (the rate and the
	// event rate are equal): the row could be emitted at the scheduled
	// time of the event at Ready, or at the end of the input, whichever
	// comes first (the end of input fires every window).
	ready, h := r.Ready(), w.h
	if ready > w.l.last {
		ready, h = w.l.last, w.end
	}
	due := w.started + (ready-w.l.base)*1000
	now := w.now
	if now == 0 {
		now = w.clock() // a writer not told of batches
	}
	h.add(max(now-due, 0))
	if now-due >= slowRowMicros && !w.logged && trace.IsEnabled() {
		// With --latency-profile: the trace marks the first slow row of
		// each batch at its sink time (its due time is that minus the
		// latency), to line it up with the window firings and checkpoints
		// before it. Once a batch: a log per row would be most of a traced
		// firing's time.
		w.logged = w.now != 0
		trace.Log(context.Background(), "slow-row", strconv.FormatInt(now-due, 10)+" µs, ready "+strconv.FormatInt(r.Ready(), 10))
	}
	return nil
}

// slowRowMicros is the latency from which a traced latency run logs a row.
const slowRowMicros = 20_000

func (w *latencyWriter) Close() error { return nil }

// histogram is a log-linear histogram of µs values: exact below 1024,
// then 512 buckets per power of two (0.2% resolution).
type histogram struct {
	counts [64 * 512]int64
	count  int64
	max    int64
}

func bucketOf(v int64) int {
	if v < 1024 {
		return int(v)
	}
	e := bits.Len64(uint64(v)) - 10 // v >> e in [512, 1024)
	return 1024 + (e-1)*512 + int(v>>e) - 512
}

func bucketLow(b int) float64 {
	if b < 1024 {
		return float64(b)
	}
	e := (b-1024)/512 + 1
	return float64(int64((b-1024)%512+512) << e)
}

func (h *histogram) add(v int64) {
	h.counts[bucketOf(v)]++
	h.count++
	h.max = max(h.max, v)
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.count += o.count
	h.max = max(h.max, o.max)
}

// quantile is the lower bound of the bucket holding the q-quantile, µs.
func (h *histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := int64(math.Ceil(q * float64(h.count)))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return bucketLow(i)
		}
	}
	return float64(h.max)
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resetPeakRSS resets the kernel's peak RSS of the process (Linux ≥ 4.0:
// writing 5 to clear_refs), so that each query's peak is its own.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS is VmHWM from /proc/self/status, else getrusage's maxrss.
func peakRSS() int64 {
	if f, err := os.Open("/proc/self/status"); err == nil {
		defer f.Close()
		if v, ok := statusField(f, "VmHWM:"); ok {
			return v
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		return ru.Maxrss * 1024
	}
	return 0
}

func statusField(r io.Reader, key string) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(key)) {
			continue
		}
		fs := strings.Fields(string(line[len(key):]))
		if len(fs) < 1 {
			return 0, false
		}
		v, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, false
		}
		if len(fs) > 1 && strings.EqualFold(fs[1], "kB") {
			v *= 1024
		}
		return v, true
	}
	return 0, false
}

// startLatencyProfile starts a CPU profile and an execution trace of a
// latency run, written to dir/QUERY-latency.prof and .trace; the trace
// shows, goroutine by goroutine, where a window's firing and the records
// behind it spend their wall time.
func startLatencyProfile(dir, name string) (stop func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	pf, err := os.Create(filepath.Join(dir, name+"-latency.prof"))
	if err != nil {
		return nil, err
	}
	tf, err := os.Create(filepath.Join(dir, name+"-latency.trace"))
	if err != nil {
		pf.Close()
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		tf.Close()
		return nil, err
	}
	if err := trace.Start(tf); err != nil {
		pprof.StopCPUProfile()
		pf.Close()
		tf.Close()
		return nil, err
	}
	// The allocation profile is cumulative over the process: the run's
	// own allocations are QUERY-latency.allocs with -base
	// QUERY-latency-start.allocs.
	writeAllocs := func(file string) {
		if f, err := os.Create(filepath.Join(dir, file)); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	writeAllocs(name + "-latency-start.allocs")
	return func() {
		trace.Stop()
		pprof.StopCPUProfile()
		tf.Close()
		pf.Close()
		writeAllocs(name + "-latency.allocs")
	}, nil
}
