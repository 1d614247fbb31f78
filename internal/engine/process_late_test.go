package engine

import (
	"context"
	"slices"
	"testing"
	"time"
)

// lateFilter passes on the records at or after the watermark and drops
// the others, counting them with DropLate.
type lateFilter struct{}

func (lateFilter) ProcessElement(ctx *KeyedContext[string, int64], e lateEv) error {
	if ctx.Timestamp().Before(ctx.Watermark()) {
		ctx.DropLate()
		return nil
	}
	ctx.Emit(e.ts)
	return nil
}

type lateEv struct {
	key string
	ts  int64 // ms
}

// TestProcessDropLate: the records a process function drops with
// DropLate are counted in its operator's LateDropped, on either state
// backend, and in no other operator's.
func TestProcessDropLate(t *testing.T) {
	// watermark: the greatest time before the record - 1 ms
	in := []lateEv{{"a", 1000}, {"b", 2000}, {"a", 3000}, {"b", 100}, {"a", 4000}, {"b", 3998}, {"a", 3999}, {"b", 5000}, {"a", 200}}
	wantOut := []int64{1000, 2000, 3000, 3999, 4000, 5000}
	for _, backend := range []string{"heap", "pebble"} {
		t.Run(backend, func(t *testing.T) {
			opts := []JobOption{HeapState()}
			if backend == "pebble" {
				opts = []JobOption{PebbleState(t.TempDir(), 0)}
			}
			j := NewJob("late", opts...)
			src := FromSource(j, "src", SliceSource(in), MonotonousTimestamps(func(e lateEv) time.Time { return time.UnixMilli(e.ts) }))
			ks := KeyBy(src, func(e lateEv) string { return e.key })
			out := Collect(Process(ks, KeyedProcessFunction[string, lateEv, int64](lateFilter{}), Name("late-filter")))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := j.Run(ctx); err != nil {
				t.Fatal(err)
			}
			got := out.Items()
			slices.Sort(got)
			if !slices.Equal(got, wantOut) {
				t.Fatalf("passed %v, want %v", got, wantOut)
			}
			for _, m := range j.Metrics().Operators {
				want := int64(0)
				if m.Name == "late-filter" {
					want = 3 // 100, 3998 and 200
				}
				if m.LateDropped != want {
					t.Errorf("operator %q subtask %d: %d late dropped, want %d", m.Name, m.Subtask, m.LateDropped, want)
				}
			}
		})
	}
}

// TestJobStateBackend: StateBackend names the backend of the job's
// options, the last of HeapState and PebbleState winning.
func TestJobStateBackend(t *testing.T) {
	for _, c := range []struct {
		opts []JobOption
		want string
	}{
		{nil, "heap"},
		{[]JobOption{HeapState()}, "heap"},
		{[]JobOption{PebbleState("/tmp/x", 0)}, "pebble"},
		{[]JobOption{PebbleState("/tmp/x", 0), Parallelism(2), HeapState()}, "heap"},
		{[]JobOption{HeapState(), PebbleState("/tmp/x", 1<<20), IncrementalCheckpoints()}, "pebble"},
	} {
		if got := NewJob("j", c.opts...).StateBackend(); got != c.want {
			t.Errorf("%v: state backend %q, want %q", c.opts, got, c.want)
		}
	}
}
