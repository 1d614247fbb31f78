package weir_test

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// TestFilterWatermarkWith: the function sees each record's event time and
// the watermark before it (per record, not per batch), and drops what it
// returns false for; here, the records at or below the watermark.
func TestFilterWatermarkWith(t *testing.T) {
	ts := []int64{1000, 2000, 1500, 9000, 3000, 9500}
	job := weir.NewJob("filter-wm", weir.Parallelism(1))
	src := weir.FromSource(job, "ts", weir.SliceSource(ts),
		weir.BoundedOutOfOrderness(time.Second, func(v int64) time.Time { return time.UnixMilli(v) }))
	type seen struct{ ts, wm int64 }
	var saw []seen
	kept := weir.Collect(weir.FilterWatermarkWith(src, func() func(int64, int64, int64) bool {
		return func(v, ts, wm int64) bool {
			saw = append(saw, seen{ts, wm})
			return ts > wm
		}
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(saw) != len(ts) || saw[0].wm != math.MinInt64 {
		t.Fatalf("saw %v: want one call per record, the first before any watermark", saw)
	}
	maxTS := int64(math.MinInt64)
	for i, s := range saw {
		if s.ts != ts[i] {
			t.Errorf("record %d: event time %d, want %d", i, s.ts, ts[i])
		}
		if i > 0 && (s.wm < saw[i-1].wm || s.wm > maxTS-1000) {
			t.Errorf("record %d: watermark %d after %d, max event time so far %d", i, s.wm, saw[i-1].wm, maxTS)
		}
		maxTS = max(maxTS, s.ts)
	}
	got := kept.Items()
	if want := []int64{1000, 2000, 1500, 9000, 9500}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v (3000 is below the watermark after 9000)", got, want)
	}
}

// TestFlatMapWatermarkWith: the function sees the watermark before each
// record (math.MinInt64 before the first, then never going back) and
// emits what it likes; here each record with the watermark it came after.
func TestFlatMapWatermarkWith(t *testing.T) {
	ts := []int64{1000, 2000, 1500, 9000, 3000, 9500}
	job := weir.NewJob("flatmap-wm", weir.Parallelism(1))
	src := weir.FromSource(job, "ts", weir.SliceSource(ts),
		weir.BoundedOutOfOrderness(time.Second, func(v int64) time.Time { return time.UnixMilli(v) }))
	type seen struct{ v, wm int64 }
	out := weir.Collect(weir.FlatMapWatermarkWith(src, func() func(int64, int64, func(seen)) {
		return func(v, wm int64, emit func(seen)) { emit(seen{v, wm}) }
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	if len(got) != len(ts) || got[0].wm != math.MinInt64 {
		t.Fatalf("got %v: want a record each, the first before any watermark", got)
	}
	maxTS := int64(math.MinInt64)
	for i, s := range got {
		if s.v != ts[i] || (i > 0 && (s.wm < got[i-1].wm || s.wm > maxTS-1000)) {
			t.Errorf("record %d: %+v after %+v, max event time so far %d", i, s, got[i-1], maxTS)
		}
		maxTS = max(maxTS, s.v)
	}
	if got[4].wm != 9000-1000-1 {
		t.Errorf("the record after 9000 saw watermark %d, want 7999 (9000 less the bound, less 1 ms)", got[4].wm)
	}
}
