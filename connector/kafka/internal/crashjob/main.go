// Command crashjob is the process the Kafka crash test kills: it reads
// "key,ts,seq" events from a topic of the embedded log (--log-dir) or of
// Kafka (bounded), counts them per key per
// second of event time, and writes "key@start=count" records to another
// topic through the exactly-once sink, checkpointing every --interval.
// Started again with the same flags it resumes from its latest checkpoint.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/internal/jobshapes"
	wlog "github.com/weirstream/weir/connector/log"
)

// event is the job's input (jobshapes.Event).
type event = jobshapes.Event

func main() {
	var (
		brokers  = flag.String("brokers", "", "seed brokers, comma separated")
		in       = flag.String("in", "in", "input topic")
		out      = flag.String("out", "out", "output topic")
		prefix   = flag.String("txn-prefix", "crashjob", "transactional id prefix")
		ckDir    = flag.String("checkpoint-dir", "", "checkpoint directory")
		interval = flag.Duration("interval", 50*time.Millisecond, "checkpoint interval")
		pace     = flag.Int64("pace", 0, "sleep 1ms every this many events (0: no pacing)")
		par      = flag.Int("parallelism", 2, "parallelism")
		logDir   = flag.String("log-dir", "", "read --in from the embedded log in this directory instead of Kafka")
	)
	flag.Parse()
	if *brokers == "" || *ckDir == "" {
		fmt.Fprintln(os.Stderr, "crashjob: --brokers and --checkpoint-dir are required")
		os.Exit(2)
	}
	job := weir.NewJob("kafka-crashjob", weir.Parallelism(*par), weir.Checkpointing(*interval, *ckDir),
		weir.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	seeds := strings.Split(*brokers, ",")
	var input weir.Source[event] = kafka.Source(seeds, []string{*in}, jobshapes.Decode, kafka.Bounded())
	if *logDir != "" {
		input = wlog.Source(*logDir, *in, func(r wlog.Record) (event, error) { return jobshapes.Decode(&kgo.Record{Value: r.Value}) })
	}
	src := weir.FromSource(job, "events", input,
		weir.BoundedOutOfOrderness(100*time.Millisecond, func(e event) time.Time { return time.UnixMilli(e.TS) }), weir.UID("events"))
	if *pace > 0 {
		src = weir.Map(src, func(e event) event {
			if e.Seq%*pace == 0 {
				time.Sleep(time.Millisecond)
			}
			return e
		})
	}
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e event) string { return e.Key }), weir.Tumbling(time.Second)),
		weir.Count[event](), weir.UID("counts"))
	weir.To(counts, kafka.Sink(seeds, func(r weir.WindowResult[string, int64], rec *kgo.Record) error {
		rec.Key = append(rec.Key, r.Key...)
		rec.Value = fmt.Appendf(rec.Value, "%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
		return nil
	}, kafka.DefaultTopic(*out), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(*prefix)), weir.UID("sink"))
	if err := job.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "crashjob:", err)
		os.Exit(1)
	}
}
