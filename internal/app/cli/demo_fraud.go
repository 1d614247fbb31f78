package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/app/fraud"
)

const alertsTopic = "fraud-alerts"

// alert is one fired pattern, as printed and as the JSON value of a
// record in topic fraud-alerts.
type alert struct {
	Pattern string    `json:"pattern"`
	Card    string    `json:"card"`
	At      time.Time `json:"at"` // the last event's time
	Detail  string    `json:"detail"`
}

type fraudOpts struct {
	dataDir     string
	parallelism int
	quiet       bool
	web         webFlags
	stderr      io.Writer // for the web server's log line
}

func newDemoFraud() *cobra.Command {
	c := fraud.Default()
	var o fraudOpts
	cmd := &cobra.Command{
		Use:   "fraud",
		Short: "Card fraud alerts with complex event processing (cep.DetectAll)",
		Long: `Streams seeded card transactions (with planted fraud) through two CEP
patterns per card: a small charge, then a large one from another country
within 5 minutes; and three declined attempts in a row within 10 minutes.
Alerts are printed as they fire and written, exactly once, to the topic
fraud-alerts of the embedded log in --data-dir (a temporary directory by
default); a summary with the alert counts ends the run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stderr = cmd.ErrOrStderr()
			return runFraud(cmd.Context(), cmd.OutOrStdout(), c, o)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&c.Events, "events", c.Events, "number of transactions")
	f.IntVar(&c.Cards, "cards", c.Cards, "number of cards")
	f.Uint64Var(&c.Seed, "seed", c.Seed, "generator seed")
	f.StringVar(&o.dataDir, "data-dir", "", "embedded log directory for topic fraud-alerts (default: a temporary directory)")
	f.IntVar(&o.parallelism, "parallelism", 2, "job parallelism")
	f.BoolVar(&o.quiet, "quiet", false, "print the summary only")
	o.web.add(cmd, "DATA_DIR/fraud-checkpoints/control.token")
	return cmd
}

func runFraud(ctx context.Context, stdout io.Writer, c fraud.Config, o fraudOpts) error {
	if o.dataDir == "" {
		dir, err := os.MkdirTemp("", "weir-fraud-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.dataDir = dir
	}
	if err := wlog.DeleteTopic(o.dataDir, alertsTopic); err != nil && !errors.Is(err, wlog.ErrNoTopic) {
		return err
	}
	if _, err := wlog.CreateTopic(o.dataDir, alertsTopic, wlog.TopicConfig{Partitions: 2}); err != nil {
		return err
	}
	ckDir := filepath.Join(o.dataDir, "fraud-checkpoints")
	job := weir.NewJob("demo-fraud", append([]weir.JobOption{weir.Parallelism(o.parallelism),
		weir.Checkpointing(time.Second, ckDir)}, o.web.options(o.stderr, ckDir, o.dataDir)...)...)
	txns := weir.FromSource(job, "transactions", weir.GeneratorSource(weir.GeneratorConfig{Count: c.Events, Seed: c.Seed}, c.Gen),
		weir.BoundedOutOfOrderness(2*time.Second, func(t fraud.Txn) time.Time { return t.TS }), weir.UID("transactions"))
	perCard := weir.KeyBy(txns, func(t fraud.Txn) string { return t.Card })
	alerts := cep.DetectAll(perCard, fraud.Patterns(), func(card string, p int, m cep.Match[fraud.Txn]) alert {
		return describe(card, p, m)
	}, weir.UID("patterns"))
	weir.To(alerts, wlog.Sink(o.dataDir, alertsTopic, "demo-fraud", alertRecord), weir.UID("alerts-topic"), weir.Name("alerts-topic"))
	var mu sync.Mutex
	counts := map[string]int64{}
	weir.To(alerts, weir.SinkFunc[alert](func(_ context.Context, as []alert) error {
		mu.Lock()
		defer mu.Unlock()
		for _, a := range as {
			counts[a.Pattern]++
			if !o.quiet {
				fmt.Fprintf(stdout, "ALERT %-24s %s  %s  %s\n", a.Pattern, a.Card, a.At.Format("15:04:05.000"), a.Detail)
			}
		}
		return nil
	}), weir.Parallelism(1), weir.Name("print"))

	start := time.Now()
	if err := job.Run(ctx); err != nil {
		return err
	}
	el := time.Since(start)
	n, parts, err := topicRecords(o.dataDir, alertsTopic)
	if err != nil {
		return err
	}
	var total int64
	fmt.Fprintf(stdout, "summary\n")
	fmt.Fprintf(stdout, "  transactions   %d on %d cards (seed %d)\n", c.Events, c.Cards, c.Seed)
	for _, name := range fraud.Names {
		fmt.Fprintf(stdout, "  %-24s %d alerts\n", name, counts[name])
		total += counts[name]
	}
	fmt.Fprintf(stdout, "  alerts         %d in all; topic %s: %d records in %d partitions (exactly once)\n", total, alertsTopic, n, parts)
	fmt.Fprintf(stdout, "  late dropped   %d\n", cep.LateDropped(alerts))
	fmt.Fprintf(stdout, "  throughput     %.0f events/s (%.2fs)\n", float64(c.Events)/el.Seconds(), el.Seconds())
	if n != total {
		return fmt.Errorf("topic %s has %d records for %d alerts", alertsTopic, n, total)
	}
	return nil
}

// describe turns a match into an alert.
func describe(card string, p int, m cep.Match[fraud.Txn]) alert {
	a := alert{Pattern: fraud.Names[p], Card: card}
	switch p {
	case 0:
		s, l := m["small"][0], m["large"][0]
		a.At = l.TS
		a.Detail = fmt.Sprintf("%.2f in %s at %s, then %.2f in %s %v later", s.Amount, s.Country, s.TS.Format("15:04:05"),
			l.Amount, l.Country, l.TS.Sub(s.TS).Round(time.Millisecond))
	default:
		d := m["declined"]
		a.At = d[len(d)-1].TS
		var amts []string
		for _, t := range d {
			amts = append(amts, fmt.Sprintf("%.2f", t.Amount))
		}
		a.Detail = fmt.Sprintf("declined %s from %s in %v", strings.Join(amts, ", "), d[0].TS.Format("15:04:05"),
			d[len(d)-1].TS.Sub(d[0].TS).Round(time.Millisecond))
	}
	return a
}

// alertRecord is an alert in topic fraud-alerts: the card as key, the
// alert as JSON, the last event's time as timestamp.
func alertRecord(a alert, rec *wlog.Record) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	rec.Key = append(rec.Key, a.Card...)
	rec.Value = append(rec.Value, b...)
	rec.Timestamp = a.At.UnixMilli()
	return nil
}
