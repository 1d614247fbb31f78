package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres"
	"github.com/weirstream/weir/internal/app/cdcview"
	"github.com/weirstream/weir/internal/testing/pgtest"
)

type cdcOpts struct {
	dsn         string
	orders      int
	writers     int
	slot        string
	parallelism int
	seed        uint64
	web         webFlags
	stderr      io.Writer
}

func newDemoCDC() *cobra.Command {
	o := cdcOpts{orders: 20000, writers: 4, slot: "weir_demo_cdc", parallelism: 2, seed: 1}
	cmd := &cobra.Command{
		Use:   "cdc",
		Short: "Keep a per-customer totals view in sync with PostgreSQL through CDC",
		Long: `The alternative to dual writes, visible. Writers change a table of orders
concurrently (new orders, changed amounts, orders moving to another customer,
deletes, transfers, rolled-back transactions); a weir job follows the table's
changes through a logical replication slot (the postgres-cdc source: a
consistent snapshot, then the WAL) and keeps the view weir_demo_customer_totals
(customer, total, orders) with the upsert sink, deleting customers that have no
order left. When the writers stop, the demo waits for the view to catch up and
prints it beside SELECT customer, sum(amount), count(*) FROM weir_demo_orders
GROUP BY customer: they are equal.

--dsn names the database (its role needs REPLICATION, the server wal_level =
logical); the tables weir_demo_orders and weir_demo_customer_totals are dropped
and created there, and the slot and publication are dropped at the end.
Without --dsn a throwaway server is started in a temporary directory (as
scripts/postgres.sh start does) and removed at the end. Send SIGUSR1 to the
process (kill -USR1 PID) to compare the view with the SELECT at any moment:
mid-run the view trails the source by the replication lag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			check := make(chan os.Signal, 1)
			signal.Notify(check, syscall.SIGUSR1)
			defer signal.Stop(check)
			o.stderr = cmd.ErrOrStderr()
			return runDemoCDC(cmd.Context(), cmd.OutOrStdout(), o, check)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dsn, "dsn", "", "PostgreSQL connection string (default: start a throwaway server)")
	f.IntVar(&o.orders, "orders", o.orders, "operations the writers make in all")
	f.IntVar(&o.writers, "writers", o.writers, "concurrent writers")
	f.StringVar(&o.slot, "slot", o.slot, "replication slot (and publication) name")
	f.IntVar(&o.parallelism, "parallelism", o.parallelism, "job parallelism")
	f.Uint64Var(&o.seed, "seed", o.seed, "seed of the writers' choices")
	o.web.add(cmd, "control.token in the demo's temporary checkpoint directory")
	return cmd
}

func runDemoCDC(ctx context.Context, out io.Writer, o cdcOpts, check <-chan os.Signal) error {
	if o.writers < 1 || o.orders < o.writers {
		return fmt.Errorf("demo cdc: --writers %d, --orders %d: want at least one writer and one operation each", o.writers, o.orders)
	}
	if o.dsn == "" {
		fmt.Fprintln(out, "starting a throwaway PostgreSQL server (wal_level=logical)...")
		s, err := pgtest.Start(ctx, 2*time.Minute)
		if err != nil {
			return fmt.Errorf("demo cdc: no --dsn, and: %w", err)
		}
		defer s.Stop()
		o.dsn = s.DSN
		fmt.Fprintf(out, "server in %s\n", s.Dir)
	}
	c := cdcview.Config{DSN: o.dsn, Slot: o.slot, Source: "weir_demo_orders", View: "weir_demo_customer_totals", Group: "customer", Value: "amount"}
	conn, err := pgx.Connect(ctx, o.dsn)
	if err != nil {
		return fmt.Errorf("demo cdc: %w", err)
	}
	defer conn.Close(context.Background())
	// A slot left by an interrupted run goes with its tables.
	if err := postgres.DropCDC(ctx, c.CDC()); err != nil {
		return fmt.Errorf("demo cdc: %w", err)
	}
	defer postgres.DropCDC(context.Background(), c.CDC())
	if err := cdcview.Setup(ctx, conn, c); err != nil {
		return err
	}
	ckDir, err := os.MkdirTemp("", "weir-demo-cdc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(ckDir)

	var st cdcview.Stats
	// Some orders before the job starts: its snapshot.
	if err := cdcview.Writers(ctx, o.dsn, c, o.writers, max(1, o.orders/o.writers/10), o.seed, &st); err != nil {
		return err
	}
	opts := []weir.JobOption{weir.Parallelism(o.parallelism), weir.Checkpointing(200*time.Millisecond, ckDir)}
	if o.stderr != nil {
		opts = append(opts, o.web.options(o.stderr, ckDir, "")...)
	}
	job := cdcview.Build(c, opts...)
	jctx, stopJob := context.WithCancel(ctx)
	defer stopJob()
	jobDone := make(chan error, 1)
	go func() { jobDone <- job.Run(jctx) }()
	werr := make(chan error, 1)
	start := time.Now()
	go func() { werr <- cdcview.Writers(ctx, o.dsn, c, o.writers, o.orders/o.writers, o.seed+1, &st) }()
	fmt.Fprintf(out, "%d writers changing %s; the job keeps %s through slot %s (kill -USR1 %d to compare)\n",
		o.writers, c.Source, c.View, o.slot, os.Getpid())

	compare := func(final bool) (bool, error) {
		diff, groups, err := cdcview.Diff(ctx, conn, c)
		if err != nil {
			return false, err
		}
		if !final {
			if diff == "" {
				fmt.Fprintf(out, "[%v] the view equals the SELECT (%d customers)\n", time.Since(start).Round(time.Millisecond), groups)
			} else {
				fmt.Fprintf(out, "[%v] the view trails the source: %s\n", time.Since(start).Round(time.Millisecond), diff)
			}
		}
		return diff == "", nil
	}
	for writing := true; writing; {
		select {
		case err := <-werr:
			if err != nil {
				return err
			}
			writing = false
		case err := <-jobDone:
			return fmt.Errorf("demo cdc: the job ended: %w", err)
		case <-check:
			if _, err := compare(false); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintf(out, "writers done in %v: %s\n", time.Since(start).Round(time.Millisecond), &st)
	stopped := time.Now()
	// Wait for the view to catch up: a condition with a deadline.
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var equal bool
	for {
		if equal, err = compare(true); err != nil || equal || time.Now().After(deadline) {
			break
		}
		select {
		case err := <-jobDone:
			return fmt.Errorf("demo cdc: the job ended: %w", err)
		case <-check:
			compare(false)
		case <-tick.C:
		}
	}
	if err != nil {
		return err
	}
	lag := time.Since(stopped)
	if err := printViews(ctx, out, conn, c); err != nil {
		return err
	}
	m := job.Metrics()
	stopJob()
	<-jobDone
	if !equal {
		return fmt.Errorf("demo cdc: the view did not catch up with the source within a minute")
	}
	fmt.Fprintf(out, "the view equals the SELECT of the source (caught up %v after the writers stopped; %d checkpoints)\n",
		lag.Round(time.Millisecond), m.Checkpoints.Completed)
	return nil
}

// printViews prints the view beside the SELECT it stands for.
func printViews(ctx context.Context, out io.Writer, conn *pgx.Conn, c cdcview.Config) error {
	read := func(q string) (map[string][2]int64, error) {
		rs, err := conn.Query(ctx, q)
		if err != nil {
			return nil, err
		}
		m := map[string][2]int64{}
		for rs.Next() {
			var k string
			var v [2]int64
			if err := rs.Scan(&k, &v[0], &v[1]); err != nil {
				return nil, err
			}
			m[k] = v
		}
		return m, rs.Err()
	}
	view, err := read("SELECT customer, total, rows FROM " + c.View)
	if err != nil {
		return err
	}
	sel, err := read("SELECT customer, sum(amount)::bigint, count(*) FROM " + c.Source + " GROUP BY customer")
	if err != nil {
		return err
	}
	keys := map[string]bool{}
	for k := range view {
		keys[k] = true
	}
	for k := range sel {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "%-10s %24s   %24s\n", "customer", "view: total / orders", "SELECT: total / orders")
	fmt.Fprintln(out, strings.Repeat("-", 62))
	for _, k := range names {
		cell := func(m map[string][2]int64) string {
			v, ok := m[k]
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%d / %d", v[0], v[1])
		}
		fmt.Fprintf(out, "%-10s %24s   %24s\n", k, cell(view), cell(sel))
	}
	return nil
}
