package weir_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// The same jobs give the same output with the heap and with the Pebble
// backend: every state kind, against a model.
func TestPebbleStateSameAsHeap(t *testing.T) {
	r := newRand(11)
	var evs []ev
	for i := range 3000 {
		evs = append(evs, ev{Key: fmt.Sprint("k", r.IntN(20)), TS: int64(i)*3 + r.Int64N(3)})
	}
	want := modelAllStates(evs)
	before := runtime.NumGoroutine()
	for _, p := range []int{1, 2} {
		dir := t.TempDir()
		job := weir.NewJob("states", weir.Parallelism(p), weir.BatchSize(64), weir.PebbleState(dir, 8<<20))
		src := weir.FromSource(job, "events", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		out := weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(e ev) string { return e.Key }),
			func() weir.KeyedProcessFunction[string, ev, string] { return &allStates{} }))
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		got := out.Items()
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("p=%d: Pebble output differs from the model:\n got %v\nwant %v", p, got, want)
		}
		if left := stateLeft(t, dir); len(left) != 0 {
			t.Errorf("p=%d: the state dir holds %v after the job", p, left)
		}
		waitGoroutines(t, before) // Pebble's goroutines end with the job
	}
	// A checkpointed Pebble job that fails and restarts is TestMetamorphic's.
}

// A checkpoint of heap state restores into the Pebble backend, at another
// parallelism, and back: the snapshot format does not depend on the
// backend.
func TestPebbleRestoresHeapCheckpoint(t *testing.T) {
	r := newRand(4)
	gen := func(n int, from int64) []ev {
		out := make([]ev, n)
		for i := range out {
			out[i] = ev{Key: fmt.Sprint("k", r.IntN(50)), TS: from + int64(i)}
		}
		return out
	}
	first, second, third := gen(4000, 0), gen(2000, 10000), gen(1000, 20000)
	count := func(evs ...[]ev) map[string]int {
		m := map[string]int{}
		for _, es := range evs {
			for _, e := range es {
				m[e.Key]++
			}
		}
		return m
	}
	dir1 := t.TempDir()
	job, _ := countJob(first, "events", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, dir1))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	job, out := countJob(second, "more", weir.Parallelism(3), weir.RestoreFrom(latestCheckpoint(t, dir1)), weir.AllowNonRestoredState(),
		weir.PebbleState(t.TempDir(), 4<<20), weir.Checkpointing(5*time.Millisecond, dir2))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, out.Items(), count(first), second)
	job, out = countJob(third, "third", weir.Parallelism(1), weir.RestoreFrom(latestCheckpoint(t, dir2)), weir.AllowNonRestoredState())
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, out.Items(), count(first, second), third)
}

// blobs keeps a 1 KiB value per key (ValueState) and a few map entries,
// 50 MB of state in all; a timer after the input reads every key's state
// back and emits a digest of it.
type blobs struct {
	val   *weir.ValueState[string, []byte]
	parts *weir.MapState[string, int, string]
	dir   string
	peak  *atomic.Int64 // largest size of dir seen, bytes
	heap  *atomic.Uint64
}

func (f *blobs) Open(rc *weir.RuntimeContext[string]) error {
	f.val = weir.NewValueState[[]byte](rc, "blob")
	f.parts = weir.NewMapState[int, string](rc, "parts")
	return nil
}

// blobOf is key's value: pseudo-random bytes, which do not compress.
func blobOf(key string, n int) []byte {
	seed := sha256.Sum256([]byte(key))
	b := make([]byte, n)
	rand.NewChaCha8(seed).Read(b)
	return b
}

func (f *blobs) ProcessElement(ctx *weir.KeyedContext[string, string], e ev) error {
	f.val.Update(blobOf(e.Key, 1024))
	for i := range 3 {
		f.parts.Put(i, fmt.Sprintf("%s-part-%d-%064d", e.Key, i, e.TS))
	}
	ctx.RegisterEventTimeTimer(time.UnixMilli(1 << 40))
	return nil
}

func (f *blobs) OnTimer(ctx *weir.KeyedContext[string, string], _ time.Time) error {
	if f.dir != "" && f.peak.Load() == 0 {
		var size int64
		filepath.WalkDir(f.dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if info, err := d.Info(); err == nil {
					size += info.Size()
				}
			}
			return nil
		})
		f.peak.Store(size)
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		f.heap.Store(ms.HeapAlloc)
	}
	v, ok := f.val.Value()
	if !ok || string(v) != string(blobOf(ctx.Key(), 1024)) {
		return fmt.Errorf("key %s: wrong blob", ctx.Key())
	}
	h := sha256.New()
	h.Write(v)
	for i := range 3 {
		p, _ := f.parts.Get(i)
		h.Write([]byte(p))
	}
	ctx.Emit(ctx.Key() + " " + hex.EncodeToString(h.Sum(nil))[:16])
	return nil
}

// A Pebble job holds far more state than its memory budget (50 MB of
// state, 4 MB of budget) and gives the heap job's result.
func TestPebbleStateLargerThanMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	keys, budget := 42000, int64(4<<20) // 42000 * (1 KiB + 3 * ~90 B) ≈ 50 MB against 4 MB
	if raceEnabled {
		keys, budget = 8000, 1<<20 // ≈ 10 MB against 1 MB: the same point, minutes faster
	}
	var evs []ev
	for i := range keys {
		evs = append(evs, ev{Key: fmt.Sprintf("key-%06d", (i*7919)%keys), TS: int64(i)})
	}
	stateDir := t.TempDir()
	var peak atomic.Int64
	var heapAlloc atomic.Uint64
	build := func(dir string, opts ...weir.JobOption) *weir.Collector[string] {
		job := weir.NewJob("blobs", append([]weir.JobOption{weir.Parallelism(2)}, opts...)...)
		src := weir.FromSource(job, "events", weir.SliceSource(evs),
			weir.MonotonousTimestamps(func(e ev) time.Time { return time.UnixMilli(e.TS) }))
		out := weir.Collect(weir.ProcessWith(weir.KeyBy(src, func(e ev) string { return e.Key }),
			func() weir.KeyedProcessFunction[string, ev, string] {
				return &blobs{peak: &peak, heap: &heapAlloc, dir: dir}
			}))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return out
	}
	start := time.Now()
	peb := build(stateDir, weir.PebbleState(stateDir, budget)).Items()
	pebTime := time.Since(start)
	t.Logf("Pebble: %d keys in %v; state dir %.1f MB at the end of input; Go heap %.1f MB", len(peb), pebTime, float64(peak.Load())/1e6, float64(heapAlloc.Load())/1e6)
	if peak.Load() < int64(keys)<<10*8/10 {
		t.Errorf("the state dir held %d bytes: the state did not go to disk", peak.Load())
	}
	if left := stateLeft(t, stateDir); len(left) != 0 {
		t.Errorf("the state dir holds %v after the job", left)
	}
	start = time.Now()
	heap := build("").Items()
	t.Logf("heap: %v", time.Since(start))
	slices.Sort(peb)
	slices.Sort(heap)
	if len(heap) != keys || !slices.Equal(peb, heap) {
		t.Fatalf("Pebble job: %d results, heap job: %d; equal: %v", len(peb), len(heap), slices.Equal(peb, heap))
	}
}

// Incremental checkpoints of Pebble state: a savepoint of it is by key
// group (it restores into the heap backend); and its last checkpoint
// restores at other parallelisms (rescaling copies key groups out of the
// old databases). That a job on them fails and restarts with the heap
// job's output is TestMetamorphic's first configuration.
func TestPebbleIncrementalCheckpoints(t *testing.T) {
	// Rescaling from an incremental checkpoint, and a savepoint of
	// incremental state restored into the heap backend.
	r := newRand(4)
	gen := func(n int, from int64) []ev {
		out := make([]ev, n)
		for i := range out {
			out[i] = ev{Key: fmt.Sprint("k", r.IntN(50)), TS: from + int64(i)}
		}
		return out
	}
	first, second := gen(4000, 0), gen(2000, 10000)
	count := func(evs ...[]ev) map[string]int {
		m := map[string]int{}
		for _, es := range evs {
			for _, e := range es {
				m[e.Key]++
			}
		}
		return m
	}
	dir1 := t.TempDir()
	job, _ := countJob(first, "events", weir.Parallelism(2), weir.Checkpointing(5*time.Millisecond, dir1),
		weir.PebbleState(t.TempDir(), 4<<20), weir.IncrementalCheckpoints())
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ck := latestCheckpoint(t, dir1)
	for _, p := range []int{1, 3} {
		var logs syncBuffer
		job, out := countJob(second, "more", weir.Parallelism(p), weir.RestoreFrom(ck), weir.AllowNonRestoredState(),
			weir.PebbleState(t.TempDir(), 4<<20), weir.IncrementalCheckpoints(), weir.Checkpointing(5*time.Millisecond, t.TempDir()),
			weir.Logger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))))
		if err := job.Run(context.Background()); err != nil {
			t.Fatalf("p=%d: %v", p, err)
		}
		if n := job.Metrics().Checkpoints.Restarts; n != 0 {
			t.Fatalf("p=%d: %d restarts:\n%s", p, n, logs.String())
		}
		checkCounts(t, out.Items(), count(first), second)
	}
	job, _ = countJob(second, "more", weir.RestoreFrom(ck), weir.AllowNonRestoredState())
	if err := job.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "restore it with PebbleState") {
		t.Fatalf("heap restore of incremental Pebble state: %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writes (a job's log).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// stateLeft lists what a job left in a Pebble state dir besides this
// process's working directory (proc-*) and its LOCK, which stay for the
// process's life.
func stateLeft(t *testing.T, dir string) []string {
	t.Helper()
	var left []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "proc-") {
			left = append(left, e.Name())
			continue
		}
		in, _ := os.ReadDir(filepath.Join(dir, e.Name()))
		for _, f := range in {
			if f.Name() != "LOCK" {
				left = append(left, e.Name()+"/"+f.Name())
			}
		}
	}
	return left
}
