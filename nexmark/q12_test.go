package nexmark_test

import (
	"context"
	"fmt"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

// phasedSource is one split whose events come in phases: phase k+1 is read
// only after release(k+1). Between phases the reader returns 0, nil every
// few ms, so that the job fires timers and takes checkpoints meanwhile.
type phasedSource struct {
	phases    [][]nexmark.Event
	released  atomic.Int32 // phases that may be read
	delivered atomic.Int32 // phases handed to the job (Read was called again after them)
}

type oneSplit struct{}

func (oneSplit) ID() string { return "phases" }

func (s *phasedSource) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{oneSplit{}}, nil
}

func (s *phasedSource) Open(context.Context, weir.Split) (weir.SplitReader[nexmark.Event], error) {
	return &phasedReader{s: s}, nil
}

type phasedReader struct {
	s    *phasedSource
	next int // next phase to read
}

func (r *phasedReader) Read(ctx context.Context, dst []nexmark.Event) (int, error) {
	r.s.delivered.Store(int32(r.next))
	if r.next == len(r.s.phases) {
		return 0, io.EOF
	}
	if int(r.s.released.Load()) <= r.next {
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-time.After(2 * time.Millisecond):
			return 0, nil
		}
	}
	p := r.s.phases[r.next]
	if len(p) > len(dst) {
		return 0, fmt.Errorf("phase of %d events, room for %d", len(p), len(dst))
	}
	r.next++
	return copy(dst, p), nil
}

func (r *phasedReader) Close() error { return nil }

// OpenAt and Position make the source checkpointable (the test syncs on
// checkpoints); it is never restored.
func (s *phasedSource) OpenAt(_ context.Context, _ weir.Split, pos []byte) (weir.SplitReader[nexmark.Event], error) {
	return &phasedReader{s: s, next: int(pos[0])}, nil
}

func (r *phasedReader) Position() ([]byte, error) { return []byte{byte(r.next)}, nil }

// rowLog is an Output that keeps every row, readable while the job runs.
type rowLog struct {
	mu   sync.Mutex
	rows []string
}

func (l *rowLog) output() nexmark.Output {
	return func(int) (nexmark.RowWriter, error) { return l, nil }
}

func (l *rowLog) Write(r nexmark.Row) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rows = append(l.rows, string(r.AppendJSON(nil)))
	return nil
}

func (l *rowLog) Close() error { return nil }

func (l *rowLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.rows)
	slices.Sort(out)
	return out
}

// waitFor polls cond until it holds, failing the test after a generous
// deadline (the machine may be busy; nothing here measures speed).
// A job that ends meanwhile fails the test with its error.
func waitFor(t *testing.T, done <-chan error, what string, cond func() bool) {
	t.Helper()
	weirtest.WaitFor(t, what, 60*time.Second, func() bool {
		select {
		case err := <-done:
			t.Fatalf("job ended waiting for %s: %v", what, err)
		default:
		}
		return cond()
	})
}

// q12 counts bids in windows of the job's clock: a window is emitted when
// the clock passes its end (while the input is still open), a bid in a
// later window closes the open one, and at the end of the input the open
// windows are emitted too.
func TestQ12ProcessingTimeWindows(t *testing.T) {
	const w0 = 1_700_000_000_000 // a multiple of 10 s
	for _, p := range []int{1, 2} {
		t.Run(fmt.Sprint("parallelism ", p), func(t *testing.T) {
			var clock atomic.Int64
			clock.Store(w0 + 1000)
			src := &phasedSource{phases: [][]nexmark.Event{
				{bid(1, 7, 1, 0), bid(1, 7, 1, 99_000), bid(2, 8, 1, 5)}, // event times do not matter
				{bid(1, 7, 1, 1)},
				{bid(1, 7, 1, 2), bid(1, 9, 1, 3)},
			}}
			job := weir.NewJob("q12-clock", weir.Parallelism(p), weir.Checkpointing(5*time.Millisecond, t.TempDir()),
				weir.Clock(func() time.Time { return time.UnixMilli(clock.Load()) }))
			log := &rowLog{}
			q, _ := nexmark.Lookup("q12")
			q.Build(nexmark.Events(job, src), log.output())
			done := make(chan error, 1)
			go func() { done <- job.Run(t.Context()) }()

			// processed waits until the job has processed phase k: a
			// checkpoint triggered after the source handed the phase over
			// has completed (one checkpoint is in flight at a time, so the
			// second to complete from now was triggered after now).
			processed := func(k int) {
				waitFor(t, done, fmt.Sprint("phase ", k, " read"), func() bool { return int(src.delivered.Load()) >= k })
				n := job.Metrics().Checkpoints.Completed
				waitFor(t, done, fmt.Sprint("phase ", k, " processed"), func() bool { return job.Metrics().Checkpoints.Completed >= n+2 })
			}
			row := func(bidder, count, start int64) string {
				return fmt.Sprintf(`{"bidder":%d,"bid_count":%d,"starttime":%d,"endtime":%d}`, bidder, count, start, start+10_000)
			}

			src.released.Store(1)
			processed(1)
			if got := log.snapshot(); len(got) != 0 {
				t.Fatalf("rows before the window's end: %q", got)
			}
			clock.Store(w0 + 9_999) // the window's end − 1: its timer fires
			first := []string{row(7, 2, w0), row(8, 1, w0)}
			waitFor(t, done, "the first window", func() bool { return len(log.snapshot()) == 2 })
			if got := log.snapshot(); !slices.Equal(got, first) {
				t.Fatalf("first window: %q, want %q", got, first)
			}

			clock.Store(w0 + 10_500)
			src.released.Store(2)
			processed(2)
			// The clock jumps past two window ends as phase 3 is read: the
			// second window is emitted by its timer or by bidder 7's next
			// bid, whichever the job does first; the same row either way.
			clock.Store(w0 + 30_005)
			src.released.Store(3)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := append(first, row(7, 1, w0+10_000), row(7, 1, w0+30_000), row(9, 1, w0+30_000))
			slices.Sort(want)
			if got := log.snapshot(); !slices.Equal(got, want) {
				t.Errorf("rows %q\nwant %q", got, want)
			}
		})
	}
}
