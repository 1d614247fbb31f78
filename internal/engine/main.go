package engine

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Main runs job as the program's main function: it reads the operational
// flags every job needs from the command line, runs the job until it ends
// or the process gets SIGINT or SIGTERM, and exits (1 on failure).
//
//	--parallelism N            default parallelism
//	--checkpoint-dir DIR       checkpoint into DIR (and resume from it)
//	--checkpoint-interval D    time between checkpoints (default 10s)
//	--restore-from PATH        start from a savepoint or checkpoint
//	--allow-non-restored-state drop restored state of removed operators
//	--start-fresh              start empty if no checkpoint is usable
//	--allow-duplicates         restore behind committed output (duplicates it)
//	--metrics-addr ADDR        serve Prometheus metrics (loopback unless a host is given)
//	--control-addr ADDR        serve the control endpoint (for `weir savepoint`; needs --checkpoint-dir)
//	--savepoint-dir DIR        where that endpoint's savepoints go (default DIR/savepoints)
//	--web-addr ADDR            serve the web dashboard and REST API (loopback unless a host is given)
//	--web-token-file PATH      where its token goes (default DIR/control.token)
//	--log-level LEVEL          debug, info, warn or error (default info)
//	--app-id ID                group mode (AppID): the processes with this id share the Kafka input
func Main(job *Job) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := MainArgs(ctx, job, os.Args[1:], os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// MainArgs is Main with explicit arguments and log output, for tests and
// programs with flags of their own (pass what they did not parse).
func MainArgs(ctx context.Context, job *Job, args []string, logOut io.Writer) error {
	fs := flag.NewFlagSet(job.name, flag.ContinueOnError)
	fs.SetOutput(logOut)
	par := fs.Int("parallelism", 0, "default parallelism (0: as the job says)")
	ckDir := fs.String("checkpoint-dir", "", "checkpoint into this directory and resume from it")
	ckInterval := fs.Duration("checkpoint-interval", 10*time.Second, "time between checkpoints")
	restore := fs.String("restore-from", "", "start from this savepoint or checkpoint directory")
	allowNR := fs.Bool("allow-non-restored-state", false, "drop restored state of operators the job no longer has")
	fresh := fs.Bool("start-fresh", false, "start empty when no checkpoint is usable")
	allowDup := fs.Bool("allow-duplicates", false, "restore a checkpoint older than output the sinks committed, committing it again")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at this address")
	controlAddr := fs.String("control-addr", "", "serve the control endpoint, which the weir savepoint command talks to, at this address (needs --checkpoint-dir)")
	spDir := fs.String("savepoint-dir", "", "savepoints asked for through the control endpoint go under this directory (default: the checkpoint directory's savepoints/)")
	webAddr := fs.String("web-addr", "", "serve the web dashboard and REST API at this address (loopback unless a host is given; off by default)")
	webToken := fs.String("web-token-file", "", "write the web server's token to this file, mode 0600 (default: the checkpoint directory's control.token)")
	level := fs.String("log-level", "info", "log level: debug, info, warn, error")
	appID := fs.String("app-id", "", "run as one process of this application id: the processes started with it share the job's Kafka input (docs/scale-out.md)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("weir: --log-level: %w", err)
	}
	opts := []JobOption{Logger(slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: lv})))}
	if *par > 0 {
		opts = append(opts, Parallelism(*par))
	}
	if *ckDir != "" {
		opts = append(opts, Checkpointing(*ckInterval, *ckDir))
	}
	if *restore != "" {
		opts = append(opts, RestoreFrom(*restore))
	}
	if *allowNR {
		opts = append(opts, AllowNonRestoredState())
	}
	if *fresh {
		opts = append(opts, StartFresh())
	}
	if *allowDup {
		opts = append(opts, AllowDuplicateOutput())
	}
	if *metricsAddr != "" {
		opts = append(opts, MetricsAddr(*metricsAddr))
	}
	if *controlAddr != "" {
		opts = append(opts, ControlAddr(*controlAddr))
	}
	if *spDir != "" {
		opts = append(opts, SavepointDir(*spDir))
	}
	if *webAddr != "" {
		opts = append(opts, WebAddr(*webAddr))
	}
	if *webToken != "" {
		opts = append(opts, WebTokenFile(*webToken))
	}
	if *appID != "" {
		opts = append(opts, AppID(*appID))
	}
	for _, o := range opts {
		o.jobOption().fn(&job.cfg)
	}
	return job.Run(ctx)
}
