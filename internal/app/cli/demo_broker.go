package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/weirstream/weir/broker"

	sqlexamples "github.com/weirstream/weir/examples/sql"
)

// brokerClicksSQL is the job file examples/sql/broker_clicks.sql.
var brokerClicksSQL = sqlexamples.BrokerClicks

const (
	demoBrokerTopic      = "clicks"
	demoBrokerPartitions = 4
	demoBrokerAds        = 10
	demoBrokerUsers      = 1000
	// demoBrokerSpan is the event time the clicks cover; each is up to
	// demoBrokerJitter later than its place in the span, less than the
	// job's watermark delay (5 s), so none is late.
	demoBrokerSpan   = 5 * time.Minute
	demoBrokerJitter = 3 * time.Second
	// demoBrokerTSLayout is the json format's TIMESTAMP(3) text.
	demoBrokerTSLayout = "2006-01-02 15:04:05.000"
)

// demoBrokerStart is the first click's event time without --follow.
var demoBrokerStart = time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)

type demoBrokerOpts struct {
	dataDir string // "" is a temporary directory, removed at the end
	listen  string
	events  int
	seed    uint64
	follow  bool
	stderr  io.Writer

	// For tests. afterProduce runs once the demo's clicks are in the
	// topic, before the job; it returns how many records it added to the
	// topic (they count in the check). now is the clock of --follow's
	// live clicks (default time.Now), liveEvery their period (default 1s).
	afterProduce func(ctx context.Context, addr string) (int64, error)
	now          func() time.Time
	liveEvery    time.Duration
}

func newDemoBroker() *cobra.Command {
	o := demoBrokerOpts{listen: "127.0.0.1:9092", events: 10000, seed: 1}
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Produce clicks into weir broker with a Kafka client and count them with a Flink SQL job",
		Long: `The broker with any Kafka client. The demo starts weir broker in this process,
creates topic "clicks" (4 partitions) through the Kafka protocol (an admin
client), produces --events JSON clicks (deterministic for --seed, over five
minutes of event time) with a Kafka producer (franz-go, acks=all), and runs
the Flink SQL job of examples/sql/broker_clicks.sql as weir sql -f does: the
kafka connector reads "clicks" from the broker from the earliest offsets to
the latest, and a one-minute TUMBLE window counts the clicks per ad. The
rows print as the print connector writes them; the last line checks that
their counts add up to the clicks produced (the exit status is 1 if not).

With --follow the job reads on until Ctrl-C, and the demo adds a live click
per partition a second (so the watermark, which is per partition, advances):
produce more with kcat or any Kafka client, e.g.

  printf '{"ad":"ad-kcat","user_id":"me","ts":"%s"}\n' "$(date -u '+%F %T')" |
    kcat -b 127.0.0.1:9092 -t clicks -P

and its minute's count prints once the minute is over.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runDemoBroker(cmd.Context(), cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", "", "directory of the broker's log (default: a temporary directory, removed at the end)")
	f.StringVar(&o.listen, "listen", o.listen, "the broker's address (port 0: a free one)")
	f.IntVar(&o.events, "events", o.events, "number of clicks the demo produces")
	f.Uint64Var(&o.seed, "seed", o.seed, "seed of the clicks: the same seed gives the same results")
	f.BoolVar(&o.follow, "follow", false, "keep the broker and the job running until Ctrl-C, for clicks produced with kcat or any Kafka client")
	return cmd
}

func runDemoBroker(ctx context.Context, out io.Writer, o demoBrokerOpts) error {
	if o.events < 0 {
		return fmt.Errorf("demo broker: --events %d: must not be negative", o.events)
	}
	if o.stderr == nil {
		o.stderr = io.Discard
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.liveEvery <= 0 {
		o.liveEvery = time.Second
	}
	dataDir, temp := o.dataDir, o.dataDir == ""
	if temp {
		d, err := os.MkdirTemp("", "weir-demo-broker-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dataDir = d
	}
	// The broker's warnings (it runs open on loopback, and says so) go to
	// stderr.
	logger := slog.New(slog.NewTextHandler(o.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := broker.Start(ctx, broker.Config{DataDir: dataDir, Listen: o.listen, InitialRebalanceDelay: -1, Logger: logger})
	if err != nil {
		return fmt.Errorf("demo broker: %w", err)
	}
	defer b.Close()
	addr := b.Addr()
	where := dataDir
	if temp {
		where += ", removed at the end"
	}
	fmt.Fprintf(out, "weir broker listening on %s (data %s)\n", addr, where)

	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(demoBrokerTopic),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return fmt.Errorf("demo broker: %w", err)
	}
	defer cl.Close()
	// The topic, through the Kafka protocol, as any admin client makes it.
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, demoBrokerPartitions, 1, nil, demoBrokerTopic)
	if err == nil {
		err = resp.Err
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return fmt.Errorf("demo broker: topic %s already exists in %s (an earlier run's clicks would be counted too): give another --data-dir", demoBrokerTopic, dataDir)
	}
	if err != nil {
		return fmt.Errorf("demo broker: create topic %s: %w", demoBrokerTopic, err)
	}
	fmt.Fprintf(out, "created topic %s (%d partitions) with a Kafka admin client\n", demoBrokerTopic, demoBrokerPartitions)

	start := demoBrokerStart
	if o.follow {
		// The clicks end about now, where the live ones go on.
		start = o.now().UTC().Truncate(time.Minute).Add(-demoBrokerSpan)
	}
	t0 := time.Now()
	last, err := produceDemoClicks(ctx, cl, start, o.events, o.seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "produced %d clicks with a Kafka producer (franz-go, acks=all) in %v, event time %s to %s\n",
		o.events, time.Since(t0).Round(time.Millisecond), start.Format(demoBrokerTSLayout), last.Format("15:04:05.000"))
	produced := int64(o.events)
	var others int64
	if o.afterProduce != nil {
		n, err := o.afterProduce(ctx, addr)
		if err != nil {
			return fmt.Errorf("demo broker: %w", err)
		}
		others = n
	}

	var live sync.WaitGroup
	stopLive := func() {}
	bounded := "latest-offset"
	if o.follow {
		bounded = "unbounded"
		lctx, cancel := context.WithCancel(ctx)
		stopLive = func() { cancel(); live.Wait() }
		defer stopLive()
		live.Add(1)
		go func() {
			defer live.Done()
			liveClicks(lctx, cl, o, logger)
		}()
		fmt.Fprintf(out, `following (Ctrl-C stops): the demo adds a click per partition every %v, with the time now as its event time, so
that the watermark (per partition) advances. Produce your own clicks with kcat or any Kafka client:

  printf '{"ad":"ad-kcat","user_id":"me","ts":"%%s"}\n' "$(date -u '+%%F %%T')" | kcat -b %s -t %s -P

A minute's counts print once the watermark passes its end (5 s after it); a click more than 5 s older
than the newest of its partition is late and not counted.
`, o.liveEvery, addr, demoBrokerTopic)
	}

	// The job: weir sql -f, on a copy of examples/sql/broker_clicks.sql.
	sqlDir, err := os.MkdirTemp("", "weir-demo-broker-sql-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(sqlDir)
	file := filepath.Join(sqlDir, "broker_clicks.sql")
	if err := os.WriteFile(file, []byte(brokerClicksSQL), 0o644); err != nil {
		return err
	}
	args := []string{"sql", "-f", file, "--define", "BROKERS=" + addr, "--define", "BOUNDED=" + bounded}
	fmt.Fprintf(out, "running the SQL job (examples/sql/broker_clicks.sql):\n  weir %s\n", strings.Join(args, " "))
	counts := &clickRows{w: out}
	root := NewRoot(counts, o.stderr)
	root.SetArgs(args)
	err = root.ExecuteContext(ctx)
	stopLive()
	if err != nil {
		return fmt.Errorf("demo broker: the SQL job: %w", err)
	}
	rows, total, bad := counts.result()
	if bad != "" {
		return fmt.Errorf("demo broker: a row the job printed is not (window_start, window_end, ad, clicks): %q", bad)
	}
	if o.follow {
		fmt.Fprintf(out, "stopped: the SQL job printed %d rows, %d clicks (windows still open at the stop were not printed)\n", rows, total)
		return nil
	}
	want := produced + others
	from := ""
	if others > 0 {
		from = fmt.Sprintf(" (%d by the demo, %d by another client)", produced, others)
	}
	if total != want {
		fmt.Fprintf(out, "check: the SQL job counted %d clicks in %d rows, %d were produced%s: NOT equal\n", total, rows, want, from)
		return fmt.Errorf("demo broker: the SQL job counted %d clicks, %d were produced", total, want)
	}
	fmt.Fprintf(out, "check: the SQL job counted %d clicks in %d rows, %d were produced%s: equal\n", total, rows, want, from)
	return nil
}

// demoClick is a record of topic clicks: what the json format reads into
// the table's columns.
type demoClick struct {
	Ad     string `json:"ad"`
	UserID string `json:"user_id"`
	TS     string `json:"ts"`
}

// produceDemoClicks produces n clicks from start over demoBrokerSpan,
// deterministic for seed, round robin over the partitions (as a producer
// without keys spreads them), and waits until the broker has acknowledged
// every one. It returns the latest event time.
func produceDemoClicks(ctx context.Context, cl *kgo.Client, start time.Time, n int, seed uint64) (time.Time, error) {
	rng := rand.New(rand.NewPCG(seed, 0x77656972))
	var (
		mu       sync.Mutex
		firstErr error
		last     = start
	)
	for i := range n {
		at := start.Add(demoBrokerSpan*time.Duration(i)/time.Duration(n) + time.Duration(rng.Int64N(int64(demoBrokerJitter/time.Millisecond)))*time.Millisecond)
		if at.After(last) {
			last = at
		}
		// Some ads get more clicks than others.
		c := demoClick{
			Ad:     "ad-" + strconv.Itoa(rng.IntN(1+rng.IntN(demoBrokerAds))),
			UserID: "u-" + strconv.Itoa(rng.IntN(demoBrokerUsers)),
			TS:     at.Format(demoBrokerTSLayout),
		}
		v, err := json.Marshal(c)
		if err != nil {
			return last, err
		}
		cl.Produce(ctx, &kgo.Record{Partition: int32(i % demoBrokerPartitions), Value: v}, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return last, fmt.Errorf("demo broker: produce: %w", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil {
		return last, fmt.Errorf("demo broker: produce: %w", firstErr)
	}
	return last, nil
}

// liveClicks produces, every o.liveEvery until ctx is done, a click per
// partition with the time now as its event time.
func liveClicks(ctx context.Context, cl *kgo.Client, o demoBrokerOpts, logger *slog.Logger) {
	rng := rand.New(rand.NewPCG(o.seed, 0x6c697665))
	tick := time.NewTicker(o.liveEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		ts := o.now().UTC().Format(demoBrokerTSLayout)
		for p := range demoBrokerPartitions {
			v, _ := json.Marshal(demoClick{Ad: "ad-" + strconv.Itoa(rng.IntN(1+rng.IntN(demoBrokerAds))), UserID: "u-" + strconv.Itoa(rng.IntN(demoBrokerUsers)), TS: ts})
			cl.Produce(ctx, &kgo.Record{Partition: int32(p), Value: v}, func(_ *kgo.Record, err error) {
				if err != nil && ctx.Err() == nil {
					logger.Warn("demo broker: live click", "err", err)
				}
			})
		}
	}
}

// clickRows passes the job's output on to w and adds up the rows the
// print connector writes, "+I[2026-12-05T10:00, 2026-12-05T10:01, ad-7,
// 42]" (with a "N> " prefix at a sink parallelism above 1).
type clickRows struct {
	w       io.Writer
	mu      sync.Mutex
	partial []byte
	rows    int64
	clicks  int64
	bad     string
}

func (c *clickRows) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.w.Write(p)
	c.partial = append(c.partial, p...)
	for {
		i := bytes.IndexByte(c.partial, '\n')
		if i < 0 {
			break
		}
		c.line(string(c.partial[:i]))
		c.partial = c.partial[i+1:]
	}
	return n, err
}

func (c *clickRows) line(l string) {
	i := strings.Index(l, "+I[")
	if i < 0 || !strings.HasSuffix(l, "]") {
		return // not a row: the window aggregation only inserts
	}
	fields := strings.Split(l[i+len("+I["):len(l)-1], ", ")
	var n int64
	var err error
	if len(fields) < 4 {
		err = errors.New("too few fields")
	} else {
		n, err = strconv.ParseInt(fields[len(fields)-1], 10, 64)
	}
	if err != nil {
		if c.bad == "" {
			c.bad = l
		}
		return
	}
	c.rows++
	c.clicks += n
}

// result returns the rows and the clicks they count, and the first line
// that looked like a row and was not one.
func (c *clickRows) result() (rows, clicks int64, bad string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rows, c.clicks, c.bad
}
