package planner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

const windowMaxDDL = `
CREATE TABLE t (auction BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'values', 'data-id' = 'windowmax');
`

// windowMaxQuery is Nexmark q5's shape over t (the per-auction MAX of the
// price instead of a count, so that NULLs occur), with the maximum's
// columns in another order than the aggregation's and all of them output.
const windowMaxQuery = `
SELECT A.auction, A.p, M.s, M.e, M.maxp FROM (
  SELECT auction, MAX(price) AS p, window_start AS s, window_end AS e
  FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY auction, window_start, window_end
) A
JOIN (
  SELECT C.s, C.e, MAX(C.p) AS maxp FROM (
    SELECT auction, MAX(price) AS p, window_start AS s, window_end AS e
    FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end
  ) C
  GROUP BY C.s, C.e
) M
ON A.s = M.s AND A.e = M.e AND A.p >= M.maxp`

// runWindowMax runs query over rows at parallelism 1, with the rule on or
// off, and returns its rows (sorted) and its plan.
func runWindowMax(t *testing.T, query string, rows []string, rule bool) ([]string, string) {
	t.Helper()
	values.mu.Lock()
	values.data["windowmax"] = rows
	values.mu.Unlock()
	s := NewSession(Parallelism(1))
	s.plan.DisableWindowMaxJoin = !rule
	if _, err := s.Exec(windowMaxDDL); err != nil {
		t.Fatal(err)
	}
	out, _, st := runQuery(t, s, query, false)
	sort.Strings(out)
	return out, st.Explain()
}

// TestWindowMaxJoinSameRows runs q5's shape over ties, NULL values (a
// NULL never matches; a window of NULLs only has a NULL maximum and no
// row) and a late row (dropped by the aggregation, so in neither side) with
// the window-maximum join and with the window join: the same rows, the
// ones worked out by hand.
func TestWindowMaxJoinSameRows(t *testing.T) {
	ts := func(s string) string { return "TIMESTAMP '1970-01-01 00:00:" + s + "'" }
	rows := []string{
		"+I 1, 5, " + ts("01"),
		"+I 1, 7, " + ts("02"),    // auction 1's maximum: 7
		"+I 2, 7, " + ts("03"),    // a tie at the window's maximum
		"+I 3, NULL, " + ts("04"), // a NULL maximum: never matches
		"+I 9, 6, " + ts("05"),    // below the maximum
		"+I 4, NULL, " + ts("12"), // the window [10 s, 20 s) has only NULLs
		"+I 5, 3, " + ts("21"),    // watermark 20 s: [0 s, 10 s) has fired
		"+I 7, 100, " + ts("04"),  // late: in neither side
		"+I 6, 9, " + ts("22"),
		"+I 8, 9, " + ts("29"), // a tie in [20 s, 30 s)
	}
	want := []string{
		"+I[1, 7, 1970-01-01 00:00:00.000, 1970-01-01 00:00:10.000, 7]",
		"+I[2, 7, 1970-01-01 00:00:00.000, 1970-01-01 00:00:10.000, 7]",
		"+I[6, 9, 1970-01-01 00:00:20.000, 1970-01-01 00:00:30.000, 9]",
		"+I[8, 9, 1970-01-01 00:00:20.000, 1970-01-01 00:00:30.000, 9]",
	}
	got, plan := runWindowMax(t, windowMaxQuery, rows, true)
	plain, plainPlan := runWindowMax(t, windowMaxQuery, rows, false)
	if !strings.Contains(plan, "WindowMaxJoin") || strings.Contains(plainPlan, "WindowMaxJoin") {
		t.Fatalf("the rule is not planned when on, or planned when off:\n%s\n%s", plan, plainPlan)
	}
	if strings.Join(got, "\n") != strings.Join(plain, "\n") {
		t.Errorf("with the rule:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(plain, "\n"))
	}
	if strings.Join(plain, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nworked out by hand:\n%s", strings.Join(plain, "\n"), strings.Join(want, "\n"))
	}
}

// TestWindowMaxJoinOnlyItsShape: the rule applies to q5's shape (and its
// mirror image) and to nothing whose rows it could change.
func TestWindowMaxJoinOnlyItsShape(t *testing.T) {
	inner := `SELECT auction, MAX(price) AS p, window_start AS s, window_end AS e
    FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end
  ) C`
	for name, c := range map[string]struct {
		q    string
		want bool
	}{
		"q5 shape":          {windowMaxQuery, true},
		"mirrored":          {strings.Replace(windowMaxQuery, "A.p >= M.maxp", "M.maxp <= A.p", 1), true},
		"greater":           {strings.Replace(windowMaxQuery, "A.p >= M.maxp", "A.p > M.maxp", 1), false},
		"less":              {strings.Replace(windowMaxQuery, "A.p >= M.maxp", "A.p <= M.maxp", 1), false},
		"MIN":               {strings.Replace(windowMaxQuery, "MAX(C.p)", "MIN(C.p)", 1), false},
		"filtered maximum":  {strings.Replace(windowMaxQuery, inner, inner+" WHERE C.auction < 2", 1), false},
		"HAVING":            {strings.Replace(windowMaxQuery, "GROUP BY C.s, C.e", "GROUP BY C.s, C.e HAVING MAX(C.p) > 6", 1), false},
		"other column":      {strings.Replace(windowMaxQuery, "MAX(C.p)", "MAX(C.auction)", 1), false},
		"other aggregation": {strings.Replace(windowMaxQuery, "INTERVAL '10' SECOND))\n    GROUP BY", "INTERVAL '5' SECOND))\n    GROUP BY", 1), false},
		"left join":         {strings.Replace(windowMaxQuery, "\nJOIN", "\nLEFT JOIN", 1), false},
		"more conditions":   {windowMaxQuery + " AND A.auction > 1", false},
		"two aggregates":    {strings.Replace(windowMaxQuery, "MAX(C.p) AS maxp", "MAX(C.p) AS maxp, COUNT(*) AS n", 1), false},
		"expression":        {strings.Replace(windowMaxQuery, "SELECT C.s, C.e, MAX(C.p) AS maxp", "SELECT C.s, C.e, MAX(C.p) + 0 AS maxp", 1), false},
	} {
		if !c.want && c.q == windowMaxQuery {
			t.Fatalf("%s: the replacement did not change the query", name)
		}
		rows := []string{"+I 1, 5, TIMESTAMP '1970-01-01 00:00:01'", "+I 2, 7, TIMESTAMP '1970-01-01 00:00:02'",
			"+I 3, 7, TIMESTAMP '1970-01-01 00:00:03'", "+I 4, 2, TIMESTAMP '1970-01-01 00:00:12'"}
		got, plan := runWindowMax(t, c.q, rows, true)
		plain, _ := runWindowMax(t, c.q, rows, false)
		if has := strings.Contains(plan, "WindowMaxJoin"); has != c.want {
			t.Errorf("%s: WindowMaxJoin planned: %v, want %v:\n%s", name, has, c.want, plan)
		}
		if !slices.Equal(got, plain) {
			t.Errorf("%s: rows with the rule %q, without %q", name, got, plain)
		}
	}
}

// TestWindowMaxJoinNexmark: Nexmark q5 (a HOP count per auction joined
// with the counts' maximum per window) plans the rule and gives the rows
// of the window join, at parallelism 1 and 2.
func TestWindowMaxJoinNexmark(t *testing.T) {
	q, err := nexmarksql.Query("q5")
	if err != nil {
		t.Fatal(err)
	}
	for _, par := range []int{1, 2} {
		got, st := runNexmark(t, q, par)
		if !strings.Contains(st.Explain(), "WindowMaxJoin") {
			t.Fatalf("q5 does not plan the window-maximum join:\n%s", st.Explain())
		}
		want, plainSt := runNexmarkWith(t, q, par, Config{DisableWindowMaxJoin: true})
		if strings.Contains(plainSt.Explain(), "WindowMaxJoin") {
			t.Fatal("the rule is planned when off")
		}
		if len(want) == 0 || !slices.Equal(got, want) {
			t.Fatalf("p%d: %d rows with the rule, %d without", par, len(got), len(want))
		}
	}
}

// TestWindowMaxFnRestore fails the window-maximum join's operator after
// checkpoints and restarts it: the windows' maxima and rows come back from
// the checkpoint. The maximum of the first window occurs only before the
// first checkpoint, so a restart that lost the state would emit the rows at
// a lower maximum instead.
func TestWindowMaxFnRestore(t *testing.T) {
	const n = 600
	w := func(i int64) (start, end int64) {
		if i%2 == 0 {
			return 0, 10_000_000
		}
		return 10_000_000, 20_000_000
	}
	var rows []types.Row
	for i := int64(0); i < n; i++ {
		x := i % 50
		switch i {
		case 10, 40:
			x = 1000 // the first window's maximum, a tie, before any checkpoint
		case 11, 501:
			x = 900 // the second window's: one before the checkpoints, one after
		}
		s, e := w(i)
		rows = append(rows, types.Row{Values: []types.Value{types.IntValue(i), types.IntValue(x), types.IntValue(s), types.IntValue(e)}})
	}
	want := []string{
		"[10 1000 0 10000000 0 10000000 1000]",
		"[11 900 10000000 20000000 10000000 20000000 900]",
		"[40 1000 0 10000000 0 10000000 1000]",
		"[501 900 10000000 20000000 10000000 20000000 900]",
	}
	var failed atomic.Bool
	job := weir.NewJob("window-max", weir.Parallelism(2), weir.Checkpointing(time.Hour, t.TempDir()), weirtest.FirstCheckpointAfter(time.Hour),
		weir.Restarts(weir.RestartPolicy{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, MaxFailures: 3, Interval: time.Hour}))
	paced := weirtest.CheckpointEvery(func() *weir.Job { return job }, weir.SliceSource(rows).(weir.RestorableSource[types.Row]), 100)
	src := weir.FromSource(job, "rows", weir.Source[types.Row](paced), weir.NoWatermarks[types.Row]())
	src = weir.Map(src, func(r types.Row) types.Row {
		if r.Values[0].I > 300 && job.Metrics().Checkpoints.Completed >= 2 && failed.CompareAndSwap(false, true) {
			panic("injected failure")
		}
		return r
	})
	ks := weir.KeyBy(src, func(r types.Row) winBounds { return winBounds{r.Values[2].I, r.Values[3].I} })
	out := weir.ProcessWith(ks, func() weir.KeyedProcessFunction[winBounds, types.Row, types.Row] {
		return &windowMaxFn{nl: 4, nr: 3, x: 1, right: []int{rightStart, rightEnd, rightMax}}
	})
	c := weir.Collect(out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if !failed.Load() {
		t.Fatal("the failure was not injected")
	}
	var got []string
	for _, r := range c.Items() {
		vs := make([]int64, len(r.Values))
		for i, v := range r.Values {
			vs[i] = v.I
		}
		got = append(got, fmt.Sprint(vs))
	}
	sort.Strings(got)
	if !slices.Equal(got, want) {
		t.Fatalf("rows after the restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
