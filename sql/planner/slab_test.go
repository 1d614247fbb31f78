package planner

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// TestCalcRowsInSlabs: a Calc whose rows cross a shuffle into operators
// that copy what they keep (a group aggregation, a Top-N) makes them out
// of slabs (lend.go), an allocation per 64 rows where it made one per
// row; the results are those of rows made one by one, at parallelism 1
// and 2. A Calc that also feeds a join (which keeps its rows) makes them
// one by one.
func TestCalcRowsInSlabs(t *testing.T) {
	const n = 20000
	var rows []string
	for i := 0; i < n; i++ {
		rows = append(rows, fmt.Sprintf("+I %d, 's%d'", i, i%13))
	}
	var dim []string
	for k := 0; k < 50; k++ {
		dim = append(dim, fmt.Sprintf("+I %d, 'd%d'", k, k))
	}
	values.mu.Lock()
	values.data["slab"] = rows
	values.data["slabdim"] = dim
	values.mu.Unlock()
	const ddl = `CREATE TABLE slab_src (id INT, s STRING) WITH ('connector' = 'values', 'data-id' = 'slab');
CREATE TABLE slab_dim (k INT, name STRING) WITH ('connector' = 'values', 'data-id' = 'slabdim');`
	run := func(query string, p int, slabs bool) ([]string, float64) {
		s := NewSession(Parallelism(p))
		s.plan.DisableSlabRows = !slabs
		if _, err := s.Exec(ddl); err != nil {
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		out, _, _ := runQuery(t, s, query, true)
		runtime.ReadMemStats(&m1)
		slices.Sort(out)
		return out, float64(m1.Mallocs-m0.Mallocs) / n
	}
	for _, c := range []struct {
		name, query string
		saved       bool // the Calc's rows come from slabs
	}{
		{"groupby", `SELECT k, COUNT(*), SUM(v), MAX(t) FROM (SELECT MOD(id, 50) AS k, id * 2 AS v, UPPER(s) AS t FROM slab_src) GROUP BY k`, true},
		{"topn", `SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn FROM (SELECT MOD(id, 50) AS k, id * 2 AS v FROM slab_src)) WHERE rn <= 2`, true},
		{"join", `SELECT c.v, d.name FROM (SELECT MOD(id, 50) AS k, id * 2 AS v FROM slab_src) AS c JOIN slab_dim AS d ON c.k = d.k`, false},
	} {
		for _, p := range []int{1, 2} {
			with, aWith := run(c.query, p, true)
			without, aWithout := run(c.query, p, false)
			if len(with) == 0 || !slices.Equal(with, without) {
				t.Fatalf("%s at p%d: %d rows with slabs, %d without; they differ", c.name, p, len(with), len(without))
			}
			if saved := aWithout - aWith; (saved > 0.8) != c.saved {
				t.Errorf("%s at p%d: %.2f allocations a row with slabs, %.2f without: saved %.2f, want saved: %v", c.name, p, aWith, aWithout, saved, c.saved)
			}
		}
	}
}
