// Package cli is the weir command: the demo and benchmark jobs and, as the
// project grows, administration of logs and checkpoints. cmd/weir only
// calls Main.
package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs the weir command with os.Args and returns the exit code.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs the weir command with args, writing to stdout and stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := NewRoot(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		// the engine's errors already begin with "weir: "
		fmt.Fprintln(stderr, "weir:", strings.TrimPrefix(err.Error(), "weir: "))
		return 1
	}
	return 0
}

// NewRoot builds the command tree.
func NewRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "weir",
		Short:         "weir is a stateful stream processor",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	heapFloor := root.PersistentFlags().Int("heap-floor-mib", 128, "MiB the garbage collector's heap goal never falls below twice of (allocated, never touched; 0: off; ignored when GOGC or GOMEMLIMIT is set)")
	root.PersistentPreRun = func(*cobra.Command, []string) { setHeapFloor(*heapFloor) }
	demo := group("demo", "Run a built-in demo job")
	demo.AddCommand(newDemoAdclicks(), newDemoFraud(), newDemoCDC(), newDemoBroker())
	bench := group("bench", "Run a built-in benchmark")
	bench.AddCommand(newBenchAdclicks(), newBenchLog(), newBenchNexmark(), newBenchCEP(), newBenchGroup(), newBenchBroker(), newBenchCheckpoint())
	root.AddCommand(demo, bench, newCheckpoints(), newSavepoint(), newNexmark(), newSQL(), newGroup(), newBroker())
	root.AddCommand(newTopicCommands()...)
	checkFlagsTree(root)
	return root
}

// group is a command that only holds subcommands: an unknown subcommand is
// an error, not a silent help page.
func group(use, short string) *cobra.Command {
	return &cobra.Command{
		Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}
