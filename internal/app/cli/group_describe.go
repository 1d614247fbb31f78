package cli

import (
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/weirstream/weir/connector/kafka"
)

// newGroup is `weir group`: the processes of a group-mode job (--app-id),
// as the Kafka cluster sees them (docs/scale-out.md).
func newGroup() *cobra.Command {
	cmd := group("group", "Inspect the processes of a job run with --app-id (a Kafka consumer group)")
	var brokers string
	var timeout time.Duration
	describe := &cobra.Command{
		Use:   "describe ID",
		Short: "Show the members of app id ID, the input partitions each owns, and the committed offset and lag per partition",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if brokers == "" {
				return errors.New("--brokers is required")
			}
			opts := []kafka.ClientOption{kafka.RetryTimeout(timeout)}
			d, err := kafka.DescribeGroup(cmd.Context(), strings.Split(brokers, ","), args[0], opts...)
			if err != nil {
				return err
			}
			return d.WriteText(cmd.OutOrStdout())
		},
	}
	describe.Flags().StringVar(&brokers, "brokers", "", "Kafka seed brokers, comma separated")
	describe.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "give up reaching the cluster after this long")
	cmd.AddCommand(describe)
	return cmd
}
