package wlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

type kv struct {
	K string
	V int
}

func kvRecord(v kv, r *Record) error {
	r.Key = append(r.Key, v.K...)
	r.Value = strconv.AppendInt(r.Value, int64(v.V), 10)
	r.Timestamp = int64(1000 + v.V)
	return nil
}

var errCrash = errors.New("injected crash")

// forgetProcess drops the process's producer state, as a restart would.
func forgetProcess() {
	registry.Lock()
	registry.parts = nil
	registry.Unlock()
}

// topicContent reads every partition: "p:key=value" lines in offset order
// per partition, and checks offsets are dense.
func topicContent(t *testing.T, dir, topic string, gaps ...bool) []string {
	t.Helper()
	tp, err := OpenTopic(dir, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range tp.Config.Partitions {
		r, err := tp.OpenReader(p, Earliest())
		if err != nil {
			t.Fatal(err)
		}
		want := int64(0)
		for {
			recs, err := r.Read(context.Background(), 1000)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range recs {
				if rec.Offset != want && (len(gaps) == 0 || rec.Offset < want) {
					t.Fatalf("partition %d: offset %d, want %d", p, rec.Offset, want)
				}
				want = rec.Offset + 1
				out = append(out, fmt.Sprintf("%d:%s=%s", p, rec.Key, rec.Value))
			}
		}
		r.Close()
	}
	return out
}

func newTestSink(t *testing.T, dir string, parts int, opts ...SinkOption) weir.CommittingSink[kv] {
	t.Helper()
	if _, err := CreateTopic(dir, "out", TopicConfig{Partitions: parts, SegmentBytes: 4096}); err != nil && !errors.Is(err, ErrTopicExists) {
		t.Fatal(err)
	}
	return Sink(dir, "out", "job", kvRecord, append([]SinkOption{SinkBatchBytes(300)}, opts...)...)
}

func openW(t *testing.T, s weir.CommittingSink[kv], sub, par int, restored int64) weir.CommittingWriter[kv] {
	t.Helper()
	w, err := s.OpenWriter(context.Background(), sub, par)
	if err != nil {
		t.Fatal(err)
	}
	cw := w.(weir.CommittingWriter[kv])
	if err := cw.Recover(context.Background(), restored); err != nil {
		t.Fatal(err)
	}
	return cw
}

func items(from, to int) []kv {
	var out []kv
	for i := from; i < to; i++ {
		out = append(out, kv{K: "k" + strconv.Itoa(i%13), V: i})
	}
	return out
}

func expected(t *testing.T, parts int, vs []kv) []string {
	t.Helper()
	dir := t.TempDir()
	s := newTestSink(t, dir, parts)
	w := openW(t, s, 0, 1, 0)
	ctx := context.Background()
	if err := w.Write(ctx, vs); err != nil {
		t.Fatal(err)
	}
	c, err := w.PreCommit(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Committer().Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	return topicContent(t, dir, "out")
}

// Committing the same committable twice appends its records once; so does
// a commit interrupted after some of its batches, repeated by a new
// process.
func TestSinkCommitIdempotent(t *testing.T) {
	ctx := context.Background()
	want := expected(t, 3, items(0, 500))
	for _, crashAt := range []int{0, 1, 5, 1000} {
		t.Run(fmt.Sprint("crash-after-", crashAt), func(t *testing.T) {
			dir := t.TempDir()
			n := 0
			s := newTestSink(t, dir, 3, sinkOptionFunc(func(c *sinkConfig) {
				c.hook = func(stage string) error {
					if stage == "batch-appended" {
						n++
						if n == crashAt {
							return errCrash
						}
					}
					return nil
				}
			}))
			w := openW(t, s, 0, 1, 0)
			if err := w.Write(ctx, items(0, 500)); err != nil {
				t.Fatal(err)
			}
			c, err := w.PreCommit(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			err = s.Committer().Commit(ctx, c)
			if crashAt > 0 && crashAt < 1000 {
				if !errors.Is(err, errCrash) {
					t.Fatalf("commit: %v, want the injected crash", err)
				}
				forgetProcess()
			} else if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := s.Committer().Commit(ctx, c); err != nil {
					t.Fatal(err)
				}
			}
			forgetProcess()
			if err := s.Committer().Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
			if got := topicContent(t, dir, "out"); !slices.Equal(got, want) {
				t.Fatalf("topic holds %d records, want %d:\n%v", len(got), len(want), diffFirst(got, want))
			}
			// The staging file is gone once committed.
			if files, _ := filepath.Glob(filepath.Join(dir, "out", txnDir, "job-0", "*"+pendingExt)); len(files) != 0 {
				t.Fatalf("staging files left: %v", files)
			}
		})
	}
}

func diffFirst(got, want []string) string {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Sprintf("first difference at %d: %q, want %q", i, got[i], want[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d)", len(got), len(want))
}

// The committable of an aborted checkpoint is committed after a later one
// that lists its file again: nothing doubled, order kept.
func TestSinkAbortedCheckpointCarried(t *testing.T) {
	ctx := context.Background()
	want := expected(t, 2, items(0, 300))
	dir := t.TempDir()
	s := newTestSink(t, dir, 2)
	w := openW(t, s, 0, 1, 0)
	w.Write(ctx, items(0, 100))
	c1, err := w.PreCommit(ctx, 1) // aborted: carried by the job
	if err != nil {
		t.Fatal(err)
	}
	w.Write(ctx, items(100, 300))
	c2, err := w.PreCommit(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	var cm sinkCommittable
	json.Unmarshal(c2, &cm)
	if len(cm.Files) != 2 {
		t.Fatalf("checkpoint 2's committable lists %d files, want 2 (with checkpoint 1's)", len(cm.Files))
	}
	if err := s.Committer().Commit(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if err := s.Committer().Commit(ctx, c1); err != nil {
		t.Fatal(err)
	}
	if got := topicContent(t, dir, "out"); !slices.Equal(got, want) {
		t.Fatalf("%s", diffFirst(got, want))
	}
	// Nothing pending any more: the next committable is nil.
	if c3, err := w.PreCommit(ctx, 3); err != nil || c3 != nil {
		t.Fatalf("PreCommit with nothing staged: %s, %v", c3, err)
	}
}

// Recover deletes what no completed checkpoint covers: the in-progress
// file and the pending file of a checkpoint after the restored one.
func TestSinkRecoverDiscardsUncommitted(t *testing.T) {
	ctx := context.Background()
	want := expected(t, 2, items(0, 300))
	dir := t.TempDir()
	s := newTestSink(t, dir, 2)
	w := openW(t, s, 0, 1, 0)
	w.Write(ctx, items(0, 100))
	c1, _ := w.PreCommit(ctx, 1)
	if err := s.Committer().Commit(ctx, c1); err != nil {
		t.Fatal(err)
	}
	w.Write(ctx, items(100, 200))
	if _, err := w.PreCommit(ctx, 2); err != nil { // never completes
		t.Fatal(err)
	}
	w.Write(ctx, items(200, 250))
	if err := w.(interface{ flush(int) error }).flush(0); err != nil { // an in-progress file on disk
		t.Fatal(err)
	}
	w.Close(ctx)
	forgetProcess()

	// The job restores checkpoint 1 (committing its committable again).
	if err := s.Committer().Commit(ctx, c1); err != nil {
		t.Fatal(err)
	}
	w = openW(t, s, 0, 1, 1)
	left, _ := filepath.Glob(filepath.Join(dir, "out", txnDir, "job-0", "*.*"))
	if len(left) != 0 {
		t.Fatalf("Recover left %v", left)
	}
	w.Write(ctx, items(100, 300))
	c3, _ := w.PreCommit(ctx, 3)
	if err := s.Committer().Commit(ctx, c3); err != nil {
		t.Fatal(err)
	}
	if got := topicContent(t, dir, "out"); !slices.Equal(got, want) {
		t.Fatalf("%s", diffFirst(got, want))
	}
}

// A job started afresh (no checkpoint) with the same producer gets a new
// epoch: its output is appended, not taken for a replay of the first run.
func TestSinkFreshStartIsNotAReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := newTestSink(t, dir, 1)
	for run := range 2 {
		w := openW(t, s, 0, 1, 0)
		w.Write(ctx, items(0, 10))
		c, _ := w.PreCommit(ctx, 0) // no checkpointing: checkpoint 0 at the end
		if err := s.Committer().Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
		w.Close(ctx)
		if got := len(topicContent(t, dir, "out")); got != 10*(run+1) {
			t.Fatalf("run %d: %d records, want %d", run, got, 10*(run+1))
		}
		forgetProcess()
		if run == 0 {
			os.Remove(filepath.Join(dir, "out", txnDir, "job-0", epochFile)) // the epoch comes from the topic too
		}
	}
}

// Property: any sequence of checkpoints, aborted checkpoints, interrupted
// commits, lost processes and restores from the latest complete
// checkpoint, with two subtasks writing the same partitions and segments
// rolling, leaves the topic holding each record exactly once, in the
// order of a failure-free run per subtask and partition.
func TestSinkDedupProperty(t *testing.T) {
	ctx := context.Background()
	seeds := 12
	if testing.Short() {
		seeds = 4
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 99))
		dir := t.TempDir()
		crash := false
		s := newTestSink(t, dir, 1+rng.IntN(3), sinkOptionFunc(func(c *sinkConfig) {
			c.hook = func(string) error {
				if crash && rng.IntN(4) == 0 {
					return errCrash
				}
				return nil
			}
		}))
		const n = 600
		// Each subtask writes its own values: the record at input position
		// i of subtask j has value j*n+i.
		type ck struct {
			id   int64
			pos  [2]int
			cmts [][]byte
		}
		restored := ck{}
		nextID := int64(1)
		committedThrough := map[int64]bool{}
		for attempt := 0; ; attempt++ {
			ws := [2]weir.CommittingWriter[kv]{openW(t, s, 0, 2, restored.id), openW(t, s, 1, 2, restored.id)}
			pos := restored.pos
			var carry [][]byte
			failed := false
			for !failed && (pos[0] < n || pos[1] < n) {
				for j := range ws {
					k := min(n, pos[j]+rng.IntN(150))
					var vs []kv
					for i := pos[j]; i < k; i++ {
						vs = append(vs, kv{K: "k" + strconv.Itoa(i%7), V: j*n + i})
					}
					ws[j].Write(ctx, vs)
					pos[j] = k
				}
				id := nextID
				nextID++
				var cmts [][]byte
				for j := range ws {
					c, err := ws[j].PreCommit(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					if c != nil {
						cmts = append(cmts, c)
					}
				}
				if attempt < 6 && rng.IntN(5) == 0 {
					carry = append(carry, cmts...) // aborted
					continue
				}
				// Complete: this is now the restore point.
				restored = ck{id: id, pos: pos, cmts: cmts}
				crash = attempt < 6
				for _, c := range append(cmts, carry...) {
					if err := s.Committer().Commit(ctx, c); err != nil {
						if !errors.Is(err, errCrash) {
							t.Fatalf("seed %d: %v", seed, err)
						}
						failed = true
						break
					}
				}
				crash = false
				carry = nil
				committedThrough[id] = !failed
				if attempt < 6 && rng.IntN(6) == 0 {
					failed = true
				}
			}
			for _, w := range ws {
				w.Close(ctx)
			}
			if !failed {
				break
			}
			if rng.IntN(2) == 0 {
				forgetProcess()
			}
			// Restart: commit the restored checkpoint's committables again.
			for _, c := range restored.cmts {
				if err := s.Committer().Commit(ctx, c); err != nil {
					t.Fatalf("seed %d: restore commit: %v", seed, err)
				}
			}
		}
		got := topicContent(t, dir, "out")
		seen := map[string]bool{}
		lastBy := map[string]int{} // partition+subtask -> last value
		for _, l := range got {
			p, rest, _ := strings.Cut(l, ":")
			_, v, _ := strings.Cut(rest, "=")
			if seen[v] {
				t.Fatalf("seed %d: value %s twice", seed, v)
			}
			seen[v] = true
			x, _ := strconv.Atoi(v)
			key := p + "/" + strconv.Itoa(x/n)
			if last, ok := lastBy[key]; ok && x <= last {
				t.Fatalf("seed %d: partition %s: value %d after %d", seed, p, x, last)
			}
			lastBy[key] = x
		}
		if len(seen) != 2*n {
			t.Fatalf("seed %d: %d distinct values, want %d", seed, len(seen), 2*n)
		}
		forgetProcess()
	}
}

// A compacted segment keeps the producer sections of the batches it
// rewrites, so the sink still finds its sequence numbers.
func TestCompactionKeepsProducerSection(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := CreateTopic(dir, "out", TopicConfig{Partitions: 1, Compact: true, SegmentBytes: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	s := Sink(dir, "out", "job", kvRecord)
	w := openW(t, s, 0, 1, 0)
	w.Write(ctx, items(0, 50))
	c, _ := w.PreCommit(ctx, 1)
	if err := s.Committer().Commit(ctx, c); err != nil {
		t.Fatal(err)
	}
	tp, _ := OpenTopic(dir, "out")
	lw, err := tp.OpenWriter(0)
	if err != nil {
		t.Fatal(err)
	}
	if err := lw.Roll(); err != nil {
		t.Fatal(err)
	}
	st, err := lw.Clean(time.Now())
	lw.Close()
	if err != nil || st.CompactedSegments != 1 {
		t.Fatalf("clean: %+v, %v", st, err)
	}
	forgetProcess()
	e := partEntryFor(tp.partDir(0))
	e.mu.Lock()
	err = e.refresh(tp.partDir(0))
	seq := e.last["job-0"]
	e.mu.Unlock()
	if err != nil || seq.ckpt != 1 || seq.epoch != 1 {
		t.Fatalf("after compaction the producer's last sequence is %v (%v)", seq, err)
	}
	if got := len(topicContent(t, dir, "out", true)); got != 13 {
		t.Fatalf("%d records after compaction, want 13 (one per key)", got)
	}
}

// A batch with a flag this version does not know is an error naming the
// segment and position, not a silent stop.
func TestUnknownBatchFlagIsAnError(t *testing.T) {
	dir := t.TempDir()
	tp, _ := CreateTopic(dir, "t", TopicConfig{Partitions: 1})
	w, _ := tp.OpenWriter(0)
	w.Append([]Record{{Value: []byte("a")}})
	w.Append([]Record{{Value: []byte("b")}})
	w.Close()
	path := logPath(tp.partDir(0), 0)
	b, _ := os.ReadFile(path)
	h, _ := checkBatch(b)
	second := b[h.size():]
	second[9] = 0x80
	sealBatch(second, 0x80, 1, 1, 1, int64(0))
	os.WriteFile(path, b, 0o644)
	r, _ := tp.OpenReader(0, Earliest())
	defer r.Close()
	recs, _ := r.Read(context.Background(), 10)
	if len(recs) != 1 {
		t.Fatalf("read %d records before the unknown batch, want 1", len(recs))
	}
	_, err := r.Read(context.Background(), 10)
	if err == nil || !strings.Contains(err.Error(), "flags 0x80") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, want one naming the flags and %s", err, path)
	}
}

// A job whose commits fail midway (after some batches were appended)
// restarts from its latest checkpoint and commits it again: the topic
// ends up with exactly the failure-free run's records.
func TestSinkJobWithInterruptedCommits(t *testing.T) {
	type ev struct {
		K  string
		TS int64
	}
	evs := make([]ev, 20000)
	for i := range evs {
		evs[i] = ev{K: "k" + strconv.Itoa(i*7%11), TS: int64(i * 10)}
	}
	run := func(failAt func(n int) bool) ([]string, *weir.Job) {
		dir := t.TempDir()
		if _, err := CreateTopic(dir, "counts", TopicConfig{Partitions: 3}); err != nil {
			t.Fatal(err)
		}
		// A failure while committing the restored checkpoint is
		// permanent: fail only in commits of new checkpoints (after the
		// restore's own commit, and one more, completed).
		n, synced, rearm := 0, 0, 0
		hook := func(stage string) error {
			switch stage {
			case "synced":
				synced++
			case "batch-appended":
				n++
				if failAt != nil && failAt(n) && synced >= rearm {
					rearm = synced + 2
					return errCrash
				}
			}
			return nil
		}
		job := weir.NewJob("counts", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, t.TempDir()),
			weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 100, Interval: time.Hour}))
		// A checkpoint after every 1000 events, however slow the machine.
		paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(evs).(weir.RestorableSource[ev]), 1000)
		src := weir.FromSource(job, "evs", weir.Source[ev](paced), weir.BoundedOutOfOrderness(time.Second, func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		counts := weir.Aggregate(weir.Window(weir.KeyBy(src, func(e ev) string { return e.K }), weir.Tumbling(time.Second)), weir.Count[ev](), weir.UID("counts"))
		weir.To(counts, Sink(dir, "counts", "job", func(r weir.WindowResult[string, int64], rec *Record) error {
			rec.Key = append(rec.Key, r.Key...)
			rec.Value = strconv.AppendInt(append(strconv.AppendInt(rec.Value, r.Start.UnixMilli(), 10), '='), r.Value, 10)
			return nil
		}, SinkBatchBytes(200), sinkOptionFunc(func(c *sinkConfig) { c.hook = hook })), weir.UID("sink"))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := topicContent(t, dir, "counts")
		slices.Sort(got)
		return got, job
	}
	want, _ := run(nil)
	if len(want) < 200 || len(slices.Compact(slices.Clone(want))) != len(want) {
		t.Fatalf("failure-free run: %d records, or duplicates", len(want))
	}
	got, job := run(func(n int) bool { return n%5 == 3 })
	if n := job.Metrics().Checkpoints.Restarts; n < 3 {
		t.Fatalf("%d restarts, want at least 3", n)
	}
	t.Logf("%d commits failed midway", job.Metrics().Checkpoints.Restarts)
	if !slices.Equal(got, want) {
		t.Fatalf("%d records, want %d: %s", len(got), len(want), diffFirst(got, want))
	}
}

// BenchmarkSinkCommit: staging (Write + PreCommit) and Commit of 100k
// records of ~40 bytes into 4 partitions, per iteration.
func BenchmarkSinkCommit(b *testing.B) {
	ctx := context.Background()
	vs := items(0, 100_000)
	for i := range vs {
		vs[i].K = fmt.Sprintf("key-%06d-%s", i%5000, "padding-padding")
	}
	var stage, commit time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		CreateTopic(dir, "out", TopicConfig{Partitions: 4})
		s := Sink(dir, "out", "job", kvRecord)
		w, _ := s.OpenWriter(ctx, 0, 1)
		cw := w.(weir.CommittingWriter[kv])
		cw.Recover(ctx, 0)
		t0 := time.Now()
		cw.Write(ctx, vs)
		c, err := cw.PreCommit(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := s.Committer().Commit(ctx, c); err != nil {
			b.Fatal(err)
		}
		stage += t1.Sub(t0)
		commit += time.Since(t1)
		forgetProcess()
	}
	b.ReportMetric(float64(b.N*len(vs))/stage.Seconds(), "staged-records/s")
	b.ReportMetric(float64(b.N*len(vs))/commit.Seconds(), "committed-records/s")
}
