package file

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// TestMicrobatchExactlyOnceFiles runs a microbatch job into the
// exactly-once file sink, with epochs of 400 records, and fails it once in
// the middle of an epoch: the job restarts at the last committed epoch's
// end, and the committed part files hold every record exactly once, in
// order.
func TestMicrobatchExactlyOnceFiles(t *testing.T) {
	const n, every, failAt = 5000, 400, 2100
	items := make([]int, n)
	for i := range items {
		items[i] = i
	}
	out := t.TempDir()
	var job *weir.Job
	job = weir.NewJob("mb-files", weir.Microbatch(time.Hour), weir.Checkpointing(time.Hour, t.TempDir()),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 2, Interval: time.Hour}))
	src := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(items).(weir.RestorableSource[int]), every)
	var failed atomic.Bool
	var firstAfter atomic.Int64
	firstAfter.Store(-1)
	in := weir.Map(weir.FromSource(job, "ints", weir.Source[int](src), weir.MonotonousTimestamps(func(i int) time.Time { return time.UnixMilli(int64(i)) })), func(i int) int {
		if i == failAt && failed.CompareAndSwap(false, true) {
			panic("injected failure")
		}
		if failed.Load() {
			firstAfter.CompareAndSwap(-1, int64(i))
		}
		return i
	})
	weir.To(in, ExactlyOnce[int](out))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if n := job.Metrics().Checkpoints.Restarts; n != 1 {
		t.Fatalf("%d restarts, want 1", n)
	}
	if f := firstAfter.Load(); f <= 0 || f%every != 0 || f > failAt {
		t.Fatalf("after the failure at %d the job went on from record %d: not an epoch boundary of %d", failAt, f, every)
	}
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "%d\n", i)
	}
	if got := committed(t, out); got != want.String() {
		t.Fatalf("committed output is not every record once, in order: %d bytes, want %d", len(got), want.Len())
	}
	wantNoHidden(t, out)
}
