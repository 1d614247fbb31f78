package planner

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// A 'test-feed' table is an unbounded source of BIGINT rows that a test
// sends through a channel (registered under its 'feed-id'); closing the
// channel ends it.
var feeds sync.Map // feed-id -> chan int64

type feedFactory struct{}

func (feedFactory) Identifier() string { return "test-feed" }

func init() { connector.Register(feedFactory{}) }

func (feedFactory) CreateSource(t *connector.Table) (*connector.Source, error) {
	ch, ok := feeds.Load(t.Options["feed-id"])
	if !ok {
		return nil, fmt.Errorf("no feed %q", t.Options["feed-id"])
	}
	return &connector.Source{Source: rowFeed(ch.(chan int64)), Changelog: types.InsertOnly}, nil
}

type rowFeed chan int64

type feedSplit struct{}

func (feedSplit) ID() string { return "feed" }

func (f rowFeed) Splits(context.Context) ([]weir.Split, error) { return []weir.Split{feedSplit{}}, nil }
func (f rowFeed) Open(context.Context, weir.Split) (weir.SplitReader[types.Row], error) {
	return f, nil
}

func (f rowFeed) Read(ctx context.Context, dst []types.Row) (int, error) {
	select {
	case v, ok := <-f:
		if !ok {
			return 0, io.EOF
		}
		dst[0] = types.Row{Values: []types.Value{types.IntValue(v)}}
		return 1, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(time.Millisecond):
		return 0, nil
	}
}

func (f rowFeed) Close() error { return nil }

type testClock struct{ ms, reads atomic.Int64 }

// collect subscribes to st and returns what it has emitted so far, each
// row as format writes it, in order.
func collect(st *Statement, format func(types.Row) string) func() []string {
	var mu sync.Mutex
	var got []string
	st.Subscribe(func(rows []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			got = append(got, format(r))
		}
		return nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
}

func (c *testClock) now() time.Time {
	c.reads.Add(1)
	return time.UnixMilli(c.ms.Load())
}

// Processing-time windows are windows of the job's clock (weir.Clock), not
// of the wall clock or of the PROCTIME() column's value: a window fires
// when the clock passes its end, before the input ends; the windows still
// open at the end of a bounded input fire then.
func TestProctimeTumbleOnTheJobClock(t *testing.T) {
	ch := make(chan int64, 16)
	feeds.Store(t.Name(), ch)
	clock := &testClock{}
	clock.ms.Store(25_500)
	s := NewSession(JobOptions(weir.Clock(clock.now)))
	if _, err := s.Exec(fmt.Sprintf(`CREATE TABLE bid (bidder BIGINT) WITH ('connector' = 'test-feed', 'feed-id' = '%s');
CREATE VIEW B AS SELECT *, PROCTIME() AS p_time FROM bid;`, t.Name())); err != nil {
		t.Fatal(err)
	}
	_, st, err := s.Query(`SELECT bidder, COUNT(*) AS n, window_start, window_end
FROM TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time), INTERVAL '10' SECOND)) GROUP BY bidder, window_start, window_end`)
	if err != nil {
		t.Fatal(err)
	}
	got := collect(st, func(r types.Row) string {
		return fmt.Sprintf("%s %d %d %d %d", r.Kind, r.Values[0].I, r.Values[1].I, r.Values[2].I/1000, r.Values[3].I/1000)
	})
	rows := func() []string {
		out := got()
		slices.Sort(out)
		return out
	}
	job, err := s.Job([]*Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- job.Run(context.Background()) }()
	ch <- 1
	ch <- 1
	ch <- 2
	// the rows have been read and the job has looked at the clock many
	// times since (a count, not a duration: a busy machine only waits
	// longer)
	weirtest.WaitFor(t, "the feed to be read", 30*time.Second, func() bool { return len(ch) == 0 })
	seen := clock.reads.Load()
	weirtest.WaitFor(t, "the job to read the clock", 30*time.Second, func() bool { return clock.reads.Load() >= seen+50 })
	if r := rows(); len(r) != 0 {
		t.Fatalf("rows before the clock reached the window's end: %v", r)
	}
	clock.ms.Store(30_000) // past [20 s, 30 s)'s end-1
	want := []string{"+I 1 2 20000 30000", "+I 2 1 20000 30000"}
	weirtest.WaitFor(t, "the window to fire by the clock", 30*time.Second, func() bool { return len(rows()) == 2 })
	if r := rows(); !slices.Equal(r, want) {
		t.Fatalf("rows %v, want %v", r, want)
	}
	ch <- 1 // in [30 s, 40 s), open when the input ends
	close(ch)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want = append(want, "+I 1 1 30000 40000")
	slices.Sort(want)
	if r := rows(); !slices.Equal(r, want) {
		t.Fatalf("rows %v, want %v", r, want)
	}
}

// TestProctimeWindowNarrowInput: a processing-time window reads the job's
// clock, not its PROCTIME() column, so the Calc before it leaves that
// column out (no clock read per row, as Flink leaves an unmaterialized
// proctime attribute null; Nexmark q12). The results, keyed by an integer
// (intKey) or a string, are those of a plain GROUP BY over the same rows
// (one window: the clock stands still), at parallelism 1 and 2, with the
// Calc's rows from slabs or not (the window copies what it keeps:
// lend.go). sql's TestQ12AllocatesLittle counts the allocations.
func TestProctimeWindowNarrowInput(t *testing.T) {
	const n = 20000
	var rows []string
	for i := 0; i < n; i++ {
		rows = append(rows, fmt.Sprintf("+I %d, 's%d'", i, i%13))
	}
	values.mu.Lock()
	values.data["ptnarrow"] = rows
	values.mu.Unlock()
	const ddl = `CREATE TABLE pt_src (id INT, s STRING) WITH ('connector' = 'values', 'data-id' = 'ptnarrow');
CREATE VIEW pt_v AS SELECT MOD(id, 50) AS k, id, s, PROCTIME() AS pt FROM pt_src;`
	clock := func() time.Time { return time.UnixMilli(25_500) }
	session := func(p int, slabs bool) *Session {
		s := NewSession(Parallelism(p), JobOptions(weir.Clock(clock)))
		s.plan.DisableSlabRows = !slabs
		if _, err := s.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, c := range []struct{ name, window, model string }{
		{"int", `SELECT k, COUNT(*) AS c, SUM(id) AS total, MAX(s) AS m FROM TABLE(TUMBLE(TABLE pt_v, DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`,
			`SELECT k, COUNT(*) AS c, SUM(id) AS total, MAX(s) AS m FROM pt_v GROUP BY k`},
		{"string", `SELECT s, COUNT(*) AS c, SUM(id) AS total FROM TABLE(TUMBLE(TABLE pt_v, DESCRIPTOR(pt), INTERVAL '10' SECOND)) GROUP BY s, window_start, window_end`,
			`SELECT s, COUNT(*) AS c, SUM(id) AS total FROM pt_v GROUP BY s`},
	} {
		for _, p := range []int{1, 2} {
			_, st, err := session(p, true).Query(c.window)
			if err != nil {
				t.Fatal(err)
			}
			if plan := st.Explain(); strings.Contains(plan, "Calc(select=[k, id, s, pt])") || !strings.Contains(plan, "TUMBLE(time_col=[pt]") {
				t.Fatalf("%s: the window's input Calc computes PROCTIME():\n%s", c.name, plan)
			}
			changes, _, _ := runQuery(t, session(p, true), c.model, true)
			model, err := materialize(changes)
			if err != nil {
				t.Fatal(err)
			}
			for i := range model {
				model[i] = "+I" + model[i]
			}
			for _, slabs := range []bool{true, false} {
				got, _, _ := runQuery(t, session(p, slabs), c.window, true)
				slices.Sort(got)
				if len(got) == 0 || !slices.Equal(got, model) {
					t.Fatalf("%s at p%d (slabs %v): window rows\n%v\nplain GROUP BY\n%v", c.name, p, slabs, got, model)
				}
			}
		}
	}
}
