// Package groupbench is `weir bench group`: one job run as one process
// and as N processes of a group-mode job (weir.AppID), each pinned to one
// core, against a kfake cluster on loopback TCP, and the throughput of
// each (issue 15's benchmark). The parent process hosts the broker, fills
// the input topic and starts the workers, which are the weir binary
// itself (`weir bench group --worker ...`): real processes, as a
// deployment runs them.
package groupbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/kafka"
)

// JobName says which job the benchmark runs (printed with the figures).
// Its KeyBy sends every kept record through a repartition topic in group
// mode (and the running totals through a changelog topic), as issue 15's
// benchmark asks.
const JobName = "parse-filter-map-keyby-sum (Kafka source, parse CSV, filter, map, KeyBy key through a repartition topic, running total per key in ValueState, exactly-once Kafka sink)"

// Event is one input record, "key,ts,seq,amount" in the topic.
type Event struct {
	Key    []byte
	TS     int64
	Seq    int64
	Amount int64
}

// Out is one output record.
type Out struct {
	Key   []byte
	TS    int64
	Seq   int64
	Cents int64
	// Total is the running total of the key's cents, this record's
	// included (keyed state).
	Total int64
}

// Job adds the benchmark's job to job: read in (bounded: to the end
// offsets it lists when it starts), parse, keep the events whose amount
// is not a multiple of 10 (9 in 10 with the input of Fill), turn the
// amount into cents, key by the key (1000 keys with the input of Fill),
// keep a running total of cents per key in a ValueState and write each
// record with its key's total to out: one output record per kept event.
// In group mode (weir.AppID) the KeyBy goes through a repartition topic,
// the totals are written to a changelog topic, and the sink writes in
// the process's Kafka transactions.
//
// firstRecord, if set, is called once, when the process decodes its first
// record (the benchmark's start of processing).
func Job(job *weir.Job, brokers []string, in, out string, firstRecord func()) {
	var seen atomic.Bool
	decode := func(r *kgo.Record) (Event, error) {
		if firstRecord != nil && !seen.Load() && seen.CompareAndSwap(false, true) {
			firstRecord()
		}
		return Parse(r)
	}
	evs := weir.FromSource(job, "events", kafka.Source(brokers, []string{in}, decode, kafka.Bounded(), kafka.ReadCommitted()),
		weir.MonotonousTimestamps(func(e Event) time.Time { return time.UnixMilli(e.TS) }), weir.UID("events"))
	kept := weir.Filter(evs, func(e Event) bool { return e.Amount%10 != 0 }, weir.Name("filter"))
	cents := weir.Map(kept, func(e Event) Out { return Out{Key: e.Key, TS: e.TS, Seq: e.Seq, Cents: e.Amount * 100} }, weir.Name("map"))
	totals := weir.ProcessWith(weir.KeyBy(cents, func(o Out) string { return string(o.Key) }),
		func() weir.KeyedProcessFunction[string, Out, Out] { return &summer{} }, weir.UID("sum"), weir.Name("sum"))
	weir.To(totals, kafka.Sink(brokers, func(o Out, r *kgo.Record) error {
		r.Key = append(r.Key, o.Key...)
		r.Value = append(r.Value, o.Key...)
		r.Value = append(r.Value, ',')
		r.Value = strconv.AppendInt(r.Value, o.TS, 10)
		r.Value = append(r.Value, ',')
		r.Value = strconv.AppendInt(r.Value, o.Seq, 10)
		r.Value = append(r.Value, ',')
		r.Value = strconv.AppendInt(r.Value, o.Cents, 10)
		r.Value = append(r.Value, ',')
		r.Value = strconv.AppendInt(r.Value, o.Total, 10)
		return nil
	}, kafka.DefaultTopic(out), kafka.DeliveryGuarantee(kafka.ExactlyOnce), kafka.TransactionalIDPrefix(out)), weir.UID("sink"), weir.Name("sink"))
}

// summer keeps the running total of cents per key.
type summer struct {
	total *weir.ValueState[string, int64]
}

func (s *summer) Open(rc *weir.RuntimeContext[string]) error {
	s.total = weir.NewValueState[int64](rc, "total")
	return nil
}

func (s *summer) ProcessElement(ctx *weir.KeyedContext[string, Out], o Out) error {
	t, _ := s.total.Value()
	t += o.Cents
	s.total.Update(t)
	o.Total = t
	ctx.Emit(o)
	return nil
}

// Parse decodes "key,ts,seq,amount" without allocating but for the key
// (which aliases the record's value: the record is not reused).
func Parse(r *kgo.Record) (Event, error) {
	v := r.Value
	var f [4][]byte
	n, start := 0, 0
	for i := 0; i <= len(v) && n < 4; i++ {
		if i == len(v) || v[i] == ',' {
			f[n] = v[start:i]
			n++
			start = i + 1
		}
	}
	if n != 4 || start <= len(v) {
		return Event{}, fmt.Errorf("groupbench: topic %q partition %d offset %d: want key,ts,seq,amount, got %q", r.Topic, r.Partition, r.Offset, v)
	}
	e := Event{Key: f[0]}
	var err error
	for i, p := range []*int64{&e.TS, &e.Seq, &e.Amount} {
		if *p, err = atoi(f[i+1]); err != nil {
			return Event{}, fmt.Errorf("groupbench: topic %q partition %d offset %d: field %d of %q: %w", r.Topic, r.Partition, r.Offset, i+2, v, err)
		}
	}
	return e, nil
}

func atoi(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 18 {
		return 0, errors.New("not a number")
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, errors.New("not a number")
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// firstRecordLine starts the line a worker prints on its standard output
// when it decodes its first record, followed by the time (Unix ns).
const firstRecordLine = "first-record"

// Worker runs the job once in this process: in group mode under appID
// (one of the processes of a run), or alone when appID is empty, with a
// commit (checkpoint) every commitInterval (0: group mode's default). It
// returns when the input is read to its end (and committed).
func Worker(ctx context.Context, brokers []string, appID, in, out string, commitInterval time.Duration, verbose bool) error {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	opts := []weir.JobOption{weir.Parallelism(1), weir.Logger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))}
	if appID != "" {
		opts = append(opts, weir.AppID(appID))
	}
	if commitInterval > 0 {
		opts = append(opts, weir.Checkpointing(commitInterval, ""))
	}
	job := weir.NewJob("bench-group", opts...)
	Job(job, brokers, in, out, func() { fmt.Printf("%s %d\n", firstRecordLine, time.Now().UnixNano()) })
	return job.Run(ctx)
}
