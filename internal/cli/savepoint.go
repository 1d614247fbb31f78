package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir"
)

func newSavepoint() *cobra.Command {
	var control, ckDir string
	var stop bool
	cmd := &cobra.Command{
		Use:   "savepoint PATH",
		Short: "Take a savepoint of a running job into PATH (through its local control endpoint)",
		Long: `Asks a running job for a savepoint into PATH, a directory that must not exist,
and waits until it is complete. The job is found by --control (the address of its
control endpoint) or by --checkpoint-dir (where a running job writes that address).
With --stop the job ends once the savepoint is complete; restore it, possibly at
another parallelism, with the job's restore option (weir.RestoreFrom).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			addr := control
			if addr == "" {
				if ckDir == "" {
					return fmt.Errorf("give --control ADDR or --checkpoint-dir DIR")
				}
				b, err := os.ReadFile(filepath.Join(filepath.Clean(ckDir), weir.ControlFile))
				if err != nil {
					return fmt.Errorf("no running job found for %s: %w", ckDir, err)
				}
				addr = strings.TrimSpace(string(b))
			}
			path, err := filepath.Abs(filepath.Clean(args[0]))
			if err != nil {
				return err
			}
			got, err := weir.RequestSavepoint(cmd.Context(), addr, path, stop)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), got)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&control, "control", "", "address of the job's control endpoint")
	f.StringVar(&ckDir, "checkpoint-dir", "", "checkpoint directory of the running job")
	f.BoolVar(&stop, "stop", false, "stop the job once the savepoint is complete")
	return cmd
}
