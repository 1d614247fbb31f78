package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/adclicks"
)

func newDemoAdclicks() *cobra.Command {
	c := adclicks.DefaultDemo()
	var (
		parallelism int
		metricsAddr string
		quiet       bool
		outOfOrder  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "adclicks",
		Short: "Count clicks per ad per minute of event time, as windows fire",
		Long: `The lesson's ad-click aggregator. A generated click stream (deterministic for a
seed) with ordinary disorder of a few seconds and a share of clicks that arrive
minutes late is keyed by ad and counted in one-minute event-time windows under
a bounded-out-of-orderness watermark. Results print as windows fire; clicks that
arrive after their window fired are dropped and counted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), c, demoOpts{
				parallelism: parallelism, metricsAddr: metricsAddr, quiet: quiet, outOfOrder: outOfOrder,
			})
		},
	}
	f := cmd.Flags()
	f.Int64Var(&c.Events, "events", c.Events, "number of clicks (the demo is bounded)")
	f.Float64Var(&c.Rate, "rate", 0, "clicks per second (0: as fast as possible)")
	f.IntVar(&parallelism, "parallelism", 2, "job parallelism")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the click generator: the same seed gives the same results")
	f.IntVar(&c.Ads, "ads", c.Ads, "number of distinct ads")
	f.DurationVar(&outOfOrder, "out-of-orderness", 5*time.Second, "watermark bound: how late a click may be and still count")
	f.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus metrics at this address (loopback unless a host is given)")
	f.BoolVar(&quiet, "quiet", false, "do not print each result, only the summary")
	return cmd
}

type demoOpts struct {
	parallelism int
	metricsAddr string
	quiet       bool
	outOfOrder  time.Duration
}

func runDemo(ctx context.Context, stdout, stderr io.Writer, c adclicks.DemoConfig, o demoOpts) error {
	if c.Events < 0 || c.Ads < 1 {
		return fmt.Errorf("--events must be >= 0 and --ads >= 1")
	}
	opts := []weir.Option{weir.Parallelism(o.parallelism)}
	if o.metricsAddr != "" {
		opts = append(opts, weir.MetricsAddr(o.metricsAddr))
	}
	job := weir.NewJob("demo-adclicks", opts...)
	clicks := weir.FromSource(job, "clicks", adclicks.DemoSource(c),
		weir.BoundedOutOfOrderness(o.outOfOrder, func(c adclicks.DemoClick) time.Time { return c.TS }))
	perAd := weir.KeyBy(clicks, func(c adclicks.DemoClick) string { return c.AdID })
	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[adclicks.DemoClick](), weir.Name("count-per-minute"))

	progress := newProgress(stderr, job)
	var results, clicksCounted atomic.Int64
	windows := map[int64]bool{}
	var mu sync.Mutex
	// One printing subtask, so that lines never interleave.
	weir.To(counts, weir.SinkFunc[weir.WindowResult[string, int64]](func(_ context.Context, rs []weir.WindowResult[string, int64]) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			results.Add(1)
			clicksCounted.Add(r.Value)
			windows[r.Start.UnixMilli()] = true
			if !o.quiet {
				progress.clear()
				fmt.Fprintf(stdout, "window %s–%s  %-6s %7d clicks\n", r.Start.Format("2006-01-02 15:04"), r.End.Format("15:04"), r.Key, r.Value)
			}
		}
		return nil
	}), weir.Parallelism(1), weir.Name("print"))

	start := time.Now()
	progress.start()
	err := job.Run(ctx)
	progress.stop()
	if err != nil {
		return err
	}
	el := time.Since(start)
	late := job.Metrics().Sum(func(m *weir.OperatorMetrics) int64 { return m.LateDropped.Load() })
	fmt.Fprintf(stdout, "\nsummary\n")
	fmt.Fprintf(stdout, "  events         %d\n", c.Events)
	fmt.Fprintf(stdout, "  windows fired  %d (%d per-ad results)\n", len(windows), results.Load())
	fmt.Fprintf(stdout, "  clicks counted %d\n", clicksCounted.Load())
	fmt.Fprintf(stdout, "  late dropped   %d clicks arrived after their window fired (watermark bound %v)\n", late, o.outOfOrder)
	fmt.Fprintf(stdout, "  throughput     %.0f events/s (%.2fs)\n", float64(c.Events)/el.Seconds(), el.Seconds())
	if clicksCounted.Load()+late != c.Events {
		return fmt.Errorf("accounting error: %d counted + %d dropped != %d events", clicksCounted.Load(), late, c.Events)
	}
	return nil
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
	for _, m := range p.job.Metrics().Snapshot() {
		if m.Name == "clicks" {
			events += m.RecordsOut.Load()
		}
		late += m.LateDropped.Load()
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
