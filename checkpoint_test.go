package weir_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// memSink is an in-memory two-phase-commit sink: writers stage records per
// checkpoint, the committer publishes them. Commit is idempotent.
type memSink struct {
	mu        sync.Mutex
	staged    map[string][]string // committable id -> records
	committed map[string][]string
	nextTx    int
}

func newMemSink() *memSink {
	return &memSink{staged: map[string][]string{}, committed: map[string][]string{}}
}

func (s *memSink) OpenWriter(context.Context, int, int) (weir.SinkWriter[string], error) {
	return &memWriter{s: s}, nil
}
func (s *memSink) Committer() weir.Committer { return s }
func (s *memSink) Commit(_ context.Context, c []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := string(c)
	if _, done := s.committed[id]; done {
		return nil
	}
	recs, ok := s.staged[id]
	if !ok {
		return fmt.Errorf("committable %s was never staged", id)
	}
	s.committed[id] = recs
	return nil
}

func (s *memSink) output() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, recs := range s.committed {
		out = append(out, recs...)
	}
	sort.Strings(out)
	return out
}

type memWriter struct {
	s   *memSink
	buf []string
}

func (w *memWriter) Write(_ context.Context, items []string) error {
	w.buf = append(w.buf, items...)
	return nil
}
func (w *memWriter) PreCommit(_ context.Context, id int64) ([]byte, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	w.s.nextTx++
	tx := fmt.Sprintf("ck%d-tx%d", id, w.s.nextTx)
	w.s.staged[tx] = w.buf
	w.buf = nil
	return []byte(tx), nil
}
func (w *memWriter) Recover(context.Context, int64) error { return nil }
func (w *memWriter) Close(context.Context) error          { return nil }

// failingSource reads evs with a 200ms bounded-out-of-orderness watermark;
// with failAt > 0 it takes a checkpoint after every 2000 events (so
// checkpoints complete before the failure, however slow the machine) and
// fails the job once, with a panic, at the event whose timestamp is failAt.
func failingSource(job *weir.Job, evs []ev, failAt int64, failed *atomic.Bool) *weir.Stream[ev] {
	var in weir.Source[ev] = weir.SliceSource(evs)
	if failAt > 0 {
		in = weirtest.CheckpointEvery(func() *weir.Job { return job }, in.(weir.RestorableSource[ev]), 2000)
	}
	src := weir.FromSource(job, "events", in,
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	return weir.Map(src, func(e ev) ev {
		if failAt > 0 && !failed.Load() {
			if e.TS == failAt && failed.CompareAndSwap(false, true) {
				panic("injected failure")
			}
		}
		return e
	})
}

// buildCounting is a stateful job: tumbling counts per key and a running
// count per key (Process), into a two-phase-commit sink. failAt > 0 makes
// the map fail once when it sees that event.
func buildCounting(evs []ev, p int, dir string, sink weir.Sink[string], failAt int64, failed *atomic.Bool, opts ...weir.JobOption) *weir.Job {
	job := weir.NewJob("counting", append([]weir.JobOption{weir.Parallelism(p), weir.Checkpointing(5*time.Millisecond, dir),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 100, Interval: time.Hour})}, opts...)...)
	src := failingSource(job, evs, failAt, failed)
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev](), weir.UID("counts"))
	weir.To(weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
	}), weir.Sink[string](sink), weir.UID("sink"))
	return job
}

func TestCheckpointedJobRecoversExactlyOnce(t *testing.T) {
	r := newRand(5)
	evs := randomEvents(r, 20000, 200, 3000)
	want := func() []string {
		s := newMemSink()
		var f atomic.Bool
		if err := buildCounting(evs, 2, t.TempDir(), s, 0, &f).Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return s.output()
	}()
	if len(want) == 0 {
		t.Fatal("no output")
	}
	for _, p := range []int{1, 2, 3} {
		dir := t.TempDir()
		s := newMemSink()
		var failed atomic.Bool
		job := buildCounting(evs, p, dir, s, evs[15000].TS, &failed)
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		if !failed.Load() {
			t.Fatal("the failure was not injected")
		}
		if n := job.Metrics().Checkpoints.Restarts; n != 1 {
			t.Fatalf("p=%d: %d restarts, want 1", p, n)
		}
		if n := job.Metrics().Checkpoints.Completed; n < 3 {
			t.Fatalf("p=%d: only %d checkpoints completed: the restart did not restore state", p, n)
		}
		got := s.output()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("p=%d: output after a failure differs from a failure-free run: %d vs %d records", p, len(got), len(want))
		}
		// (DIR also holds _committed/, the commit records.)
		entries, _ := filepath.Glob(filepath.Join(dir, "chk-*"))
		if len(entries) == 0 || len(entries) > 3 {
			t.Fatalf("p=%d: %d checkpoint directories, want 1..3 retained", p, len(entries))
		}
		meta, err := os.ReadFile(filepath.Join(entries[len(entries)-1], "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(meta[:len(meta)-len("crc32c 00000000\n")], &m)
		if m["operators"] == nil {
			t.Fatalf("metadata without operators: %s", meta)
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed)) }

// slowSink holds one pre-commit until the checkpoint timed out.
type slowSink struct {
	*memSink
	slowOnce atomic.Bool
	aborted  func() bool
}

func (s *slowSink) OpenWriter(ctx context.Context, i, p int) (weir.SinkWriter[string], error) {
	w, _ := s.memSink.OpenWriter(ctx, i, p)
	return &slowWriter{memWriter: w.(*memWriter), s: s}, nil
}

type slowWriter struct {
	*memWriter
	s *slowSink
}

func (w *slowWriter) PreCommit(ctx context.Context, id int64) ([]byte, error) {
	if id >= 3 && w.s.slowOnce.CompareAndSwap(false, true) {
		// Wait for the abort itself, not for a time longer than the
		// timeout: on a busy machine the abort may come late.
		deadline := time.Now().Add(time.Minute)
		for !w.s.aborted() && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			case <-time.After(time.Millisecond):
			}
		}
	}
	return w.memWriter.PreCommit(ctx, id)
}

// A checkpoint that does not complete within the timeout is aborted; the
// job goes on, and the output staged by the aborted checkpoint is committed
// with a later one: nothing lost, nothing doubled.
func TestCheckpointTimeoutAbortsAndLosesNothing(t *testing.T) {
	r := newRand(8)
	evs := randomEvents(r, 20000, 200, 3000)
	ref := newMemSink()
	var f atomic.Bool
	if err := buildCounting(evs, 1, t.TempDir(), ref, 0, &f).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	sink := &slowSink{memSink: newMemSink()}
	job := weir.NewJob("slow", weir.Checkpointing(time.Hour, t.TempDir()), weirtest.FirstCheckpointAfter(time.Hour), weir.CheckpointTimeout(100*time.Millisecond))
	sink.aborted = func() bool { return job.Metrics().Checkpoints.Aborted > 0 }
	// A checkpoint after every 2000 events: several happen, the third is slow.
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(evs).(weir.RestorableSource[ev]), 2000)
	src := weir.FromSource(job, "events", weir.Source[ev](paced),
		weir.BoundedOutOfOrderness(200*time.Millisecond, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
	counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.Key }), weir.Tumbling(time.Second)), weir.Count[ev](), weir.UID("counts"))
	weir.To(weir.Map(counts, func(r weir.WindowResult[string, int64]) string {
		return fmt.Sprintf("%s@%d=%d", r.Key, r.Start.UnixMilli(), r.Value)
	}), weir.Sink[string](sink), weir.UID("sink"))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !sink.slowOnce.Load() || job.Metrics().Checkpoints.Aborted == 0 {
		t.Fatalf("no checkpoint was aborted (slow pre-commit: %v)", sink.slowOnce.Load())
	}
	if got, want := sink.output(), ref.output(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after an aborted checkpoint: %d records committed, want %d", len(got), len(want))
	}
}
