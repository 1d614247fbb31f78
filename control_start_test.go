package weir_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/control"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// gatedSource holds the job in its start (Splits is called while the job
// compiles, before its tasks and coordinator exist) until gate is closed.
type gatedSource struct {
	weir.RestorableSource[ev]
	gate chan struct{}
}

func (s gatedSource) Splits(ctx context.Context) ([]weir.Split, error) {
	select {
	case <-s.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.RestorableSource.Splits(ctx)
}

// lineSignal closes ch when a log line containing want is written.
type lineSignal struct {
	want []byte
	once sync.Once
	ch   chan struct{}
}

func (w *lineSignal) Write(p []byte) (int, error) {
	if bytes.Contains(p, w.want) {
		w.once.Do(func() { close(w.ch) })
	}
	return len(p), nil
}

// A savepoint asked for through the control endpoint after the job started
// but before its tasks run (here: its source still enumerating splits)
// waits for the job to run and succeeds, instead of failing with "the job
// is not running". The test releases the start only once the job logged
// that the request waits; on the old code the request failed at once.
func TestSavepointRightAfterStartWaitsForTheJob(t *testing.T) {
	ck := t.TempDir()
	waiting := &lineSignal{want: []byte("request waits for the job to run"), ch: make(chan struct{})}
	log := slog.New(slog.NewTextHandler(waiting, &slog.HandlerOptions{Level: slog.LevelDebug}))
	job := weir.NewJob("start", weir.Checkpointing(time.Hour, ck), weirtest.FirstCheckpointAfter(time.Hour), weir.ControlAddr("127.0.0.1:0"), weir.Logger(log))
	gen := weir.GeneratorSource(weir.GeneratorConfig{Count: -1, Seed: 3, Rate: 10_000}, genEvents).(weir.RestorableSource[ev])
	src := gatedSource{gen, make(chan struct{})}
	weir.To(weir.FromSource(job, "gen", weir.Source[ev](src), weir.NoWatermarks[ev]()), weir.SinkFunc[ev](func(context.Context, []ev) error { return nil }))
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	waitFor(t, "control.addr", func() bool {
		_, err := os.Stat(filepath.Join(ck, control.AddrFile))
		return err == nil
	})
	addr, token, err := control.Endpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		path string
		err  error
	}
	res := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		p, err := control.RequestSavepoint(ctx, addr, token, "sp", true)
		res <- result{p, err}
	}()
	select {
	case <-waiting.ch:
	case r := <-res:
		t.Fatalf("a savepoint asked for while the job starts must wait for it: %q, %v", r.path, r.err)
	case <-time.After(time.Minute):
		t.Fatal("the request neither waited nor answered")
	}
	close(src.gate)
	r := <-res
	if r.err != nil {
		t.Fatalf("savepoint: %v", r.err)
	}
	if _, err := os.Stat(filepath.Join(r.path, "_metadata")); err != nil {
		t.Fatalf("the savepoint is not complete: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("a job stopped with a savepoint must end cleanly: %v", err)
	}
}

// Savepoint and Checkpoint of a job whose Run returned fail at once.
func TestSavepointAfterRunFails(t *testing.T) {
	job := weir.NewJob("ended", weir.Checkpointing(time.Hour, t.TempDir()), weirtest.FirstCheckpointAfter(time.Hour))
	weir.To(weir.FromSource(job, "src", weir.SliceSource([]int{1}), weir.NoWatermarks[int]()), weir.SinkFunc[int](func(context.Context, []int) error { return nil }))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := job.Savepoint(ctx, t.TempDir()+"/sp", false); err == nil || ctx.Err() != nil {
		t.Fatalf("Savepoint after Run: %v (ctx %v)", err, ctx.Err())
	}
	if _, err := job.Checkpoint(ctx); err == nil || ctx.Err() != nil {
		t.Fatalf("Checkpoint after Run: %v (ctx %v)", err, ctx.Err())
	}
}
