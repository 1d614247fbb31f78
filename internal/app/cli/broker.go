package cli

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weirstream/weir/broker"
	wlog "github.com/weirstream/weir/connector/log"
)

// newBroker is `weir broker`: the embedded log served over the Kafka
// protocol.
func newBroker() *cobra.Command {
	var (
		cfg                broker.Config
		certFile, keyFile  string
		usersFile, syncArg string
		rebalanceDelay     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Serve the embedded log over the Kafka protocol (a single-node broker)",
		Long: `Serve the topics of the embedded log (--data-dir) to any Kafka client:
producers, consumers, consumer groups and transactions. It is one node:
where you outgrow it, point the same jobs at a Kafka cluster.

On loopback it runs open (and says so). On any other address it needs
TLS (--tls-cert, --tls-key) and SASL/PLAIN users (--users FILE, lines of
user:password).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if certFile != "" || keyFile != "" {
				cert, err := tls.LoadX509KeyPair(certFile, keyFile)
				if err != nil {
					return fmt.Errorf("broker: TLS certificate: %w", err)
				}
				cfg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
			}
			if usersFile != "" {
				users, err := readUsers(usersFile)
				if err != nil {
					return err
				}
				cfg.Users = users
			}
			switch syncArg {
			case "batch":
			case "none":
				p := wlog.SyncNever()
				cfg.Sync = &p
			default:
				d, err := time.ParseDuration(syncArg)
				if err != nil || d <= 0 {
					return fmt.Errorf("--sync %q: want batch, none or a duration such as 10ms", syncArg)
				}
				p := wlog.SyncEvery(d)
				cfg.Sync = &p
			}
			cfg.InitialRebalanceDelay = rebalanceDelay
			if rebalanceDelay == 0 {
				cfg.InitialRebalanceDelay = -1
			}
			b, err := broker.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "weir broker listening on %s (data %s)\n", b.Addr(), cfg.DataDir)
			return b.Wait()
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", defaultDataDir, "directory of the embedded log")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:9092", "address to listen on")
	f.StringVar(&cfg.Advertise, "advertise", "", "host:port clients are told to connect to (default: the listen address)")
	f.IntVar(&cfg.DefaultPartitions, "partitions", 1, "partitions of a topic created without a count")
	f.BoolVar(&cfg.AutoCreateTopics, "auto-create-topics", false, "create topics that producers and metadata requests name")
	f.StringVar(&syncArg, "sync", "batch", "fsync of produced batches: batch (each, before the answer), a duration, or none")
	f.DurationVar(&rebalanceDelay, "initial-rebalance-delay", 3*time.Second, "wait this long for more members of a new group (Kafka's group.initial.rebalance.delay.ms)")
	f.StringVar(&certFile, "tls-cert", "", "TLS certificate (PEM)")
	f.StringVar(&keyFile, "tls-key", "", "TLS private key (PEM)")
	f.StringVar(&usersFile, "users", "", "SASL/PLAIN users: a file of user:password lines")
	return cmd
}

// readUsers reads a users file: user:password per line, # comments.
func readUsers(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("broker: users: %w", err)
	}
	defer f.Close()
	users := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		u, p, ok := strings.Cut(s, ":")
		if !ok || u == "" || p == "" {
			return nil, fmt.Errorf("broker: %s:%d: want user:password", path, line)
		}
		users[u] = p
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("broker: users: %w", err)
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("broker: %s has no users", path)
	}
	return users, nil
}
