package planner

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/weirstream/weir"
)

// TestTopNRecyclesRows: a Top-N whose input is a Calc's rows across a
// shuffle hands them back (recycle.go), so the Calc allocates almost no
// rows; the changes are those without recycling, row for row in each
// partition's order (the rows are compared with their kinds, sorted: the
// order between partitions depends on the subtasks), at parallelism 1
// and 2, for a deduplication (ties on the time kept last), a Top-1, a
// ROW_NUMBER Top-3, a RANK Top-2, and an updating input at parallelism 1
// (no recycling: the Calc feeds a group aggregation).
// Under -race it checks that a row's reads, on the Top-N's goroutine,
// come before the Calc writes it again.
func TestTopNRecyclesRows(t *testing.T) {
	const n = 20000
	var rows []string
	for i := 0; i < n; i++ {
		// ts moves forward with ties (the same second for 7 rows)
		rows = append(rows, fmt.Sprintf("+I %d, 's%d', TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '%d' SECOND", i, i%13, i/7))
	}
	values.mu.Lock()
	values.data["recycle"] = rows
	values.mu.Unlock()
	const ddl = `CREATE TABLE rc (id INT, s STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'recycle');`
	run := func(query string, p int, recycle bool) ([]string, float64) {
		// small batches: few rows in flight, so that nearly every row
		// of the Calc's is one handed back
		s := NewSession(Parallelism(p), JobOptions(weir.BatchSize(32)))
		s.plan.DisableRowRecycling = !recycle
		if _, err := s.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		out, _, _ := runQuery(t, s, query, true)
		runtime.ReadMemStats(&m1)
		slices.Sort(out)
		return out, float64(m1.TotalAlloc-m0.TotalAlloc) / n
	}
	for _, c := range []struct {
		name, query string
		recycled    bool
	}{
		{"dedup", `SELECT k, id, s, ts FROM (SELECT k, id, s, ts, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn
			FROM (SELECT MOD(id, 50) AS k, id, UPPER(s) AS s, ts FROM rc)) WHERE rn = 1`, true},
		{"top1", `SELECT k, id, v FROM (SELECT k, id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn
			FROM (SELECT MOD(id, 50) AS k, id, MOD(id * 7919, 1000) AS v FROM rc)) WHERE rn <= 1`, true},
		{"top3", `SELECT k, id, v, rn FROM (SELECT k, id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn
			FROM (SELECT MOD(id, 50) AS k, id, MOD(id * 7919, 1000) AS v FROM rc)) WHERE rn <= 3`, true},
		{"rank", `SELECT k, id, v, r FROM (SELECT k, id, v, RANK() OVER (PARTITION BY k ORDER BY v DESC) AS r
			FROM (SELECT MOD(id, 50) AS k, id, MOD(id * 7919, 100) AS v FROM rc)) WHERE r <= 2`, true},
		{"updating", `SELECT k, c FROM (SELECT k, c, ROW_NUMBER() OVER (PARTITION BY MOD(k, 5) ORDER BY c DESC, k) AS rn
			FROM (SELECT k, COUNT(*) AS c FROM (SELECT MOD(id, 50) AS k FROM rc) GROUP BY k)) WHERE rn <= 2`, false},
	} {
		for _, p := range []int{1, 2} {
			if c.name == "updating" && p == 2 {
				continue // (the aggregation's subtasks interleave their changes)
			}
			with, bWith := run(c.query, p, true)
			without, bWithout := run(c.query, p, false)
			if len(with) == 0 || !slices.Equal(with, without) {
				t.Fatalf("%s at p%d: %d changes with recycling, %d without; they differ", c.name, p, len(with), len(without))
			}
			// a row of 4 values is 192 bytes: a Calc that recycles makes
			// a few hundred rows, not 20,000
			// the Calc's rows (k, id and a third value, 144 bytes) are
			// made again and again, not 20,000 times
			if saved := bWithout - bWith; (saved > 72) != c.recycled {
				t.Errorf("%s at p%d: %.0f bytes allocated a row with recycling, %.0f without: saved %.0f, want saved: %v", c.name, p, bWith, bWithout, saved, c.recycled)
			}
		}
	}
}
