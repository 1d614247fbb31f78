package sql_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql"
)

// Nexmark q15, a group aggregation of DISTINCT aggregates (their sets
// are map state on Pebble, in the accumulators on the heap), stopped
// with a savepoint resumes from it on either backend, whichever took it:
// the changelogs of both runs materialize to the uninterrupted result.
func TestDistinctSavepointBackends(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pebble := func() sql.Option { return sql.JobOptions(weir.PebbleState(t.TempDir(), 8<<20)) }
	heap := func() sql.Option { return sql.JobOptions(weir.HeapState()) }
	want := newChangelog()
	if err := planNexmarkQuery(t, "q15", false, want).Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		from, to func() sql.Option
	}{
		{"pebble-pebble", pebble, pebble},
		{"heap-pebble", heap, pebble},
		{"pebble-heap", pebble, heap},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			got := newChangelog()
			job := planNexmarkQuery(t, "q15", true, got, c.from(), sql.Checkpointing(time.Hour, filepath.Join(dir, "ck")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)))
			errc := make(chan error, 1)
			go func() { errc <- job.Run(ctx) }()
			weirtest.WaitFor(t, "rows before the savepoint", time.Minute, func() bool { return got.rows() > 100 })
			sp := filepath.Join(dir, "sp")
			if _, err := job.Savepoint(ctx, sp, true); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			before := got.rows()
			job2 := planNexmarkQuery(t, "q15", false, got, c.to(), sql.Checkpointing(time.Hour, filepath.Join(dir, "ck2")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)),
				sql.JobOptions(weir.RestoreFrom(sp)))
			if err := job2.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got.rows() == before {
				t.Fatal("the resumed job produced nothing: the savepoint was taken at the end of the input")
			}
			w, g := want.result(), got.result()
			if len(w) == 0 || strings.Join(w, "\n") != strings.Join(g, "\n") {
				t.Errorf("resumed result differs:\n%s\nuninterrupted:\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
			}
		})
	}
}
