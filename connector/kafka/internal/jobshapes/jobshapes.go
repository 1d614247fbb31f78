// Package jobshapes holds the jobs that group mode's tests
// (docs/scale-out.md) run both inside the test process and as the
// processes of internal/groupjob, with their event: one definition, so
// that a kill test's processes, its one-process reference run and its
// in-process twin run the same job, and a change to a shape reaches all
// of them. Tests only.
package jobshapes

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/weirstream/weir"
)

// Event is the tests' input: key, event time (ms), a sequence number, and
// the partition it was read from (set by Decode).
type Event struct {
	Key       string
	TS        int64
	Seq       int64
	Partition int32
}

// Decode decodes a "key,ts,seq" record into an Event, with the record's
// partition.
func Decode(r *kgo.Record) (Event, error) {
	f := strings.Split(string(r.Value), ",")
	if len(f) != 3 {
		return Event{}, fmt.Errorf("malformed event %q: want key,ts,seq", r.Value)
	}
	ts, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("malformed event %q: %w", r.Value, err)
	}
	seq, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("malformed event %q: %w", r.Value, err)
	}
	return Event{Key: f[0], TS: ts, Seq: seq, Partition: r.Partition}, nil
}

// EventTime is an event's time, for the jobs' watermarks.
func EventTime(e Event) time.Time { return time.UnixMilli(e.TS) }

// Counter is a running count per key in a ValueState: for each event it
// emits "count,key,seq,n", the event being the key's n-th.
type Counter struct {
	n *weir.ValueState[string, int64]
}

// Open makes the count's state.
func (c *Counter) Open(rc *weir.RuntimeContext[string]) error {
	c.n = weir.NewValueState[int64](rc, "n")
	return nil
}

// ProcessElement counts e.
func (c *Counter) ProcessElement(ctx *weir.KeyedContext[string, string], e Event) error {
	n, _ := c.n.Value()
	n++
	c.n.Update(n)
	ctx.Emit(fmt.Sprintf("count,%s,%d,%d", e.Key, e.Seq, n))
	return nil
}

// ChainAcc is the accumulator of Chain's second stage.
type ChainAcc struct {
	Sum  int64
	Best string
}

// Chain is a chain of two KeyBys, of Nexmark q5's shape: events counted
// per key and hopping window (2 s, sliding 1 s) (uid "hop"), then the
// counts keyed by the 5 s bucket of their window's end and, per bucket (a
// tumbling 5 s window, uid "best"), the sum of the counts and the largest
// count (ties: the largest key), as "bucket=sum count key", into sink. The
// second KeyBy follows a keyed operator: in group mode it crosses
// processes through its own repartition topic, whose upstream tasks are
// the first topic's partitions. The wider second window keeps state in
// the second stage across commits, so its changelog and restore matter;
// the sum would show a lost part. With lag > 0 the first stage sleeps that
// long per result (a process whose first stage lags behind the others').
func Chain(evs *weir.Stream[Event], lag time.Duration, sink weir.Sink[string]) {
	counts := weir.Aggregate(weir.Window(weir.KeyBy(evs, func(e Event) string { return e.Key }), weir.Hopping(2*time.Second, time.Second)),
		weir.Count[Event](), weir.UID("hop"))
	if lag > 0 {
		counts = weir.Map(counts, func(r weir.WindowResult[string, int64]) weir.WindowResult[string, int64] {
			time.Sleep(lag) // the lag the test asks for, not a wait for a result
			return r
		})
	}
	bucket := func(r weir.WindowResult[string, int64]) int64 { e := r.End.UnixMilli() - 1; return e - e%5000 }
	agg := weir.AggregateFuncs[weir.WindowResult[string, int64], ChainAcc, string]{
		CreateFn: func() ChainAcc { return ChainAcc{} },
		AddFn: func(a ChainAcc, r weir.WindowResult[string, int64]) ChainAcc {
			a.Sum += r.Value
			a.Best = max(a.Best, fmt.Sprintf("%06d %s", r.Value, r.Key))
			return a
		},
		MergeFn:  func(a, b ChainAcc) ChainAcc { return ChainAcc{a.Sum + b.Sum, max(a.Best, b.Best)} },
		ResultFn: func(a ChainAcc) string { return fmt.Sprintf("%d %s", a.Sum, a.Best) },
	}
	best := weir.Aggregate(weir.Window(weir.KeyBy(counts, bucket), weir.Tumbling(5*time.Second)), agg, weir.UID("best"))
	weir.To(weir.Map(best, func(r weir.WindowResult[int64, string]) string { return fmt.Sprintf("%d=%s", r.Key, r.Value) }), sink, weir.UID("sink"))
}

// Union keys two shapes of unions into counts per key and tumbling second,
// as "tag,key,start,count", into sink: tag n (uid "nested"), a union of a
// union (left, right, and left again with its keys prefixed "x"); tag m
// (uid "mapped"), a Map and a Filter after a union (left and right
// regrouped by seq mod 3, every fifth seq dropped).
func Union(left, right *weir.Stream[Event], sink weir.Sink[string]) {
	key := func(e Event) string { return e.Key }
	count := func(s *weir.Stream[Event], uid, tag string) *weir.Stream[string] {
		c := weir.Aggregate(weir.Window(weir.KeyBy(s, key), weir.Tumbling(time.Second)), weir.Count[Event](), weir.UID(uid))
		return weir.Map(c, func(r weir.WindowResult[string, int64]) string {
			return fmt.Sprintf("%s,%s,%d,%d", tag, r.Key, r.Start.UnixMilli(), r.Value)
		})
	}
	relabel := weir.Map(left, func(e Event) Event { e.Key = "x" + e.Key; return e }, weir.Name("relabel"), weir.UID("relabel"))
	nested := weir.Union(weir.Union(left, right), relabel)
	regroup := weir.Map(weir.Union(left, right), func(e Event) Event { e.Key = "g" + strconv.FormatInt(e.Seq%3, 10); return e },
		weir.Name("regroup"), weir.UID("regroup"))
	thin := weir.Filter(regroup, func(e Event) bool { return e.Seq%5 != 0 }, weir.Name("thin"), weir.UID("thin"))
	weir.To(weir.Union(count(nested, "nested", "n"), count(thin, "mapped", "m")), sink, weir.UID("sink"))
}
