// Package weirtest helps tests of jobs be independent of the machine's
// speed. CheckpointEvery puts checkpoints at exact places of a job's input,
// where tests used to pace the input with sleeps and hope that the
// periodic checkpoints fell in between.
package weirtest

import (
	"context"
	"sync/atomic"
	"time"

	"bytes"
	"sync"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/engine"
	"github.com/weirstream/weir/internal/testing/poll"
)

// CheckpointEvery wraps a restorable source: after every n records a
// reader asks the job for a checkpoint (Job.Checkpoint) and reads on only
// once that checkpoint is complete or has failed. So a test that fails the
// job after k*n records knows that k checkpoints completed before (unless
// one failed, which the test sees in the job's metrics), however slow the
// machine. job is called when the first checkpoint is due (the Job is
// usually built after its source). Taken is the number of checkpoints that
// completed at the readers' request.
func CheckpointEvery[T any](job func() *weir.Job, src weir.RestorableSource[T], n int) *Paced[T] {
	return &Paced[T]{src: src, job: job, n: n}
}

// Paced is the source CheckpointEvery returns.
type Paced[T any] struct {
	src   weir.RestorableSource[T]
	job   func() *weir.Job
	n     int
	taken atomic.Int64
}

// Taken is the number of checkpoints that completed at the readers'
// request.
func (p *Paced[T]) Taken() int64 { return p.taken.Load() }

func (p *Paced[T]) Splits(ctx context.Context) ([]weir.Split, error) { return p.src.Splits(ctx) }

func (p *Paced[T]) Open(ctx context.Context, s weir.Split) (weir.SplitReader[T], error) {
	r, err := p.src.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	return &pacedReader[T]{p: p, r: r.(weir.CheckpointedReader[T])}, nil
}

func (p *Paced[T]) OpenAt(ctx context.Context, s weir.Split, pos []byte) (weir.SplitReader[T], error) {
	r, err := p.src.OpenAt(ctx, s, pos)
	if err != nil {
		return nil, err
	}
	return &pacedReader[T]{p: p, r: r.(weir.CheckpointedReader[T])}, nil
}

type pacedReader[T any] struct {
	p     *Paced[T]
	r     weir.CheckpointedReader[T]
	count int
	wait  chan error // the checkpoint asked for, until it is answered
}

func (r *pacedReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	if r.wait != nil {
		// The source task takes the checkpoint's barrier between reads:
		// return empty-handed now and then (as a reader of an unbounded
		// split does) until the checkpoint is answered.
		select {
		case err := <-r.wait:
			r.wait = nil
			if err == nil {
				r.p.taken.Add(1)
			}
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-time.After(time.Millisecond):
			return 0, nil
		}
	}
	if r.count >= r.p.n {
		r.count = 0
		ch := make(chan error, 1)
		r.wait = ch
		job := r.p.job()
		go func() {
			_, err := job.Checkpoint(ctx)
			ch <- err
		}()
		return 0, nil
	}
	k, err := r.r.Read(ctx, dst[:min(len(dst), r.p.n-r.count)])
	r.count += k
	return k, err
}

func (r *pacedReader[T]) Position() ([]byte, error) { return r.r.Position() }
func (r *pacedReader[T]) Close() error              { return r.r.Close() }

// SetBadRecordHandler passes the job's handler of malformed records on to
// the wrapped reader. Use OnBadRecord only with sources whose readers
// report bad records (weir.BadRecordReporter): for others it panics, as the
// job would fail for them unwrapped.
func (r *pacedReader[T]) SetBadRecordHandler(h func(raw []byte, position string, err error)) {
	r.r.(weir.BadRecordReporter).SetBadRecordHandler(h)
}

// HoldAfter wraps a restorable source whose readers each return at most k
// records, then nothing (an unbounded split with no new data) until the
// job ends: a test that stops a job of an endless, rate-paced source knows
// the job has not read more than k records per split, however slow the
// machine was to stop it. Positions are the wrapped reader's, so a job that
// restores from its checkpoints may read the source unwrapped.
func HoldAfter[T any](src weir.RestorableSource[T], k int) weir.RestorableSource[T] {
	return &held[T]{src: src, k: k}
}

type held[T any] struct {
	src weir.RestorableSource[T]
	k   int
}

func (h *held[T]) Splits(ctx context.Context) ([]weir.Split, error) { return h.src.Splits(ctx) }

func (h *held[T]) Open(ctx context.Context, s weir.Split) (weir.SplitReader[T], error) {
	r, err := h.src.Open(ctx, s)
	if err != nil {
		return nil, err
	}
	return &heldReader[T]{r: r.(weir.CheckpointedReader[T]), left: h.k}, nil
}

func (h *held[T]) OpenAt(ctx context.Context, s weir.Split, pos []byte) (weir.SplitReader[T], error) {
	r, err := h.src.OpenAt(ctx, s, pos)
	if err != nil {
		return nil, err
	}
	return &heldReader[T]{r: r.(weir.CheckpointedReader[T]), left: h.k}, nil
}

type heldReader[T any] struct {
	r    weir.CheckpointedReader[T]
	left int
}

func (r *heldReader[T]) Read(ctx context.Context, dst []T) (int, error) {
	if r.left == 0 {
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-time.After(time.Millisecond):
			return 0, nil
		}
	}
	k, err := r.r.Read(ctx, dst[:min(len(dst), r.left)])
	r.left -= k
	return k, err
}

func (r *heldReader[T]) Position() ([]byte, error) { return r.r.Position() }
func (r *heldReader[T]) Close() error              { return r.r.Close() }

// FirstCheckpointAfter makes the first periodic checkpoint of each
// execution attempt due d after its start (at most one interval), where
// it is otherwise a random time in [0, interval]. A test that checkpoints
// only when it asks (Checkpointing(time.Hour, ...) with CheckpointEvery
// or Job.Checkpoint) passes time.Hour, so that no periodic checkpoint
// falls inside it, whatever the draw.
func FirstCheckpointAfter(d time.Duration) weir.JobOption {
	return engine.FirstCheckpointAfter(d)
}

// Poll and WaitFor are internal/testing/poll's, here so that the tests outside the
// root package need one helper package.
var (
	Poll    = poll.Poll
	WaitFor = poll.WaitFor
)

// LockedBuffer is a log that many goroutines write (a job's logger, a
// command's output) while a test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
