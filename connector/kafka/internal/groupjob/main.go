// Command groupjob is the process the group-mode tests start several
// times: a job with weir.AppID that reads "key,ts,seq" events from a Kafka
// topic and writes "key,ts,seq,partition" records (the partition it read
// the event from) to another topic, in the process's Kafka transactions.
// With --keyed the events cross a KeyBy first (in group mode, through a
// repartition topic): "tag" passes each event through a keyed process
// function that appends the key and event time it sees
// ("key,ts,seq,partition,key,ts"); "window" counts events per key and
// tumbling second ("key,window start,count"); "state" is keyed and
// stateful: per key a running count in a ValueState ("count,key,seq,n":
// the n-th event of the key) and a count per tumbling second of event
// time ("window,key,start,n"), so that the keyed state moves with the
// repartition partitions through the changelog topics. "join" reads a
// second topic (--in2) too and joins the two by key, through one
// repartition topic per join: a window join over tumbling seconds
// ("wjoin,key,start,left seq,right seq") and an interval join within
// ±500ms of event time ("ijoin,key,left seq,right seq"). "chain" is a
// chain of KeyBys (two repartition topics, the second fed by the first
// stage's keyed operator): counts per key and hopping window (2s, sliding
// 1s), then per 5 s bucket of the windows' ends the sum of the counts and
// the largest count ("bucket=sum count key"; jobshapes.Chain).
// "union" reads --in2 too and keys two shapes of unions into counts per
// key and tumbling second ("tag,key,start,count"): a union of a union
// (tag n: the two inputs and the first again with its keys prefixed "x")
// and a Map and a Filter after a union (tag m: the two inputs' events
// regrouped by seq mod 3, every fifth dropped); jobshapes.Union.
// The processes of one --app-id share the input's partitions; each runs
// until it is killed or its context ends (SIGTERM, SIGINT), or, with
// --bounded, until the group has read the whole input.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
	"github.com/weirstream/weir/connector/kafka/internal/jobshapes"
)

// event is the jobs' input (jobshapes.Event: key, ts, seq and the
// partition it was read from).
type event = jobshapes.Event

func main() {
	var (
		brokers = flag.String("brokers", "", "seed brokers, comma separated")
		appID   = flag.String("app-id", "", "application id (group mode); empty: one process reads everything")
		in      = flag.String("in", "in", "input topic")
		out     = flag.String("out", "out", "output topic")
		bounded = flag.Bool("bounded", false, "stop at the end of the input")
		pace    = flag.Int64("pace", 0, "sleep --pace-sleep every this many events (0: no pacing)")
		paceFor = flag.Duration("pace-sleep", time.Millisecond, "how long --pace sleeps")
		par     = flag.Int("parallelism", 2, "parallelism")
		session = flag.Duration("session-timeout", 0, "the group's session timeout (0: franz-go's default)")
		commit  = flag.Duration("commit-interval", 50*time.Millisecond, "commit interval")
		verbose = flag.Bool("v", false, "log at info level")
		keyed   = flag.String("keyed", "", `"tag", "window", "state", "join", "chain" or "union": the events cross a KeyBy (see the package comment)`)
		rparts  = flag.Int("repartition-partitions", 0, "partitions of the repartition topic (0: the input's)")
		in2     = flag.String("in2", "in2", "second input topic (--keyed join)")
		lag     = flag.Duration("lag", 0, `--keyed chain: sleep this long per first-stage result (this process's first stage lags behind the others')`)
		batch   = flag.Int("batch-size", 0, "the job's batch size (0: weir's default); small batches with --pace let barriers, and so commits with open state, come often")
		backend = flag.String("state-backend", "heap", "keyed state backend: heap or pebble (in --state-dir)")
		sdir    = flag.String("state-dir", "", "directory of the Pebble state (--state-backend pebble; default: the temporary directory)")
	)
	flag.Parse()
	if *brokers == "" {
		fmt.Fprintln(os.Stderr, "groupjob: --brokers is required")
		os.Exit(2)
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	opts := []weir.JobOption{weir.Parallelism(*par), weir.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))}
	if *appID != "" {
		opts = append(opts, weir.AppID(*appID), weir.Checkpointing(*commit, ""))
	}
	if *batch > 0 {
		opts = append(opts, weir.BatchSize(*batch))
	}
	switch *backend {
	case "heap":
	case "pebble":
		opts = append(opts, weir.PebbleState(*sdir, 0))
	default:
		fmt.Fprintf(os.Stderr, "groupjob: --state-backend %q: want heap or pebble\n", *backend)
		os.Exit(2)
	}
	job := weir.NewJob("groupjob", opts...)
	seeds := strings.Split(*brokers, ",")
	srcOpts := []kafka.SourceOption{kafka.ReadCommitted()}
	if *bounded {
		srcOpts = append(srcOpts, kafka.Bounded())
	}
	if *rparts > 0 {
		srcOpts = append(srcOpts, kafka.RepartitionPartitions(*rparts))
	}
	if *session > 0 {
		srcOpts = append(srcOpts, kafka.ClientOptions(kgo.SessionTimeout(*session), kgo.HeartbeatInterval(*session/5),
			kgo.RebalanceTimeout(2**session)))
	}
	evs := weir.FromSource(job, "events", kafka.Source(seeds, []string{*in}, jobshapes.Decode, srcOpts...),
		weir.MonotonousTimestamps(jobshapes.EventTime), weir.UID("events"))
	paced := func(s *weir.Stream[event]) *weir.Stream[event] {
		if *pace <= 0 {
			return s
		}
		return weir.Map(s, func(e event) event {
			if e.Seq%*pace == 0 {
				time.Sleep(*paceFor)
			}
			return e
		})
	}
	evs = paced(evs)
	sinkOpts := []kafka.SinkOption{kafka.DefaultTopic(*out), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(*out)}
	switch *keyed {
	case "":
		weir.To(evs, kafka.Sink(seeds, func(e event, rec *kgo.Record) error {
			rec.Key = append(rec.Key, e.Key...)
			rec.Value = fmt.Appendf(rec.Value, "%s,%d,%d,%d", e.Key, e.TS, e.Seq, e.Partition)
			return nil
		}, sinkOpts...), weir.UID("sink"))
	case "tag":
		tagged := weir.Process(weir.KeyBy(evs, func(e event) string { return e.Key }),
			weir.ProcessFunc[string, event, string](func(ctx *weir.KeyedContext[string, string], e event) error {
				ctx.Emit(fmt.Sprintf("%s,%d,%d,%d,%s,%d", e.Key, e.TS, e.Seq, e.Partition, ctx.Key(), ctx.Timestamp().UnixMilli()))
				return nil
			}), weir.UID("tag"))
		weir.To(tagged, kafka.Sink(seeds, func(v string, rec *kgo.Record) error {
			rec.Key = append(rec.Key, v[:strings.IndexByte(v, ',')]...)
			rec.Value = append(rec.Value, v...)
			return nil
		}, sinkOpts...), weir.UID("sink"))
	case "window":
		counts := weir.Aggregate(weir.Window(weir.KeyBy(evs, func(e event) string { return e.Key }), weir.Tumbling(time.Second)),
			weir.Count[event](), weir.UID("count"))
		weir.To(counts, kafka.Sink(seeds, func(r weir.WindowResult[string, int64], rec *kgo.Record) error {
			rec.Key = append(rec.Key, r.Key...)
			rec.Value = fmt.Appendf(rec.Value, "%s,%d,%d", r.Key, r.Start.UnixMilli(), r.Value)
			return nil
		}, sinkOpts...), weir.UID("sink"))
	case "state":
		keyedJob(evs, seeds, *out)
	case "chain":
		jobshapes.Chain(evs, *lag, kafka.Sink(seeds, func(v string, rec *kgo.Record) error {
			rec.Key = append(rec.Key, v[:strings.IndexByte(v, '=')]...)
			rec.Value = append(rec.Value, v...)
			return nil
		}, sinkOpts...))
	case "join":
		right := weir.FromSource(job, "right", kafka.Source(seeds, []string{*in2}, jobshapes.Decode, srcOpts...),
			weir.MonotonousTimestamps(jobshapes.EventTime), weir.UID("right"))
		joinJob(evs, paced(right), seeds, *out)
	case "union":
		right := weir.FromSource(job, "right", kafka.Source(seeds, []string{*in2}, jobshapes.Decode, srcOpts...),
			weir.MonotonousTimestamps(jobshapes.EventTime), weir.UID("right"))
		jobshapes.Union(evs, paced(right), kafka.Sink(seeds, func(v string, rec *kgo.Record) error {
			rec.Key = append(rec.Key, strings.Split(v, ",")[1]...)
			rec.Value = append(rec.Value, v...)
			return nil
		}, sinkOpts...))
	default:
		fmt.Fprintf(os.Stderr, "groupjob: --keyed %q: want tag, window, state, join, chain or union\n", *keyed)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := job.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "groupjob:", err)
		os.Exit(1)
	}
}

// keyedJob adds the keyed stages: a running count per key and a count
// per key and tumbling second.
func keyedJob(evs *weir.Stream[event], seeds []string, out string) {
	ks := weir.KeyBy(evs, func(e event) string { return e.Key })
	counts := weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, event, string] { return &jobshapes.Counter{} }, weir.UID("counts"))
	windows := weir.Map(weir.Aggregate(weir.Window(ks, weir.Tumbling(time.Second)), weir.Count[event](), weir.UID("windows")),
		func(r weir.WindowResult[string, int64]) string {
			return fmt.Sprintf("window,%s,%d,%d", r.Key, r.Start.UnixMilli(), r.Value)
		})
	// Two sinks: each its own transactional ids outside group mode.
	sink := func(name string) weir.Sink[string] {
		return kafka.Sink(seeds, func(v string, rec *kgo.Record) error {
			rec.Key = append(rec.Key, strings.Split(v, ",")[1]...)
			rec.Value = append(rec.Value, v...)
			return nil
		}, kafka.DefaultTopic(out), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(out+"-"+name))
	}
	weir.To(counts, sink("counts"), weir.UID("count-sink"))
	weir.To(windows, sink("windows"), weir.UID("window-sink"))
}

// joinJob adds the two joins of left and right by key: a window join
// over tumbling seconds and an interval join within ±500ms.
func joinJob(left, right *weir.Stream[event], seeds []string, out string) {
	key := func(e event) string { return e.Key }
	lk, rk := weir.KeyBy(left, key), weir.KeyBy(right, key)
	wj := weir.WindowJoin(lk, rk, weir.Tumbling(time.Second), func(k string, w weir.WindowInfo, l, r event) string {
		return fmt.Sprintf("wjoin,%s,%d,%d,%d", k, w.Start.UnixMilli(), l.Seq, r.Seq)
	}, weir.UID("wjoin"))
	ij := weir.IntervalJoin(lk, rk, -500*time.Millisecond, 500*time.Millisecond, func(k string, l, r event) string {
		return fmt.Sprintf("ijoin,%s,%d,%d", k, l.Seq, r.Seq)
	}, weir.UID("ijoin"))
	sink := func(name string) weir.Sink[string] {
		return kafka.Sink(seeds, func(v string, rec *kgo.Record) error {
			rec.Key = append(rec.Key, strings.Split(v, ",")[1]...)
			rec.Value = append(rec.Value, v...)
			return nil
		}, kafka.DefaultTopic(out), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(out+"-"+name))
	}
	weir.To(wj, sink("wjoin"), weir.UID("wjoin-sink"))
	weir.To(ij, sink("ijoin"), weir.UID("ijoin-sink"))
}
