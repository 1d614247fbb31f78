package sql_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// nexmarkSession is a session over the Nexmark DDL with events events, at
// parallelism p, with small batches (so that a Calc's ring of lent rows
// wraps many times).
func nexmarkSession(t testing.TB, events, p int) *sql.Session {
	t.Helper()
	s := sql.NewSession(sql.Define("TPS", "10000000"), sql.Define("EVENTS_NUM", fmt.Sprint(events)),
		sql.Define("NEXMARK_TABLE", "datagen"), sql.Parallelism(p), sql.JobOptions(weir.BatchSize(8)))
	if _, err := s.Exec(nexmarksql.DDL()); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestLentRowsOnlyToSinksThatDoNotKeepThem: a Subscribe function may keep
// the rows it gets, so the Calc must not lend it rows from its ring (which
// the next rows overwrite); SubscribeLent's function reads them during the
// call. Both see the same rows, at parallelism 1 and 2.
func TestLentRowsOnlyToSinksThatDoNotKeepThem(t *testing.T) {
	for _, p := range []int{1, 2} {
		for _, q := range []string{"q0", "q1"} {
			query, err := nexmarksql.Query(q)
			if err != nil {
				t.Fatal(err)
			}
			run := func(lent bool) []string { return subscribedRows(t, nexmarkSession(t, 3000, p), query, lent) }
			kept, lent := run(false), run(true)
			if len(kept) < 2000 || !slices.Equal(kept, lent) {
				t.Fatalf("%s at p%d: %d rows kept from Subscribe, %d read in SubscribeLent; they differ", q, p, len(kept), len(lent))
			}
			if distinct := len(slices.Compact(slices.Clone(kept))); distinct < len(kept)*9/10 {
				t.Fatalf("%s at p%d: only %d distinct of %d kept rows: rows were overwritten", q, p, distinct, len(kept))
			}
		}
	}
}

// allocsPerEvent runs job and returns the allocations of the process per
// event over it.
func allocsPerEvent(t *testing.T, job *weir.Job, events int) float64 {
	t.Helper()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	return float64(m1.Mallocs-m0.Mallocs) / float64(events)
}

// TestLentRowsAllocateNothingPerRow: q0 into a lent subscription, and q0's
// and q1's own job files (INSERT INTO a blackhole table, q1's through the
// cast to the sink's DECIMAL(23, 3)), allocate far less than one object
// per event: the Calc and the cast write their rows into rings (q1's one
// allocation per bid is its DECIMAL(22, 3) result, a big.Int by the type's
// layout). Before the rings, q0 allocated 0.94 objects per event and q1
// 5.5.
func TestLentRowsAllocateNothingPerRow(t *testing.T) {
	const events = 100_000
	s := nexmarkSession(t, events, 1)
	query, err := nexmarksql.Query("q0")
	if err != nil {
		t.Fatal(err)
	}
	_, st, err := s.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	st.SubscribeLent(func([]types.Row) error { return nil })
	job, err := s.Job([]*sql.Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	if a := allocsPerEvent(t, job, events); a > 0.3 {
		t.Errorf("q0 into SubscribeLent: %.2f allocations per event, want < 0.3", a)
	}
	for q, want := range map[string]float64{"q0": 0.3, "q1": 1.3} {
		text, err := nexmarksql.Job(q)
		if err != nil {
			t.Fatal(err)
		}
		job, err := nexmarkSession(t, events, 1).Plan(text)
		if err != nil {
			t.Fatal(err)
		}
		if a := allocsPerEvent(t, job, events); a > want {
			t.Errorf("%s's job file into blackhole: %.2f allocations per event, want < %.1f", q, a, want)
		}
	}
}

// subscribedRows runs query on s into Subscribe (kept rows: the plan may
// not lend them) or SubscribeLent (read during the call), and returns its
// rows formatted, sorted.
func subscribedRows(t *testing.T, s *sql.Session, query string, lent bool) []string {
	t.Helper()
	schema, st, err := s.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kept []types.Row
	var out []string
	if lent {
		st.SubscribeLent(func(rows []types.Row) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rows {
				out = append(out, sql.FormatRow(r, schema))
			}
			return nil
		})
	} else {
		st.Subscribe(func(rows []types.Row) error {
			mu.Lock()
			defer mu.Unlock()
			kept = append(kept, rows...) // kept past the call
			return nil
		})
	}
	job, err := s.Job([]*sql.Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range kept {
		out = append(out, sql.FormatRow(r, schema))
	}
	slices.Sort(out)
	return out
}
