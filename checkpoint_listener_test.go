package weir_test

import (
	"context"
	"encoding/binary"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// listeningSource has one split of n ints. Its reader implements
// weir.CheckpointListener; after the last record it keeps the split open
// (reading nothing) until it was told of `want` completed checkpoints.
type listeningSource struct {
	n, want int
	mu      sync.Mutex
	got     []notification
}

type notification struct {
	id  int64
	pos int
}

type oneSplit struct{}

func (oneSplit) ID() string { return "only" }

func (s *listeningSource) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{oneSplit{}}, nil
}
func (s *listeningSource) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[int], error) {
	return &listeningReader{src: s}, nil
}
func (s *listeningSource) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[int], error) {
	return &listeningReader{src: s, next: int(binary.BigEndian.Uint64(pos))}, nil
}

func (s *listeningSource) notifications() []notification {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]notification(nil), s.got...)
}

type listeningReader struct {
	src  *listeningSource
	next int
}

func (r *listeningReader) Read(ctx context.Context, dst []int) (int, error) {
	k := 0
	for k < len(dst) && r.next < r.src.n && k < 7 {
		dst[k] = r.next
		r.next++
		k++
	}
	if k > 0 {
		return k, nil
	}
	if len(r.src.notifications()) >= r.src.want {
		return 0, io.EOF
	}
	select { // an unbounded split with nothing to read waits a little
	case <-ctx.Done():
	case <-time.After(2 * time.Millisecond):
	}
	return 0, nil
}

func (r *listeningReader) Position() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(r.next)), nil
}

func (r *listeningReader) NotifyCheckpointComplete(_ context.Context, id int64, pos []byte) error {
	r.src.mu.Lock()
	defer r.src.mu.Unlock()
	r.src.got = append(r.src.got, notification{id: id, pos: int(binary.BigEndian.Uint64(pos))})
	return nil
}

func (r *listeningReader) Close() error { return nil }

func TestSourceReadersAreToldOfCompletedCheckpoints(t *testing.T) {
	src := &listeningSource{n: 500, want: 3}
	job := weir.NewJob("listen", weir.Checkpointing(5*time.Millisecond, t.TempDir()))
	s := weir.FromSource[int](job, "src", src, weir.NoWatermarks[int]())
	var out []string
	var mu sync.Mutex
	weir.To(weir.Map(s, strconv.Itoa), weir.SinkFunc[string](func(_ context.Context, items []string) error {
		mu.Lock()
		out = append(out, items...)
		mu.Unlock()
		return nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := src.notifications()
	if len(got) < src.want {
		t.Fatalf("got %d notifications, want at least %d", len(got), src.want)
	}
	for i, n := range got {
		if n.pos < 0 || n.pos > src.n {
			t.Errorf("notification %d: position %d out of range", i, n.pos)
		}
		if i > 0 && (n.id <= got[i-1].id || n.pos < got[i-1].pos) {
			t.Errorf("notification %d (%+v) does not follow %+v", i, n, got[i-1])
		}
	}
	if len(out) != src.n {
		t.Errorf("sink got %d records, want %d", len(out), src.n)
	}
}

// flushSink records the checkpoint ids its writer was flushed for and the
// number of records written before each flush.
type flushSink struct {
	mu      sync.Mutex
	written int
	flushes []notification
}

func (s *flushSink) OpenWriter(context.Context, int, int) (weir.SinkWriter[string], error) {
	return &flushWriter{s}, nil
}

type flushWriter struct{ s *flushSink }

func (w *flushWriter) Write(_ context.Context, items []string) error {
	w.s.mu.Lock()
	w.s.written += len(items)
	w.s.mu.Unlock()
	return nil
}
func (w *flushWriter) Flush(_ context.Context, id int64) error {
	w.s.mu.Lock()
	w.s.flushes = append(w.s.flushes, notification{id: id, pos: w.s.written})
	w.s.mu.Unlock()
	return nil
}
func (w *flushWriter) Close(context.Context) error { return nil }

func TestFlushingWritersAreFlushedAtEveryCheckpoint(t *testing.T) {
	src := &listeningSource{n: 300, want: 3}
	sink := &flushSink{}
	job := weir.NewJob("flush", weir.Checkpointing(5*time.Millisecond, t.TempDir()))
	s := weir.FromSource[int](job, "src", src, weir.NoWatermarks[int]())
	weir.To(weir.Map(s, strconv.Itoa), weir.Sink[string](sink))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	done := job.Metrics().Checkpoints.Completed
	if int64(len(sink.flushes)) < done || done < 3 {
		t.Fatalf("%d flushes for %d completed checkpoints", len(sink.flushes), done)
	}
	for i, f := range sink.flushes {
		if i > 0 && (f.id <= sink.flushes[i-1].id || f.pos < sink.flushes[i-1].pos) {
			t.Fatalf("flush %d %+v after %+v", i, f, sink.flushes[i-1])
		}
	}
	if last := sink.flushes[len(sink.flushes)-1]; last.pos != src.n {
		t.Fatalf("the final checkpoint's flush saw %d records, want %d", last.pos, src.n)
	}
}
