package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/app/adclicks"
	"github.com/weirstream/weir/internal/checkpoint"
	"github.com/weirstream/weir/internal/engine"
)

func newDemoAdclicks() *cobra.Command {
	c := adclicks.DefaultDemo()
	var (
		parallelism int
		metricsAddr string
		quiet       bool
		windows     bool
		outOfOrder  time.Duration
		lateness    time.Duration
		policy      string
		ckDir       string
		ckInterval  time.Duration
		output      string
		controlAddr string
		spDir       string
		dataDir     string
		source      string
		failpoint   string
		failAfter   int64
		allowDup    bool
		restoreFrom string
		webFlags    webFlags
		microbatch  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "adclicks",
		Short: "Count clicks per ad per minute of event time, as windows fire",
		Long: `The lesson's ad-click aggregator. A generated click stream (deterministic for a
seed) with ordinary disorder of a few seconds and a share of clicks that arrive
minutes late is keyed by ad and counted in one-minute event-time windows under
a bounded-out-of-orderness watermark. Results print as windows fire; clicks that
arrive after their window fired are dropped and counted.

By default the clicks go through the embedded log in --data-dir: a producer
writes them to topic "clicks" (resuming where the topic ends, and writing
nothing if it already holds them), the job reads that topic and writes its
results to topic "click-counts" through the exactly-once log sink (and to
files with --output). --source generator reads the generator in memory
instead, without the log.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, demoOpts{
				parallelism: parallelism, metricsAddr: metricsAddr, quiet: quiet, windows: windows, outOfOrder: outOfOrder,
				lateness: lateness, policy: policy, latenessSet: cmd.Flags().Changed("allowed-lateness"),
				ckDir: ckDir, ckInterval: ckInterval, output: output, controlAddr: controlAddr, savepointDir: spDir,
				dataDir: dataDir, source: source, failpoint: failpoint, failAfter: failAfter,
				allowDup: allowDup, restoreFrom: restoreFrom, web: webFlags, microbatch: microbatch,
			})
		},
	}
	f := cmd.Flags()
	f.Int64Var(&c.Events, "events", c.Events, "number of clicks (the demo is bounded)")
	f.Float64Var(&c.Rate, "rate", 0, "clicks per second (0: as fast as possible)")
	f.IntVar(&parallelism, "parallelism", 2, "job parallelism")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the click generator: the same seed gives the same results")
	f.IntVar(&c.Ads, "ads", c.Ads, "number of distinct ads")
	f.DurationVar(&outOfOrder, "out-of-orderness", 5*time.Second, "watermark bound: how late a click may be and still count on time")
	f.DurationVar(&lateness, "allowed-lateness", 0, "keep windows this long after they fired: later clicks correct the result (default 30m with --late-policy correct)")
	f.DurationVar(&microbatch, "microbatch", 0, microbatchUsage)
	f.StringVar(&ckDir, "checkpoint-dir", "", "take checkpoints into this directory; started again with the same flags, the demo resumes from the latest one")
	f.DurationVar(&ckInterval, "checkpoint-interval", time.Second, "time between checkpoints (with --checkpoint-dir)")
	f.StringVar(&output, "output", "", "also write results to this directory through the exactly-once file sink (part-* files; in-progress ones start with a dot)")
	f.StringVar(&restoreFrom, "restore-from", "", "with --checkpoint-dir: start from this savepoint or checkpoint directory instead of the latest checkpoint (Flink's --fromSavepoint)")
	f.BoolVar(&allowDup, "allow-duplicates", false, "with --checkpoint-dir: resume from a checkpoint older than output already committed (its newer checkpoints are damaged), committing that output a second time; without it the demo refuses to start in that case")
	f.StringVar(&controlAddr, "control-addr", "", "serve the control endpoint, which the weir savepoint command talks to, at this address (loopback unless a host is given; needs --checkpoint-dir, where the default is a free loopback port)")
	f.StringVar(&spDir, "savepoint-dir", "", "savepoints asked for through the control endpoint go under this directory (default: CHECKPOINT_DIR/savepoints)")
	f.StringVar(&policy, "late-policy", "drop", "clicks later than the allowed lateness: drop (count them), side-output (print them); correct: like drop, with corrections for clicks within the allowed lateness")
	f.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics at this address (loopback unless a host is given)")
	webFlags.add(cmd, "CHECKPOINT_DIR/control.token, else DATA_DIR/web.token")
	f.BoolVar(&quiet, "quiet", false, "print the true-up and the summary only")
	f.BoolVar(&windows, "windows", false, "print every per-ad result (and correction) as its window fires, not only the top windows at the end")
	f.StringVar(&dataDir, "data-dir", defaultDataDir, "directory of the embedded log (topics clicks and click-counts)")
	f.StringVar(&source, "source", "log", "log: a producer writes the clicks to topic clicks and the job reads them from there and writes results to topic click-counts; generator: the job reads the generator in memory (no log)")
	// For the crash test: the process kills itself inside the checkpoint
	// protocol.
	f.StringVar(&failpoint, "failpoint", "", "kill this process with SIGKILL at this checkpoint stage (state-file, files-written, complete)")
	f.Int64Var(&failAfter, "failpoint-checkpoint", 2, "... of the first checkpoint with at least this id")
	f.MarkHidden("failpoint")
	f.MarkHidden("failpoint-checkpoint")
	return cmd
}

type demoOpts struct {
	parallelism int
	metricsAddr string
	quiet       bool
	windows     bool // every result as it fires
	outOfOrder  time.Duration
	lateness    time.Duration
	latenessSet bool
	policy      string
	ckDir       string
	ckInterval  time.Duration
	output      string
	controlAddr string
	dataDir     string
	source      string
	failpoint   string
	failAfter   int64

	// savepointDir confines the control endpoint's savepoints.
	savepointDir string
	allowDup     bool
	restoreFrom  string // a savepoint or checkpoint to start from (RestoreFrom)
	web          webFlags
	microbatch   time.Duration
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, c adclicks.DemoConfig, o demoOpts) error {
	if c.Events < 0 || c.Ads < 1 {
		return fmt.Errorf("--events must be >= 0 and --ads >= 1")
	}
	// The command refuses negative flags (validate.go); callers of runDemo
	// get the same answer.
	switch {
	case o.outOfOrder < 0:
		return fmt.Errorf("--out-of-orderness %v: must not be negative (the watermark would never advance)", o.outOfOrder)
	case o.lateness < 0:
		return fmt.Errorf("--allowed-lateness %v: must not be negative", o.lateness)
	case c.Rate < 0:
		return fmt.Errorf("--rate %v: must not be negative", c.Rate)
	case o.parallelism < 1:
		return fmt.Errorf("--parallelism %d: want at least 1", o.parallelism)
	}
	switch o.policy {
	case "drop", "side-output":
	case "correct":
		if !o.latenessSet {
			o.lateness = 30 * time.Minute
		}
	default:
		return fmt.Errorf("--late-policy %q: want drop, side-output or correct", o.policy)
	}
	if !o.quiet {
		// What the demo does, at once: the log's producer and the job
		// take a while before the first line of results.
		fmt.Fprintf(stdout, "counting %d clicks per ad per minute of event time (watermark bound %v); the top windows, a true-up against a batch recount and a summary follow", c.Events, o.outOfOrder)
		if !o.windows {
			fmt.Fprint(stdout, " (--windows prints every result as it fires)")
		}
		fmt.Fprintln(stdout)
	}
	var dl *demoLog
	switch o.source {
	case "generator":
	case "log":
		var err error
		if dl, err = prepareDemoLog(stderr, c, o); err != nil {
			return err
		}
	default:
		return fmt.Errorf("--source %q: want log or generator", o.source)
	}
	opts := []weir.JobOption{weir.Parallelism(o.parallelism)}
	if err := checkMicrobatch(o.microbatch); err != nil {
		return err
	}
	if o.microbatch > 0 {
		opts = append(opts, weir.Microbatch(o.microbatch))
	}
	if o.ckDir != "" {
		opts = append(opts, weir.Checkpointing(o.ckInterval, o.ckDir), weir.Logger(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		if o.controlAddr == "" {
			o.controlAddr = "127.0.0.1:0"
		}
		if o.allowDup {
			opts = append(opts, weir.AllowDuplicateOutput())
		}
		if o.restoreFrom != "" {
			opts = append(opts, weir.RestoreFrom(o.restoreFrom))
		}
	} else if o.restoreFrom != "" {
		return fmt.Errorf("--restore-from needs --checkpoint-dir")
	}
	if o.controlAddr != "" {
		opts = append(opts, weir.ControlAddr(o.controlAddr))
	}
	if o.savepointDir != "" {
		opts = append(opts, weir.SavepointDir(o.savepointDir))
	}
	if o.metricsAddr != "" {
		opts = append(opts, weir.MetricsAddr(o.metricsAddr))
	}
	opts = append(opts, o.web.options(stderr, o.ckDir, o.dataDir)...)
	if o.failpoint != "" {
		opts = append(opts, engine.CheckpointHook(func(stage engine.CheckpointStage, id int64) {
			if string(stage) == o.failpoint && id >= o.failAfter {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}).(weir.JobOption))
	}
	job := weir.NewJob("demo-adclicks", opts...)
	var src weir.Source[adclicks.DemoClick] = adclicks.DemoSource(c)
	if dl != nil {
		src = dl.source()
	}
	clicks := weir.FromSource(job, "clicks", src,
		weir.BoundedOutOfOrderness(o.outOfOrder, func(c adclicks.DemoClick) time.Time { return c.TS }))
	perAd := weir.KeyBy(clicks, func(c adclicks.DemoClick) string { return c.AdID })
	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute), weir.AllowedLateness(o.lateness)),
		weir.Count[adclicks.DemoClick](), weir.Name("count-per-minute"))

	progress := newProgress(stderr, job)
	var mu sync.Mutex // the two printing sinks share stdout and the tallies
	final := map[wk]int64{}
	var results, corrections, lateShown int64
	// One printing subtask, so that lines never interleave.
	if o.output != "" {
		weir.To(weir.Map(counts, toRow), file.ExactlyOnce[resultRow](o.output), weir.UID("output"))
	}
	if dl != nil {
		weir.To(counts, wlog.Sink(o.dataDir, resultsTopic, "demo-adclicks", resultRecord), weir.UID("click-counts"), weir.Name("click-counts"))
	}
	weir.To(counts, weir.SinkFunc[weir.WindowResult[string, int64]](func(_ context.Context, rs []weir.WindowResult[string, int64]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			k := wk{r.Key, r.Start.UnixMilli()}
			old := final[k]
			final[k] = r.Value
			if r.Kind == weir.Insert {
				results++
			} else {
				corrections++
			}
			if o.quiet || !o.windows {
				continue
			}
			progress.clear()
			if r.Kind == weir.Insert {
				fmt.Fprintf(stdout, "window %s–%s  %-6s %7d clicks\n", r.Start.Format("2006-01-02 15:04"), r.End.Format("15:04"), r.Key, r.Value)
			} else {
				fmt.Fprintf(stdout, "correction %s–%s  %-6s %7d -> %d clicks (late click)\n", r.Start.Format("2006-01-02 15:04"), r.End.Format("15:04"), r.Key, old, r.Value)
			}
		}
		return nil
	}), weir.Parallelism(1), weir.Name("print"))
	if o.policy == "side-output" {
		weir.To(weir.LateEvents[adclicks.DemoClick](counts), weir.SinkFunc[weir.LateEvent[string, adclicks.DemoClick]](func(_ context.Context, ls []weir.LateEvent[string, adclicks.DemoClick]) error {
			mu.Lock()
			defer mu.Unlock()
			for _, l := range ls {
				lateShown++
				if o.quiet {
					continue
				}
				progress.clear()
				fmt.Fprintf(stdout, "late click %-6s at %s missed %s–%s (watermark %s)\n", l.Key, l.Timestamp.Format("15:04:05.000"),
					l.Window.Start.Format("15:04"), l.Window.End.Format("15:04"), l.Watermark.Format("15:04:05.000"))
			}
			return nil
		}), weir.Parallelism(1), weir.Name("print-late"))
	}

	start := time.Now()
	progress.start()
	err := dl.run(ctx, c, job)
	progress.stop()
	if err != nil {
		return err
	}
	el := time.Since(start)
	late := job.Metrics().Sum(func(m *weir.OperatorMetrics) int64 { return m.LateDropped })
	if o.microbatch > 0 {
		fmt.Fprintf(stdout, "\nmicrobatch %v: %d epochs committed\n", o.microbatch, job.Metrics().Checkpoints.Completed)
	}
	if sp := job.StoppedWithSavepoint(); sp != "" {
		// The job did not read all the clicks: a true-up against the whole
		// input, or calling the clicks it did not count "late", would be
		// false.
		read := job.Metrics().Sum(func(m *weir.OperatorMetrics) int64 {
			if m.Name == "clicks" {
				return m.RecordsOut
			}
			return 0
		})
		fmt.Fprintf(stdout, "\nstopped with a savepoint into %s before the input was complete: no true-up\n", sp)
		fmt.Fprintf(stdout, "\nsummary (partial)\n")
		fmt.Fprintf(stdout, "  events         %d in the input, %d read by this run before the stop\n", c.Events, read)
		fmt.Fprintf(stdout, "  windows fired  %d per-ad results and %d corrections in this run\n", results, corrections)
		fmt.Fprintf(stdout, "  late dropped   %d clicks arrived after their window fired, in this run\n", late)
		if o.output != "" {
			fmt.Fprintf(stdout, "  output         %s (committed part files, up to the savepoint)\n", o.output)
		}
		return nil
	}

	// The nightly true-up: recount the complete input in a batch.
	truth, err := adclicks.DemoTrueCounts(ctx, c)
	if err != nil {
		return err
	}
	if o.output != "" {
		// The committed output covers every run of a resumed demo; what
		// this process printed may not.
		rows, err := readRows(o.output)
		if err != nil {
			return err
		}
		final = map[wk]int64{}
		for _, r := range rows {
			final[wk{r.Ad, r.WindowStart}] = r.Clicks
		}
	}
	if !o.quiet {
		printTopWindows(stdout, final, results, 5)
	}
	streamed := map[int64]int64{}
	var streamedTotal int64
	for k, v := range final {
		if v == 0 {
			continue
		}
		streamed[k.start] += v
		streamedTotal += v
	}
	if o.ckDir != "" {
		// A resumed run's metrics do not cover earlier runs: count against
		// the batch recount instead.
		late = c.Events - streamedTotal
	}
	fmt.Fprintf(stdout, "\ntrue-up: streamed counts against a batch recount of the complete input\n")
	fmt.Fprintf(stdout, "  %-16s %10s %10s %8s\n", "window", "streamed", "true", "diff")
	var starts []int64
	for s := range truth {
		starts = append(starts, s)
	}
	slices.Sort(starts)
	for _, s := range starts {
		fmt.Fprintf(stdout, "  %-16s %10d %10d %8d\n", time.UnixMilli(s).UTC().Format("2006-01-02 15:04"), streamed[s], truth[s], streamed[s]-truth[s])
	}
	fmt.Fprintf(stdout, "\nsummary\n")
	fmt.Fprintf(stdout, "  events         %d\n", c.Events)
	fmt.Fprintf(stdout, "  windows fired  %d (%d per-ad results and %d corrections in this run)\n", len(streamed), results, corrections)
	fmt.Fprintf(stdout, "  clicks counted %d\n", streamedTotal)
	fmt.Fprintf(stdout, "  late dropped   %d clicks arrived after their window fired (watermark bound %v, allowed lateness %v, policy %s)\n",
		late, o.outOfOrder, o.lateness, o.policy)
	fmt.Fprintf(stdout, "  watermark cost %d clicks missing from the streamed totals (%.3f%%)\n", c.Events-streamedTotal, 100*float64(c.Events-streamedTotal)/float64(max(c.Events, 1)))
	fmt.Fprintf(stdout, "  throughput     %.0f events/s (%.2fs)\n", float64(c.Events)/el.Seconds(), el.Seconds())
	if o.output != "" {
		fmt.Fprintf(stdout, "  output         %s (committed part files)\n", o.output)
	}
	if dl != nil {
		n, parts, err := topicRecords(o.dataDir, resultsTopic)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  input          topic %s: %d clicks read (%d written by the producer in this run)\n", clicksTopic, c.Events, dl.produced.Load())
		guarantee := "exactly once"
		if dup := job.DuplicateOutput(); dup != nil {
			last := dup.Committed[len(dup.Committed)-1]
			guarantee = fmt.Sprintf("at least once: --allow-duplicates committed the output of %d checkpoint(s) up to %s %d a second time", len(dup.Committed), last.Kind, last.ID)
		}
		fmt.Fprintf(stdout, "  results        topic %s: %d records in %d partitions (%s)\n", resultsTopic, n, parts, guarantee)
	}
	if streamedTotal+late != c.Events {
		return fmt.Errorf("accounting error: %d counted + %d dropped != %d events", streamedTotal, late, c.Events)
	}
	if o.policy == "side-output" && lateShown != late {
		return fmt.Errorf("accounting error: %d late clicks shown, %d dropped", lateShown, late)
	}
	return nil
}

// wk is a per-ad window of the demo: the ad and the window's start (ms).
type wk struct {
	ad    string
	start int64
}

// printTopWindows prints the n largest per-ad counts of final, of the
// results printed by this run: the demo's windows at a glance, where
// --windows prints every one.
func printTopWindows(w io.Writer, final map[wk]int64, results int64, n int) {
	keys := make([]wk, 0, len(final))
	for k, v := range final {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b wk) int {
		if c := cmp.Compare(final[b], final[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return strings.Compare(a.ad, b.ad)
	})
	keys = keys[:min(n, len(keys))]
	fmt.Fprintf(w, "\ntop windows: the %d largest of %d per-ad counts (%d results fired in this run)\n", len(keys), len(final), results)
	for _, k := range keys {
		start := time.UnixMilli(k.start).UTC()
		fmt.Fprintf(w, "  %s–%s  %-6s %7d clicks\n", start.Format("2006-01-02 15:04"), start.Add(time.Minute).Format("15:04"), k.ad, final[k])
	}
}

// progress draws a live line on a terminal; elsewhere it does nothing.
type progress struct {
	w    io.Writer
	job  *weir.Job
	on   bool
	mu   sync.Mutex
	done chan struct{}
	wg   sync.WaitGroup
	t0   time.Time
}

func newProgress(w io.Writer, job *weir.Job) *progress {
	p := &progress{w: w, job: job}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) start() {
	if !p.on {
		return
	}
	p.t0 = time.Now()
	p.done = make(chan struct{})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.draw()
			}
		}
	}()
}

func (p *progress) draw() {
	var events, late int64
	for _, m := range p.job.Metrics().Operators {
		if m.Name == "clicks" {
			events += m.RecordsOut
		}
		late += m.LateDropped
	}
	el := time.Since(p.t0).Seconds()
	p.mu.Lock()
	fmt.Fprintf(p.w, "\r\033[K%d events  %d late  %.0f events/s", events, late, float64(events)/el)
	p.mu.Unlock()
}

func (p *progress) clear() {
	if !p.on {
		return
	}
	p.mu.Lock()
	fmt.Fprint(p.w, "\r\033[K")
	p.mu.Unlock()
}

func (p *progress) stop() {
	if !p.on {
		return
	}
	close(p.done)
	p.wg.Wait()
	p.clear()
}

// resultRow is one result in the demo's output files.
type resultRow struct {
	Ad          string `json:"ad"`
	WindowStart int64  `json:"window_start_ms"`
	WindowEnd   int64  `json:"window_end_ms"`
	Clicks      int64  `json:"clicks"`
	Kind        string `json:"kind"`
}

func toRow(r weir.WindowResult[string, int64]) resultRow {
	return resultRow{Ad: r.Key, WindowStart: r.Start.UnixMilli(), WindowEnd: r.End.UnixMilli(), Clicks: r.Value, Kind: r.Kind.String()}
}

// readRows reads the committed part files in name order (checkpoint order),
// so a later correction of a window comes after its first result.
func readRows(dir string) ([]resultRow, error) {
	names, err := filepath.Glob(filepath.Join(dir, "part-*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var rows []resultRow
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(f)
		for {
			var r resultRow
			if err := dec.Decode(&r); err == io.EOF {
				break
			} else if err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			rows = append(rows, r)
		}
		f.Close()
	}
	return rows, nil
}

// The demo's topics in --data-dir.
const (
	clicksTopic       = "clicks"
	resultsTopic      = "click-counts"
	resultsPartitions = 4
)

// demoLog is the log side of the demo: the clicks topic, how much of the
// stream it holds, and the producer that writes the rest while the job
// reads.
type demoLog struct {
	dataDir  string
	events   int64
	have     int64 // clicks in the topic when the demo started
	ads      map[string]string
	produced atomic.Int64
}

// prepareDemoLog creates the topics, and checks that the clicks topic
// holds a prefix of this stream. Without a checkpoint to resume from, the
// results topic starts empty: it holds the results of one run.
func prepareDemoLog(stderr io.Writer, c adclicks.DemoConfig, o demoOpts) (*demoLog, error) {
	resuming := hasCheckpoint(o.ckDir)
	if !resuming {
		if err := wlog.DeleteTopic(o.dataDir, resultsTopic); err != nil && !errors.Is(err, wlog.ErrNoTopic) {
			return nil, err
		}
	}
	if _, err := wlog.CreateTopic(o.dataDir, resultsTopic, wlog.TopicConfig{Partitions: resultsPartitions}); err != nil && !errors.Is(err, wlog.ErrTopicExists) {
		return nil, err
	}
	dl := &demoLog{dataDir: o.dataDir, events: c.Events, ads: map[string]string{}}
	for _, ad := range adclicks.NewDemoGen(c).Ads() {
		dl.ads[ad] = ad
	}
	for {
		t, err := wlog.OpenTopic(o.dataDir, clicksTopic)
		if errors.Is(err, wlog.ErrNoTopic) {
			t, err = wlog.CreateTopic(o.dataDir, clicksTopic, wlog.TopicConfig{Partitions: 1})
		}
		if err != nil {
			return nil, err
		}
		if t.Config.Partitions != 1 {
			return nil, fmt.Errorf("topic %s in %s has %d partitions; the demo needs 1 (one split: late clicks are then the same in every run)", clicksTopic, o.dataDir, t.Config.Partitions)
		}
		infos, err := t.Describe()
		if err != nil {
			return nil, err
		}
		dl.have = infos[0].Next
		differs, err := dl.differs(t, c, infos[0].Earliest)
		if err != nil || differs == "" {
			return dl, err
		}
		if resuming {
			return nil, fmt.Errorf("topic %s in %s holds another click stream than these flags give (%s), and the checkpoint in %s was taken over it: use that run's --seed/--ads, or another --data-dir and --checkpoint-dir", clicksTopic, o.dataDir, differs, o.ckDir)
		}
		fmt.Fprintf(stderr, "weir: topic %s in %s held another click stream (%s); starting it again\n", clicksTopic, o.dataDir, differs)
		if err := wlog.DeleteTopic(o.dataDir, clicksTopic); err != nil {
			return nil, err
		}
	}
}

// differs compares the first and the last click the job would read from
// the topic with the generator's; it describes the first difference, or
// returns "".
func (dl *demoLog) differs(t *wlog.Topic, c adclicks.DemoConfig, earliest int64) (string, error) {
	n := min(dl.have, c.Events)
	if n == 0 {
		return "", nil
	}
	if earliest > 0 {
		return fmt.Sprintf("it starts at offset %d", earliest), nil
	}
	want := make([]adclicks.DemoClick, 1)
	for _, i := range []int64{0, n - 1} {
		g := adclicks.NewDemoGen(c)
		g.Skip(i)
		g.Fill(want)
		r, err := t.OpenReader(0, wlog.AtOffset(i))
		if err != nil {
			return "", err
		}
		recs, err := r.Read(context.Background(), 1)
		r.Close()
		if err != nil {
			return "", fmt.Errorf("topic %s partition 0 offset %d: %w", clicksTopic, i, err)
		}
		got, err := dl.decode(recs[0])
		if err != nil || got != want[0] || recs[0].Offset != i {
			return fmt.Sprintf("click %d", i), nil
		}
	}
	return "", nil
}

// source reads the first --events clicks of the topic; while the producer
// writes, it follows the topic.
func (dl *demoLog) source() weir.Source[adclicks.DemoClick] {
	opts := []wlog.SourceOption{wlog.StopAt(map[int]int64{0: dl.events})}
	if dl.have < dl.events {
		opts = append(opts, wlog.FollowLog(2*time.Millisecond))
	}
	return wlog.Source(dl.dataDir, clicksTopic, dl.decode, opts...)
}

// A click's record: the ad as key, the user id (decimal) as value, the
// event time as timestamp.
func (dl *demoLog) decode(r wlog.Record) (adclicks.DemoClick, error) {
	ad, ok := dl.ads[string(r.Key)]
	if !ok {
		return adclicks.DemoClick{}, fmt.Errorf("unknown ad %q", r.Key)
	}
	user, err := strconv.ParseInt(string(r.Value), 10, 64)
	if err != nil {
		return adclicks.DemoClick{}, fmt.Errorf("user id: %w", err)
	}
	return adclicks.DemoClick{AdID: ad, UserID: user, TS: time.UnixMilli(r.Timestamp).UTC()}, nil
}

// run runs the job and, beside it, the producer that writes the clicks the
// topic does not hold yet. A failing producer fails the job. dl nil runs
// the job alone.
func (dl *demoLog) run(ctx context.Context, c adclicks.DemoConfig, job *weir.Job) error {
	if dl == nil || dl.have >= c.Events {
		return job.Run(ctx)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	done := make(chan error, 1)
	go func() {
		err := dl.produce(ctx, c)
		if err != nil {
			cancel(fmt.Errorf("producer: %w", err))
		}
		done <- err
	}()
	err := job.Run(ctx)
	cancel(nil)
	if perr := <-done; perr != nil && !errors.Is(perr, context.Canceled) {
		return fmt.Errorf("producer: %w", perr)
	}
	return err
}

// produce appends clicks have.. to the topic. The stream is deterministic
// by index, so after a crash it resumes where the topic ends (a torn last
// batch is dropped when the writer opens).
func (dl *demoLog) produce(ctx context.Context, c adclicks.DemoConfig) error {
	t, err := wlog.OpenTopic(dl.dataDir, clicksTopic)
	if err != nil {
		return err
	}
	w, err := t.OpenWriter(0, wlog.WithSync(wlog.SyncEvery(time.Second)))
	if err != nil {
		return err
	}
	defer w.Close()
	if next := w.NextOffset(); next != dl.have {
		return fmt.Errorf("topic %s partition 0 ends at offset %d, expected %d", clicksTopic, next, dl.have)
	}
	keys := map[string][]byte{}
	for ad := range dl.ads {
		keys[ad] = []byte(ad)
	}
	recs := make([]wlog.Record, 0, 4096)
	vals := make([]byte, 0, 8*cap(recs))
	err = adclicks.ProduceDemo(ctx, c, dl.have, cap(recs), func(cs []adclicks.DemoClick) error {
		recs, vals = recs[:0], vals[:0]
		for _, x := range cs {
			// Earlier values stay valid if vals grows: append copies.
			start := len(vals)
			vals = strconv.AppendInt(vals, x.UserID, 10)
			recs = append(recs, wlog.Record{Key: keys[x.AdID], Value: vals[start:len(vals):len(vals)], Timestamp: x.TS.UnixMilli()})
		}
		if _, err := w.Append(recs); err != nil {
			return err
		}
		dl.produced.Add(int64(len(cs)))
		return nil
	})
	if err != nil {
		return err
	}
	return w.Sync()
}

// resultRecord is a result in topic click-counts: the ad as key, the row
// as JSON value (as in the --output files), the window's last
// millisecond as timestamp.
func resultRecord(r weir.WindowResult[string, int64], rec *wlog.Record) error {
	b, err := json.Marshal(toRow(r))
	if err != nil {
		return err
	}
	rec.Key = append(rec.Key, r.Key...)
	rec.Value = append(rec.Value, b...)
	rec.Timestamp = r.End.UnixMilli() - 1
	return nil
}

// topicRecords counts the records of a topic (it has no gaps: it is not
// compacted).
func topicRecords(dir, topic string) (n int64, parts int, err error) {
	t, err := wlog.OpenTopic(dir, topic)
	if err != nil {
		return 0, 0, err
	}
	infos, err := t.Describe()
	if err != nil {
		return 0, 0, err
	}
	for _, in := range infos {
		n += in.Next - in.Earliest
	}
	return n, len(infos), nil
}

// hasCheckpoint says whether the job will resume from a checkpoint in dir.
func hasCheckpoint(dir string) bool {
	if dir == "" {
		return false
	}
	s, err := checkpoint.Open(dir, checkpoint.ReadOnly())
	if err != nil {
		return false
	}
	_, err = s.Latest()
	return !errors.Is(err, checkpoint.ErrNoCheckpoint)
}
