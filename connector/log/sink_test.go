package wlog_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

type tick struct {
	Key string
	TS  int64
}

func ticks(n int) []tick {
	out := make([]tick, n)
	for i := range out {
		// Some disorder, within the watermark bound.
		out[i] = tick{Key: "k" + strconv.Itoa(i*7%11), TS: int64(i*10 - i%5*30)}
	}
	return out
}

// countJob counts ticks per key and second into topic "counts" through the
// exactly-once sink; it panics once at each event time in failAt.
func countJob(t *testing.T, dir, ck string, evs []tick, failAt []int64) *weir.Job {
	t.Helper()
	var failed [8]atomic.Bool
	job := weir.NewJob("counts", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, ck),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 100, Interval: time.Hour}))
	// A checkpoint after every 500 events: they complete between the
	// failures, however slow the machine.
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(evs).(weir.RestorableSource[tick]), 500)
	src := weir.FromSource(job, "ticks", weir.Source[tick](paced),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e tick) time.Time { return time.UnixMilli(e.TS) }))
	src = weir.Map(src, func(e tick) tick {
		for i, at := range failAt {
			if failed[i].Load() {
				continue
			}
			if e.TS == at && failed[i].CompareAndSwap(false, true) {
				panic("injected failure")
			}
		}
		return e
	})
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e tick) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[tick](), weir.UID("counts"))
	weir.To(counts, wlog.Sink(dir, "counts", "count-job", func(r weir.WindowResult[string, int64], rec *wlog.Record) error {
		rec.Key = append(rec.Key, r.Key...)
		rec.Value = strconv.AppendInt(append(strconv.AppendInt(rec.Value, r.Start.UnixMilli(), 10), '='), r.Value, 10)
		rec.Timestamp = r.End.UnixMilli() - 1
		rec.Headers = append(rec.Headers, wlog.Header{Key: "kind", Value: []byte(r.Kind.String())})
		return nil
	}), weir.UID("sink"))
	return job
}

// readTopic returns each partition's records as "key value" lines, in
// offset order, reading with a plain Reader (readers need nothing to read
// the sink's batches).
func readTopic(t *testing.T, dir, topic string) [][]string {
	t.Helper()
	tp, err := wlog.OpenTopic(dir, topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]string, tp.Config.Partitions)
	for p := range out {
		r, err := tp.OpenReader(p, wlog.Earliest())
		if err != nil {
			t.Fatal(err)
		}
		for {
			recs, err := r.Read(context.Background(), 500)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("partition %d: %v", p, err)
			}
			for _, rec := range recs {
				if len(rec.Headers) != 1 || string(rec.Headers[0].Value) != "+I" {
					t.Fatalf("partition %d offset %d: headers %v", p, rec.Offset, rec.Headers)
				}
				out[p] = append(out[p], fmt.Sprintf("%s %s", rec.Key, rec.Value))
			}
		}
		r.Close()
	}
	return out
}

// Failures and restarts from checkpoints leave the topic holding exactly
// what a failure-free run commits: per partition, the same records, none
// twice.
func TestSinkExactlyOnceUnderFailures(t *testing.T) {
	evs := ticks(30000)
	run := func(failAt []int64) ([][]string, *weir.Job) {
		dir := t.TempDir()
		if _, err := wlog.CreateTopic(dir, "counts", wlog.TopicConfig{Partitions: 3, SegmentBytes: 8 << 10}); err != nil {
			t.Fatal(err)
		}
		job := countJob(t, dir, t.TempDir(), evs, failAt)
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return readTopic(t, dir, "counts"), job
	}
	want, _ := run(nil)
	total := 0
	for p := range want {
		slices.Sort(want[p])
		total += len(want[p])
		if len(slices.Compact(slices.Clone(want[p]))) != len(want[p]) {
			t.Fatalf("failure-free run: duplicates in partition %d", p)
		}
	}
	if total < 300 || len(want[0]) == 0 || len(want[1]) == 0 || len(want[2]) == 0 {
		t.Fatalf("failure-free run wrote %d records (%d, %d, %d per partition)", total, len(want[0]), len(want[1]), len(want[2]))
	}
	got, job := run([]int64{evs[8000].TS, evs[15000].TS, evs[22000].TS})
	if n := job.Metrics().Checkpoints.Restarts; n != 3 {
		t.Fatalf("%d restarts, want 3", n)
	}
	for p := range want {
		slices.Sort(got[p])
		if !slices.Equal(got[p], want[p]) {
			t.Fatalf("partition %d: %d records, want %d (the failure-free run's)", p, len(got[p]), len(want[p]))
		}
	}
}

// StopAt ends a partition before an offset, also when following.
func TestSourceStopAt(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 1, 100)
	for _, follow := range []bool{false, true} {
		opts := []wlog.SourceOption{wlog.StopAt(map[int]int64{0: 40})}
		if follow {
			opts = append(opts, wlog.FollowLog(time.Millisecond))
		}
		job := weir.NewJob("stop")
		out := weir.Collect(weir.FromSource(job, "clicks", wlog.Source(dir, "clicks", decode, opts...), weir.NoWatermarks[click]()))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(out.Items()); n != 40 {
			t.Fatalf("follow %t: %d records, want 40", follow, n)
		}
	}
}
