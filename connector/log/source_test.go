package wlog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	wlog "github.com/weirstream/weir/connector/log"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

type click struct {
	Ad string
	TS int64
}

func fill(t *testing.T, dir string, parts, n int) {
	t.Helper()
	tp, err := wlog.CreateTopic(dir, "clicks", wlog.TopicConfig{Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	for p := 0; p < parts; p++ {
		w, err := tp.OpenWriter(p)
		if err != nil {
			t.Fatal(err)
		}
		var recs []wlog.Record
		for i := p; i < n; i += parts {
			// Record i at event time (i+1)*10ms: never 0, which the
			// writer replaces by the append time (Record.Timestamp),
			// so record 0 would put partition 0's watermark at now.
			recs = append(recs, wlog.Record{Timestamp: int64(i+1) * 10, Key: []byte(fmt.Sprint("ad", i%7)), Value: []byte(strconv.Itoa(i))})
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
}

func decode(r wlog.Record) (click, error) {
	if _, err := strconv.Atoi(string(r.Value)); err != nil {
		return click{}, err
	}
	return click{Ad: string(r.Key), TS: r.Timestamp}, nil
}

// run counts clicks per ad in 1s windows, from the log, with checkpoints;
// failAt > 0 fails the job once at that event time.
func run(t *testing.T, dir, ck string, failAt int64) (map[string]int64, *weir.Job) {
	t.Helper()
	var failed atomic.Bool
	job := weir.NewJob("log", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, ck),
		weir.Restarts(weir.RestartPolicy{MaxFailures: 3, Interval: time.Hour}))
	// Every split waits for a checkpoint after each 2000 records, so
	// checkpoints precede the failure however fast the machine is.
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, wlog.Source(dir, "clicks", decode), 2000)
	src := weir.FromSource(job, "clicks", weir.Source[click](paced),
		weir.BoundedOutOfOrderness(time.Second, func(c click) time.Time { return time.UnixMilli(c.TS) }))
	src = weir.Map(src, func(c click) click {
		if failAt > 0 && !failed.Load() {
			if c.TS >= failAt && failed.CompareAndSwap(false, true) {
				panic("injected")
			}
		}
		return c
	})
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(c click) string { return c.Ad }), weir.Tumbling(time.Second)), weir.Count[click]())
	out := weir.Collect(counts)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range out.Items() {
		got[fmt.Sprintf("%s@%d", r.Key, r.Start.UnixMilli())] = r.Value // the last (replayed) result wins
	}
	return got, job
}

// The log source reads every partition as a split, keeps offsets in
// checkpoints, and after a failure resumes where the checkpoint left off.
func TestLogSourceWithCheckpointsAndFailure(t *testing.T) {
	dir := t.TempDir()
	fill(t, dir, 3, 30000)
	want, _ := run(t, dir, t.TempDir(), 0)
	var total int64
	for _, v := range want {
		total += v
	}
	if total != 30000 {
		t.Fatalf("counted %d of 30000 records", total)
	}
	got, job := run(t, dir, t.TempDir(), 200_000)
	if job.Metrics().Checkpoints.Restarts != 1 {
		t.Fatal("the failure was not injected")
	}
	keys := func(m map[string]int64) []string {
		var k []string
		for x, v := range m {
			k = append(k, fmt.Sprint(x, "=", v))
		}
		sort.Strings(k)
		return k
	}
	if fmt.Sprint(keys(got)) != fmt.Sprint(keys(want)) {
		t.Fatalf("after a failure the windows differ from a failure-free run")
	}
}

func TestLogSourceBadRecordNamesOffset(t *testing.T) {
	dir := t.TempDir()
	tp, err := wlog.CreateTopic(dir, "clicks", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := tp.OpenWriter(0)
	w.Append([]wlog.Record{{Timestamp: 1, Value: []byte("1")}, {Timestamp: 2, Value: []byte("oops")}})
	w.Close()
	job := weir.NewJob("bad")
	weir.Collect(weir.FromSource(job, "clicks", wlog.Source(dir, "clicks", decode), weir.NoWatermarks[click]()))
	err = job.Run(context.Background())
	if err == nil || !contains(err.Error(), `topic "clicks" partition 0 offset 1`) {
		t.Fatalf("want an error naming the record, got %v", err)
	}
	job2 := weir.NewJob("missing")
	weir.Collect(weir.FromSource(job2, "x", wlog.Source(dir, "nosuch", decode), weir.NoWatermarks[click]()))
	if err := job2.Run(context.Background()); err == nil {
		t.Fatal("a missing topic must be a clear error")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func TestLogSourceDeadLetters(t *testing.T) {
	dir := t.TempDir()
	tp, err := wlog.CreateTopic(dir, "clicks", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := tp.OpenWriter(0)
	w.Append([]wlog.Record{{Timestamp: 1, Value: []byte("1")}, {Timestamp: 2, Value: []byte("oops")}, {Timestamp: 3, Value: []byte("3")}})
	w.Close()
	job := weir.NewJob("dlq")
	var letters []weir.BadRecord
	sink := weir.SinkFunc[weir.BadRecord](func(_ context.Context, items []weir.BadRecord) error {
		letters = append(letters, items...)
		return nil
	})
	out := weir.Collect(weir.FromSource(job, "clicks", wlog.Source(dir, "clicks", decode), weir.NoWatermarks[click](),
		weir.OnBadRecord(weir.DeadLetter(sink))))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(out.Items()); n != 2 {
		t.Fatalf("%d good records, want 2", n)
	}
	if len(letters) != 1 || string(letters[0].Raw) != "oops" || letters[0].Position != "clicks/0@1" || letters[0].Err == "" {
		t.Fatalf("dead letters %+v, want one for clicks/0@1 with raw oops", letters)
	}
}

// A job reading a partition damaged in the middle fails, naming the
// damage, instead of ending as if the input were complete.
func TestLogSourceCorruptionFailsTheJob(t *testing.T) {
	dir := t.TempDir()
	tp, err := wlog.CreateTopic(dir, "clicks", wlog.TopicConfig{Partitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := tp.OpenWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i += 10 {
		var recs []wlog.Record
		for j := i; j < i+10; j++ {
			recs = append(recs, wlog.Record{Timestamp: int64(j), Value: []byte(strconv.Itoa(j))})
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	seg := filepath.Join(dir, "clicks", "0", "00000000000000000000.log")
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 5000; i < 5016; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(seg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("corrupt")
	out := weir.Collect(weir.FromSource(job, "clicks", wlog.Source(dir, "clicks", decode), weir.NoWatermarks[click]()))
	err = job.Run(context.Background())
	var ce *wlog.CorruptError
	if !errors.As(err, &ce) || ce.Topic != "clicks" || ce.Segment != seg {
		t.Fatalf("job ended with %v after %d records, want a *CorruptError", err, len(out.Items()))
	}
}

// Issue 35: a job reading a partition whose second segment is gone, or
// whose fsynced last batch has a flipped bit, fails naming the damage
// instead of ending with fewer records.
func TestLogSourceMissingDataFailsTheJob(t *testing.T) {
	for _, damage := range []string{"delete-second-segment", "flip-last-batch"} {
		t.Run(damage, func(t *testing.T) {
			dir := t.TempDir()
			tp, err := wlog.CreateTopic(dir, "clicks", wlog.TopicConfig{Partitions: 1, SegmentBytes: 4096})
			if err != nil {
				t.Fatal(err)
			}
			w, err := tp.OpenWriter(0, wlog.WithSync(wlog.SyncEvery(time.Hour)))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 1000; i += 10 {
				var recs []wlog.Record
				for j := i; j < i+10; j++ {
					recs = append(recs, wlog.Record{Timestamp: int64(j), Value: []byte(strconv.Itoa(j))})
				}
				if _, err := w.Append(recs); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			pdir := filepath.Join(dir, "clicks", "0")
			var logs []string
			ents, _ := os.ReadDir(pdir)
			for _, e := range ents {
				if filepath.Ext(e.Name()) == ".log" {
					logs = append(logs, filepath.Join(pdir, e.Name()))
				}
			}
			sort.Strings(logs)
			var seg string
			if damage == "delete-second-segment" {
				seg = logs[1]
				err = os.Remove(seg)
			} else {
				seg = logs[len(logs)-1]
				var b []byte
				if b, err = os.ReadFile(seg); err == nil {
					b[len(b)-3] ^= 0x01
					err = os.WriteFile(seg, b, 0o644)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			job := weir.NewJob("damaged")
			out := weir.Collect(weir.FromSource(job, "clicks", wlog.Source(dir, "clicks", decode), weir.NoWatermarks[click]()))
			err = job.Run(context.Background())
			if !errors.Is(err, wlog.ErrCorrupt) || !strings.Contains(err.Error(), seg) || !strings.Contains(err.Error(), "topic clicks partition 0") {
				t.Fatalf("job ended with %v after %d records, want an error naming %s", err, len(out.Items()), seg)
			}
		})
	}
}
