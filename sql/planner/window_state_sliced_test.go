package planner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/types"
)

// TestSlicedWindowsRescale: a savepoint of sliced HOP aggregations on
// Pebble (window_state_sliced.go: a key's slices in one value, one timer
// per key), taken in the middle of the input, restores at another
// parallelism (the slices and timers move by key group), and the rows
// before the savepoint and after it are those of an uninterrupted run on
// the heap. A savepoint taken with one accumulator per window
// (Config.DisableSlicedWindows: what weir wrote before) does not restore
// into the sliced plan: the job fails, naming the operator whose state it
// cannot take.
func TestSlicedWindowsRescale(t *testing.T) {
	const n, hold = 1500, 700
	values.mu.Lock()
	values.data["sliced-rescale"] = windowRows(23, n)
	values.mu.Unlock()
	ddl := func(hold int) string {
		return fmt.Sprintf(`CREATE TABLE w (k INT, s STRING, v BIGINT, d DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
			WITH ('connector' = 'held-values', 'data-id' = 'sliced-rescale', 'hold-after' = '%d');`, hold)
	}
	const query = `SELECT k, window_start, window_end, COUNT(*), MAX(v), MIN(v)
		FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY k, window_start, window_end`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var mu sync.Mutex
	var rows []string
	plan := func(s *Session, hold int) *weir.Job {
		t.Helper()
		if _, err := s.Exec(ddl(hold)); err != nil {
			t.Fatal(err)
		}
		schema, st, err := s.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		st.Subscribe(func(rs []types.Row) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rs {
				rows = append(rows, r.Kind.String()+FormatRow(types.Row{Values: r.Values}, schema))
			}
			return nil
		})
		job, err := s.Job([]*Statement{st})
		if err != nil {
			t.Fatal(err)
		}
		return job
	}
	result := func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Sorted(slices.Values(rows))
		rows = nil
		return out
	}
	if err := plan(NewSession(Parallelism(1)), 0).Run(ctx); err != nil {
		t.Fatal(err)
	}
	want := result()
	if len(want) < 100 {
		t.Fatalf("%d rows uninterrupted", len(want))
	}
	// savepoint takes a savepoint of a job at p1 on Pebble (per window
	// with perWindow) once the held rows went through the window
	// aggregation, and stops it
	savepoint := func(dir string, p1 int, perWindow bool) string {
		t.Helper()
		before := slicedPlans.Load()
		s := NewSession(Parallelism(p1), Checkpointing(time.Hour, filepath.Join(dir, "ck")),
			JobOptions(weirtest.FirstCheckpointAfter(time.Hour), weir.PebbleState(filepath.Join(dir, "state"), 8<<20)))
		s.plan.DisableSlicedWindows = perWindow
		job := plan(s, hold)
		if sliced := slicedPlans.Load() > before; sliced == perWindow {
			t.Fatalf("sliced %v, want %v", sliced, !perWindow)
		}
		errc := make(chan error, 1)
		go func() { errc <- job.Run(ctx) }()
		weirtest.WaitFor(t, "the held rows through the window aggregation", time.Minute, func() bool {
			var in int64
			for _, m := range job.Metrics().Operators {
				if strings.HasPrefix(m.Name, "process") {
					in += m.RecordsIn
				}
			}
			return in >= hold
		})
		sp := filepath.Join(dir, "sp")
		if _, err := job.Savepoint(ctx, sp, true); err != nil {
			t.Fatal(err)
		}
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
		return sp
	}
	restore := func(dir, sp string, p2 int) error {
		s := NewSession(Parallelism(p2), Checkpointing(time.Hour, filepath.Join(dir, "ck2")),
			JobOptions(weirtest.FirstCheckpointAfter(time.Hour), weir.RestoreFrom(sp), weir.PebbleState(filepath.Join(dir, "state2"), 8<<20)))
		return plan(s, 0).Run(ctx)
	}
	for _, c := range []struct{ p1, p2 int }{{1, 2}, {2, 1}} {
		dir := t.TempDir()
		sp := savepoint(dir, c.p1, false)
		if len(rows) == 0 || len(rows) >= len(want) {
			t.Fatalf("p%d: %d rows before the savepoint, %d in all: the savepoint is not in the middle", c.p1, len(rows), len(want))
		}
		if err := restore(dir, sp, c.p2); err != nil {
			t.Fatal(err)
		}
		if got := result(); !slices.Equal(got, want) {
			t.Errorf("from p%d to p%d: %d rows, %d uninterrupted:\n%s", c.p1, c.p2, len(got), len(want), diffLines(want, got))
		}
	}
	// the per-window layout's savepoint
	dir := t.TempDir()
	sp := savepoint(dir, 2, true)
	result()
	err := restore(dir, sp, 1)
	if err == nil || !strings.Contains(err.Error(), "window-agg-state") || !strings.Contains(err.Error(), "AllowNonRestoredState") {
		t.Fatalf("restoring a per-window savepoint into the sliced plan: %v, want an error naming the per-window operator", err)
	}
}
