package sql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// planQ7 plans Nexmark q7 over 12,000 events at 1,000 per second of event
// time (windows of 10 s: two fire during the run, the last at the end).
func planQ7(t *testing.T, rateLimited bool, c *changelog, opts ...sql.Option) *weir.Job {
	return planNexmarkQuery(t, "q7", rateLimited, c, opts...)
}

// planNexmarkQuery plans Flink's Nexmark query name over 12,000 events at
// 1,000 per second of event time, at parallelism 2.
func planNexmarkQuery(t *testing.T, name string, rateLimited bool, c *changelog, opts ...sql.Option) *weir.Job {
	t.Helper()
	text := strings.Replace(nexmarksql.DDL(), "'events.num' = '${EVENTS_NUM}'",
		fmt.Sprintf("'events.num' = '${EVENTS_NUM}', 'rate.limited' = '%v'", rateLimited), 1)
	opts = append(opts, sql.Parallelism(2), sql.Define("TPS", "1000"), sql.Define("EVENTS_NUM", "12000"),
		sql.Define("NEXMARK_TABLE", "datagen"))
	s := sql.NewSession(opts...)
	if _, err := s.Exec(text); err != nil {
		t.Fatal(err)
	}
	q, err := nexmarksql.Query(name)
	if err != nil {
		t.Fatal(err)
	}
	schema, st, err := s.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	st.Subscribe(func(rows []types.Row) error { c.add(rows, schema); return nil })
	job, err := s.Job([]*sql.Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	return job
}

func pruneCounts(job *weir.Job) (in, out int64) {
	for _, m := range job.Metrics().Operators {
		if strings.Contains(m.Name, "MaxPrune") {
			in += m.RecordsIn
			out += m.RecordsOut
		}
	}
	return in, out
}

// TestQ7MaxPruneSavepoint stops q7 with a savepoint in the middle of a
// window and resumes it: the join's state comes back from the savepoint,
// the filter before it starts with no maxima (they are not state) and
// passes more rows, and the rows are those of an uninterrupted run.
func TestQ7MaxPruneSavepoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := newChangelog()
	whole := planQ7(t, false, want)
	if err := whole.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if in, out := pruneCounts(whole); in == 0 || out*4 > in {
		t.Fatalf("the filter passed %d of %d bids: not planned, or it drops too little to be the point", out, in)
	}

	dir := t.TempDir()
	got := newChangelog()
	job := planQ7(t, true, got, sql.Checkpointing(time.Hour, filepath.Join(dir, "ck")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)))
	errc := make(chan error, 1)
	go func() { errc <- job.Run(ctx) }()
	weirtest.WaitFor(t, "bids before the savepoint", time.Minute, func() bool { in, _ := pruneCounts(job); return in > 2000 })
	sp := filepath.Join(dir, "sp")
	if _, err := job.Savepoint(ctx, sp, true); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	job2 := planQ7(t, false, got, sql.Checkpointing(time.Hour, filepath.Join(dir, "ck2")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)),
		sql.JobOptions(weir.RestoreFrom(sp)))
	if err := job2.Run(ctx); err != nil {
		t.Fatal(err)
	}
	in1, out1 := pruneCounts(job)
	in2, out2 := pruneCounts(job2)
	if in2 == 0 {
		t.Fatal("the resumed job read no bids: the savepoint was taken at the end of the input")
	}
	w, g := want.result(), got.result()
	t.Logf("%d rows; the filter passed %d of %d bids before the savepoint, %d of %d after", len(w), out1, in1, out2, in2)
	if len(w) == 0 || strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Errorf("resumed result differs: %d rows, uninterrupted %d:\nresumed:\n%s\nuninterrupted:\n%s",
			len(g), len(w), strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// TestQ5WindowJoinSavepoint stops q5 with a savepoint while it runs and
// resumes it: its window join, keyed by the windows' bounds as integers,
// comes back from the savepoint (a key read back wrongly would join counts
// with another window's maximum or never fire), and the rows are those of
// an uninterrupted run.
func TestQ5WindowJoinSavepoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := newChangelog()
	if err := planNexmarkQuery(t, "q5", false, want).Run(ctx); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	got := newChangelog()
	job := planNexmarkQuery(t, "q5", true, got, sql.Checkpointing(time.Hour, filepath.Join(dir, "ck")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)))
	errc := make(chan error, 1)
	go func() { errc <- job.Run(ctx) }()
	weirtest.WaitFor(t, "rows before the savepoint", time.Minute, func() bool { return got.rows() >= 2 })
	sp := filepath.Join(dir, "sp")
	if _, err := job.Savepoint(ctx, sp, true); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	before := got.rows()
	job2 := planNexmarkQuery(t, "q5", false, got, sql.Checkpointing(time.Hour, filepath.Join(dir, "ck2")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)),
		sql.JobOptions(weir.RestoreFrom(sp)))
	if err := job2.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got.rows() == before {
		t.Fatal("the resumed job produced nothing: the savepoint was taken at the end of the input")
	}
	w, g := want.result(), got.result()
	if len(w) == 0 || strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Errorf("resumed result differs: %d rows, uninterrupted %d", len(g), len(w))
	}
	t.Logf("%d rows, %d before the savepoint", len(w), before)
}
