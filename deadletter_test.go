package weir_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
)

// rawSource is one split of strings decoded as ints; the ones that are not
// numbers are bad records. It is restorable (position = index) and reports
// bad records to the job's handler when one is set.
type rawSource struct{ items []string }

func (s *rawSource) Splits(context.Context) ([]weir.Split, error) {
	return []weir.Split{oneSplit{}}, nil
}
func (s *rawSource) Open(ctx context.Context, sp weir.Split) (weir.SplitReader[int], error) {
	return &rawReader{items: s.items}, nil
}
func (s *rawSource) OpenAt(ctx context.Context, sp weir.Split, pos []byte) (weir.SplitReader[int], error) {
	return &rawReader{items: s.items, next: int(binary.BigEndian.Uint64(pos))}, nil
}

type rawReader struct {
	items []string
	next  int
	onBad func([]byte, string, error)
}

func (r *rawReader) SetBadRecordHandler(h func([]byte, string, error)) { r.onBad = h }
func (r *rawReader) Read(ctx context.Context, dst []int) (int, error) {
	n := 0
	for n < len(dst) && n < 3 && r.next < len(r.items) {
		raw := r.items[r.next]
		v, err := strconv.Atoi(raw)
		pos := "item " + strconv.Itoa(r.next)
		r.next++
		if err != nil {
			if r.onBad == nil {
				return n, fmt.Errorf("%s: %w", pos, err)
			}
			r.onBad([]byte(raw), pos, err)
			continue
		}
		dst[n] = v
		n++
	}
	if r.next == len(r.items) {
		return n, io.EOF
	}
	return n, nil
}
func (r *rawReader) Position() ([]byte, error) {
	return binary.BigEndian.AppendUint64(nil, uint64(r.next)), nil
}
func (r *rawReader) Close() error { return nil }

// TestDeadLettersAreExactlyOnceThroughFailures sends bad records to a
// two-phase-commit sink in a checkpointed job that fails once: every dead
// letter is committed exactly once, as is every good record.
func TestDeadLettersAreExactlyOnceThroughFailures(t *testing.T) {
	var items, wantBad, wantGood []string
	for i := range 3000 {
		if i%7 == 3 {
			items = append(items, "bad"+strconv.Itoa(i))
			wantBad = append(wantBad, "item "+strconv.Itoa(i)+" bad"+strconv.Itoa(i))
			continue
		}
		items = append(items, strconv.Itoa(i))
		wantGood = append(wantGood, strconv.Itoa(i))
	}
	good, dead := newMemSink(), newMemSink()
	job := weir.NewJob("dlq", weir.Checkpointing(5*time.Millisecond, t.TempDir()),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 10, Interval: time.Hour}))
	// A checkpoint after every 500 items: at least two complete before
	// the failure, however slow the machine.
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.RestorableSource[int](&rawSource{items}), 500)
	src := weir.FromSource(job, "raw", weir.Source[int](paced), weir.NoWatermarks[int]())
	bad := weir.BadRecords(src)
	weir.To(weir.Map(bad, func(b weir.BadRecord) string { return b.Position + " " + string(b.Raw) }), weir.Sink[string](dead), weir.UID("dead"))
	var failed atomic.Bool
	s := weir.Map(src, func(v int) string {
		if !failed.Load() {
			if v > 2000 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
				panic("injected failure")
			}
		}
		return strconv.Itoa(v)
	})
	weir.To(s, weir.Sink[string](good), weir.UID("good"))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("the failure was not injected")
	}
	gotBad, gotGood := dead.output(), good.output()
	slices.Sort(wantBad)
	slices.Sort(wantGood)
	if !slices.Equal(gotBad, wantBad) {
		t.Fatalf("dead letters: got %d, want %d (first got %q)", len(gotBad), len(wantBad), gotBad[:min(3, len(gotBad))])
	}
	if !slices.Equal(gotGood, wantGood) {
		t.Fatalf("good records: got %d, want %d", len(gotGood), len(wantGood))
	}
}
