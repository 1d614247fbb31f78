package planner

import (
	"context"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/types"
)

func pruneRow(price, tsMs int64) types.Row {
	return types.Row{Values: []types.Value{types.IntValue(price), types.IntValue(tsMs * 1000)}}
}

// TestMaxPruneKeep drives one subtask's filter (10 s windows, BETWEEN
// e - 10 s AND e) through rows on time, ties, window boundaries and late
// rows.
func TestMaxPruneKeep(t *testing.T) {
	f := &maxPrune{size: 10_000, d: 10_000_000}
	steps := []struct {
		price, ts, wm int64
		keep          bool
		why           string
	}{
		{5, 1000, math.MinInt64, true, "first row of its window"},
		{3, 2000, -3000, false, "below the window's counted maximum 5"},
		{5, 3000, -1000, true, "a tie with the maximum can equal the MAX"},
		{9, 10_000, 0, true, "on the boundary: windows ending at 10 s (max 5) and 20 s (none)"},
		{2, 10_000, 0, false, "on the boundary, below both windows' maxima (5, 9)"},
		{5, 10_000, 0, true, "on the boundary: equals the first window's maximum, though below the second's"},
		{7, 15_000, 9_000, false, "below 9 in the window ending at 20 s"},
		// the window ending at 10 s has fired (end-1 <= wm): a late row is
		// not in the aggregation's MAX, so it must not raise the maximum
		{100, 4000, 14_000, true, "late: its window has fired, nothing to compare with"},
		{5, 6000, 14_000, true, "late, equal to the fired window's MAX: must reach the join"},
		{1, 6000, 14_000, true, "late: the fired window is not tracked"},
		{8, 21_000, 20_000, true, "first row of the window ending at 30 s"},
		{8, 22_000, 20_000, true, "a tie"},
		{math.MinInt64 + 1, 29_000, 20_000, false, "far below"},
	}
	for i, s := range steps {
		r := pruneRow(s.price, s.ts)
		if got := f.keep(r.Values[0], r.Values[1], s.ts, s.wm); got != s.keep {
			t.Errorf("step %d (price %d at %d ms, watermark %d): keep = %v, want %v: %s", i, s.price, s.ts, s.wm, got, s.keep, s.why)
		}
	}
	nulls := types.Row{Values: []types.Value{types.NullValue, types.IntValue(0)}}
	if !f.keep(nulls.Values[0], nulls.Values[1], 0, 20_000) {
		t.Error("a NULL price must pass (the filter proves nothing about it)")
	}
}

const maxPruneDDL = `
CREATE TABLE t (auction BIGINT, price BIGINT, ts TIMESTAMP(3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ('connector' = 'values', 'data-id' = 'maxprune');
CREATE VIEW b AS SELECT auction, price, ts FROM t WHERE auction > 0;
`

// maxPruneQuery is Nexmark q7's shape over b.
const maxPruneQuery = `
SELECT B.auction, B.price, B.ts FROM b B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS e
  FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.ts BETWEEN B1.e - INTERVAL '10' SECOND AND B1.e`

// runMaxPrune runs maxPruneQuery over rows at parallelism 1 and returns
// its rows, the rows the filter dropped and the rows the window
// aggregation dropped as late.
func runMaxPrune(t *testing.T, rows []string, prune bool) (out []string, dropped, late int64) {
	t.Helper()
	values.mu.Lock()
	values.data["maxprune"] = rows
	values.mu.Unlock()
	s := NewSession(Parallelism(1))
	s.plan.DisableMaxPrune = !prune
	if _, err := s.Exec(maxPruneDDL); err != nil {
		t.Fatal(err)
	}
	out, job, _ := runQuery(t, s, maxPruneQuery, false)
	sawPrune := false
	for _, m := range job.Metrics().Operators {
		if strings.Contains(m.Name, "MaxPrune") {
			sawPrune = true
			dropped += m.RecordsIn - m.RecordsOut
		}
		late += m.LateDropped
	}
	if sawPrune != prune {
		t.Fatalf("MaxPrune operator in the job: %v, want %v", sawPrune, prune)
	}
	sort.Strings(out)
	return out, dropped, late
}

// TestMaxPruneSameRows runs q7's shape over rows with ties, rows on window
// boundaries (they can match two windows) and late rows (the window
// aggregation drops them, the join does not) with the filter and without:
// the same rows, the ones worked out by hand, and the filter dropped rows.
// A filter that let a late row raise its fired window's maximum and kept
// comparing with it would drop auction 8 (equal to the fired window's MAX,
// 5); one that ignored the window ending at a row's time would drop
// auction 12.
func TestMaxPruneSameRows(t *testing.T) {
	ts := func(s string) string { return "TIMESTAMP '1970-01-01 00:00:" + s + "'" }
	rows := []string{
		"+I 1, 5, " + ts("01"),
		"+I 2, 3, " + ts("02"),   // below 5: dropped
		"+I 3, 5, " + ts("03"),   // a tie
		"+I 4, 9, " + ts("10"),   // boundary: windows ending at 10 and 20
		"+I 5, 2, " + ts("10"),   // boundary, below both maxima: dropped
		"+I 12, 5, " + ts("10"),  // boundary: below 9, but equals the first window's MAX: joins it
		"+I 6, 7, " + ts("15"),   // watermark 14 s: the first window fires (MAX 5); 7 < 9 dropped
		"+I 7, 100, " + ts("04"), // late for the aggregation
		"+I 8, 5, " + ts("06"),   // late, equals the fired window's MAX: joins
		"+I 9, 9, " + ts("21"),   // watermark 20 s: the second window fires (MAX 9)
		"+I 10, 5, " + ts("10"),  // late, on the boundary: joins the first window's MAX
		"+I 11, 1, " + ts("22"),  // below 9 in the third window: dropped
	}
	want := []string{
		"+I[1, 5, 1970-01-01 00:00:01.000]",
		"+I[10, 5, 1970-01-01 00:00:10.000]",
		"+I[12, 5, 1970-01-01 00:00:10.000]",
		"+I[3, 5, 1970-01-01 00:00:03.000]",
		"+I[4, 9, 1970-01-01 00:00:10.000]",
		"+I[8, 5, 1970-01-01 00:00:06.000]",
		"+I[9, 9, 1970-01-01 00:00:21.000]",
	}
	got, dropped, late := runMaxPrune(t, rows, true)
	plain, _, plainLate := runMaxPrune(t, rows, false)
	if strings.Join(got, "\n") != strings.Join(plain, "\n") {
		t.Errorf("with the filter:\n%s\nwithout:\n%s", strings.Join(got, "\n"), strings.Join(plain, "\n"))
	}
	if strings.Join(plain, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nworked out by hand:\n%s", strings.Join(plain, "\n"), strings.Join(want, "\n"))
	}
	if dropped < 3 {
		t.Errorf("the filter dropped %d rows, want at least 3 (auctions 2, 5, 6, 11)", dropped)
	}
	if late < 3 || plainLate != late {
		t.Errorf("the window aggregation dropped %d late rows (%d without the filter), want 3 (auctions 7, 8, 10)", late, plainLate)
	}
}

// TestMaxPruneOnlyItsShape: the filter is not added to joins whose rows
// it could change.
func TestMaxPruneOnlyItsShape(t *testing.T) {
	for name, q := range map[string]string{
		"q7":            maxPruneQuery,
		"key in window": strings.Replace(maxPruneQuery, "GROUP BY window_start, window_end", "GROUP BY auction, window_start, window_end", 1),
		"MIN":           strings.Replace(maxPruneQuery, "MAX(price)", "MIN(price)", 1),
		"filtered MAX":  strings.Replace(maxPruneQuery, "TUMBLE(TABLE b,", "TUMBLE(TABLE b,", 1) + " AND B.auction > 2",
		"no BETWEEN":    strings.Replace(maxPruneQuery, "WHERE B.ts BETWEEN B1.e - INTERVAL '10' SECOND AND B1.e", "", 1),
		"NOT BETWEEN":   strings.Replace(maxPruneQuery, "B.ts BETWEEN", "B.ts NOT BETWEEN", 1),
		"other column":  strings.Replace(maxPruneQuery, "B.price = B1.maxprice", "B.auction = B1.maxprice", 1),
		"HOP":           strings.Replace(maxPruneQuery, "TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND)", "HOP(TABLE b, DESCRIPTOR(ts), INTERVAL '5' SECOND, INTERVAL '10' SECOND)", 1),
		"left join":     strings.Replace(maxPruneQuery, "\nJOIN", "\nLEFT JOIN", 1),
		"where in view": strings.Replace(maxPruneQuery, "FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND))", "FROM TABLE(TUMBLE(TABLE b, DESCRIPTOR(ts), INTERVAL '10' SECOND)) WHERE price < 100", 1),
	} {
		want := name == "q7" || name == "filtered MAX"
		values.mu.Lock()
		values.data["maxprune"] = nil
		values.mu.Unlock()
		s := NewSession(Parallelism(1))
		if _, err := s.Exec(maxPruneDDL); err != nil {
			t.Fatal(err)
		}
		_, st, err := s.Query(q)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st.Subscribe(func([]types.Row) error { return nil })
		job, err := s.Job([]*Statement{st})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		if err := job.Run(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cancel()
		has := false
		for _, m := range job.Metrics().Operators {
			has = has || strings.Contains(m.Name, "MaxPrune")
		}
		if has != want {
			t.Errorf("%s: MaxPrune planned: %v, want %v", name, has, want)
		}
	}
}
