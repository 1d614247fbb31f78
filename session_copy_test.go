package weir_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// manyKeys is record i of a stream of sessionKeys keys in turn, 10 ms
// apart: with an hour's gap, every key's session stays open to the end.
func manyKeys(i int64, _ *rand.Rand) ev {
	return ev{Key: fmt.Sprintf("k%d", i%sessionKeys), TS: i * 10}
}

// sessionKeys is more keys a subtask (at parallelism 2) than the window
// operator copies at a barrier: the rest of each checkpoint's copy is made
// by the task loop afterwards, and copy-on-write.
const sessionKeys = 8000

// Sessions of many keys through checkpoints every 20 ms, a stop with a
// savepoint while the sources are held (the task loop, without input,
// makes the copy the savepoint waits for), a restore at another
// parallelism, and microbatch epochs (the sources wait for each epoch's
// checkpoint): every run's output is the uninterrupted run's, whole.
func TestSessionCopyThroughCheckpoints(t *testing.T) {
	const n = 5 * sessionKeys
	w := weir.Session(time.Hour)
	run := func(sink *memSink, gen weir.Source[ev], p int, opts ...weir.JobOption) *weir.Job {
		return windowJobFrom(w, gen, p, t.TempDir(), sink, opts...)
	}
	source := func(count int64, rate float64) weir.Source[ev] {
		return weir.GeneratorSource(weir.GeneratorConfig{Count: count, Seed: 3, Rate: rate}, manyKeys)
	}
	ref := newMemSink()
	if err := run(ref, source(n, 0), 2).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := ref.output()
	if len(want) != sessionKeys {
		t.Fatalf("%d sessions, want %d", len(want), sessionKeys)
	}

	mb := newMemSink()
	if err := run(mb, source(n, 0), 2, weir.Microbatch(10*time.Millisecond)).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := mb.output(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("microbatch: %d sessions, want %d as continuous", len(got), len(want))
	}

	first := newMemSink()
	// Each of the two readers stops after n/4 events: every key has a
	// session by then, and none has fired.
	held := weirtest.HoldAfter(source(-1, 100_000).(weir.RestorableSource[ev]), n/4)
	job := run(first, held, 2)
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	waitFor(t, "checkpoints", func() bool { return job.Metrics().Checkpoints.Completed >= 3 })
	path, err := job.Savepoint(context.Background(), filepath.Join(t.TempDir(), "sp"), true)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
	}
	if len(first.output()) != 0 {
		t.Fatalf("%d sessions fired before the savepoint", len(first.output()))
	}
	if err := run(first, source(n, 0), 1, weir.RestoreFrom(path)).Run(context.Background()); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if got := first.output(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("restored: %d sessions, want %d as one run", len(got), len(want))
	}
}
