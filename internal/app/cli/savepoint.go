package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/webauth"
)

func newSavepoint() *cobra.Command {
	var addr, ckDir, tokenFile string
	var stop bool
	cmd := &cobra.Command{
		Use:   "savepoint PATH",
		Short: "Take a savepoint of a running job into PATH (through its local control endpoint)",
		Long: `Asks a running job for a savepoint into PATH, a directory that must not exist,
and waits until it is complete; prints where it was written. PATH is a name under
the job's savepoint directory (--savepoint-dir of the job; by default
CHECKPOINT_DIR/savepoints), or an absolute path inside it: the job refuses any
other, and any containing "..".

The job is found by --checkpoint-dir, where a running job writes the address of its
control endpoint (control.addr) and its token (control.token, mode 0600), which
is sent as "Authorization: Bearer". --control names the address instead; the
token then comes from --checkpoint-dir or --token-file.
With --stop the job ends once the savepoint is complete; restore it, possibly at
another parallelism, with the job's restore option (weir.RestoreFrom).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var token string
			if ckDir != "" {
				a, t, err := control.Endpoint(filepath.Clean(ckDir))
				if err != nil {
					return err
				}
				if addr == "" {
					addr = a
				}
				token = t
			} else if addr == "" {
				return fmt.Errorf("give --checkpoint-dir DIR (or --control ADDR with --token-file FILE)")
			}
			if tokenFile != "" {
				t, err := webauth.ReadToken(tokenFile)
				if err != nil {
					return fmt.Errorf("--token-file: %w", err)
				}
				token = t
			}
			if token == "" {
				return fmt.Errorf("--control %s: give --checkpoint-dir or --token-file for the job's token", addr)
			}
			got, err := control.RequestSavepoint(cmd.Context(), addr, token, args[0], stop)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), got)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "control", "", "address of the job's control endpoint (default: read from --checkpoint-dir)")
	f.StringVar(&ckDir, "checkpoint-dir", "", "checkpoint directory of the running job (holds control.addr and control.token)")
	f.StringVar(&tokenFile, "token-file", "", "file holding the job's token (default: control.token in --checkpoint-dir)")
	f.BoolVar(&stop, "stop", false, "stop the job once the savepoint is complete")
	return cmd
}
