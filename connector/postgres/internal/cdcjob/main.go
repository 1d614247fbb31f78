// Command cdcjob is the process the CDC crash test kills: the cdcview job
// (a PostgreSQL table's changes through the CDC source into a per-group
// totals view) with checkpoints every --interval. It runs until killed;
// started again with the same flags it resumes from the latest checkpoint
// in --checkpoint-dir. The tables must exist (cdcview.Setup).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/app/cdcview"
)

func main() {
	var (
		c        cdcview.Config
		ckDir    = flag.String("checkpoint-dir", "", "checkpoint directory")
		interval = flag.Duration("interval", 50*time.Millisecond, "checkpoint interval")
	)
	flag.StringVar(&c.DSN, "dsn", "", "PostgreSQL connection string")
	flag.StringVar(&c.Slot, "slot", "", "replication slot")
	flag.StringVar(&c.Source, "source", "", "source table")
	flag.StringVar(&c.View, "view", "", "view table")
	flag.StringVar(&c.Group, "group", "owner", "group column")
	flag.StringVar(&c.Value, "value", "balance", "value column")
	flag.Parse()
	if c.DSN == "" || c.Slot == "" || c.Source == "" || c.View == "" || *ckDir == "" {
		fmt.Fprintln(os.Stderr, "cdcjob: --dsn, --slot, --source, --view and --checkpoint-dir are required")
		os.Exit(2)
	}
	job := cdcview.Build(c, weir.Parallelism(2), weir.Checkpointing(*interval, *ckDir),
		weir.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err := job.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "cdcjob:", err)
		os.Exit(1)
	}
}
