// Command brokerproc runs a weir broker as its own process for the
// broker's kill tests: the broker package and nothing else of weir, so
// that it builds quickly (`weir broker` is the command users run).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/weirstream/weir/broker"
)

func main() {
	dir := flag.String("data-dir", "", "data directory")
	listen := flag.String("listen", "127.0.0.1:9092", "listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	b, err := broker.Start(ctx, broker.Config{DataDir: *dir, Listen: *listen, InitialRebalanceDelay: -1})
	if err != nil {
		fmt.Fprintln(os.Stderr, "brokerproc:", err)
		os.Exit(1)
	}
	if err := b.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "brokerproc:", err)
		os.Exit(1)
	}
}
