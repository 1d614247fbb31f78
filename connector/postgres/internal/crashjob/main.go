// Command crashjob is the process the PostgreSQL sink's crash test kills:
// the workload of internal/pgjob (a deterministic bounded input, from the
// embedded log with --log-dir, keyed
// tumbling-window sums and a keyed running count) written by the Upsert or
// the Transactional sink, with checkpoints every --interval. Started again
// with the same flags it resumes from the latest checkpoint. The tables
// must exist (the test creates them with pgjob.Setup).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"syscall"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/postgres/internal/pgjob"
	"github.com/weirstream/weir/internal/engine"
)

func main() {
	var (
		dsn       = flag.String("dsn", "", "PostgreSQL connection string")
		mode      = flag.String("mode", "upsert", "sink: upsert or tx")
		prefix    = flag.String("prefix", "", "table name prefix")
		ckDir     = flag.String("checkpoint-dir", "", "checkpoint directory")
		events    = flag.Int64("events", 20000, "number of events")
		rate      = flag.Float64("rate", 0, "events per second (0: unlimited)")
		interval  = flag.Duration("interval", 100*time.Millisecond, "checkpoint interval")
		failpoint = flag.String("failpoint", "", "kill this process with SIGKILL at this checkpoint stage: state-file, files-written or complete")
		failAfter = flag.Int64("failpoint-checkpoint", 2, "... of the first checkpoint with at least this id")
		logDir    = flag.String("log-dir", "", "read the events from topic events of the embedded log in this directory (written by pgjob.Fill) instead of generating them")
	)
	flag.Parse()
	if *dsn == "" || *prefix == "" || *ckDir == "" {
		fmt.Fprintln(os.Stderr, "crashjob: --dsn, --prefix and --checkpoint-dir are required")
		os.Exit(2)
	}
	opts := []weir.JobOption{
		weir.Checkpointing(*interval, *ckDir),
		weir.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	if *failpoint != "" {
		opts = append(opts, engine.CheckpointHook(func(stage engine.CheckpointStage, id int64) {
			if string(stage) == *failpoint && id >= *failAfter {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
			}
		}).(weir.JobOption))
	}
	job, _ := pgjob.Build(pgjob.Config{DSN: *dsn, Mode: *mode, Prefix: *prefix, Events: *events, Rate: *rate, LogDir: *logDir}, opts...)
	if err := job.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "crashjob:", err)
		os.Exit(1)
	}
}
