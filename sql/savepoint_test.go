package sql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// changelog materializes the rows a SELECT delivers.
type changelog struct {
	mu    sync.Mutex
	count map[string]int
	n     int
}

func newChangelog() *changelog { return &changelog{count: map[string]int{}} }

func (c *changelog) add(rows []types.Row, schema types.Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		k := sql.FormatRow(types.Row{Values: r.Values}, schema)
		if r.Kind.IsRetraction() {
			c.count[k]--
		} else {
			c.count[k]++
		}
		c.n++
	}
}

func (c *changelog) rows() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *changelog) result() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for k, n := range c.count {
		if n < 0 {
			out = append(out, fmt.Sprintf("retracted %d times more than added: %s", -n, k))
		}
		for range n {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// The query holds keyed state (a retracting group aggregation) and window
// state (a tumbling window aggregation).
const savepointQuery = `
SELECT auction, COUNT(*) AS n, MAX(price) AS top, SUM(price) AS total FROM bid GROUP BY auction
UNION ALL
SELECT auction, COUNT(*), MAX(price), SUM(price)
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(` + "`dateTime`" + `), INTERVAL '2' SECOND))
GROUP BY auction, window_start, window_end`

// planNexmark plans savepointQuery over 20,000 Nexmark events (20 s of
// event time); rateLimited also paces them in wall-clock time, so that a
// savepoint can be taken while the job runs.
func planNexmark(t *testing.T, par int, rateLimited bool, c *changelog, opts ...sql.Option) *weir.Job {
	t.Helper()
	ddl := []byte(nexmarksql.DDL())
	text := strings.Replace(string(ddl), "'events.num' = '${EVENTS_NUM}'",
		fmt.Sprintf("'events.num' = '${EVENTS_NUM}', 'rate.limited' = '%v'", rateLimited), 1)
	opts = append(opts, sql.Parallelism(par), sql.Define("TPS", "5000"), sql.Define("EVENTS_NUM", "20000"),
		sql.Define("NEXMARK_TABLE", "datagen"))
	s := sql.NewSession(opts...)
	if _, err := s.Exec(text); err != nil {
		t.Fatal(err)
	}
	schema, st, err := s.Query(savepointQuery)
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

// TestSQLJobSavepoint stops a SQL job with a savepoint in the middle of
// its input and resumes it from there: the aggregations' state (and the
// source's position) come back, and the changelog of both runs
// materializes to the result of an uninterrupted run. (Both runs use
// parallelism 2: the 'nexmark' source's splits follow the parallelism, so
// its positions cannot be restored at another one.)
func TestSQLJobSavepoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	want := newChangelog()
	if err := planNexmark(t, 2, false, want).Run(ctx); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	got := newChangelog()
	job := planNexmark(t, 2, true, got, sql.Checkpointing(time.Hour, filepath.Join(dir, "ck")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)))
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
	job2 := planNexmark(t, 2, false, got, sql.Checkpointing(time.Hour, filepath.Join(dir, "ck2")), sql.JobOptions(weirtest.FirstCheckpointAfter(time.Hour)),
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
		for i := 0; i < len(g) && i < len(w); i++ {
			if g[i] != w[i] {
				t.Errorf("first difference at %d: resumed %s, uninterrupted %s", i, g[i], w[i])
				break
			}
		}
	}
}
