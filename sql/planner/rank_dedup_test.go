package planner

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// TestTopOneAllocatesItsRow: a Top-1 whose rows each open a partition
// keeps each as the row alone (rank_dedup.go), one allocation, where the
// Top-N's form made three (the row, the list of one, the ListValue's
// box); the changes are the same.
func TestTopOneAllocatesItsRow(t *testing.T) {
	const n = 20000
	var rows []string
	for i := 0; i < n; i++ {
		rows = append(rows, fmt.Sprintf("+I %d, 's%d', TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '%d' SECOND", i, i%13, i))
	}
	values.mu.Lock()
	values.data["topone-allocs"] = rows
	values.mu.Unlock()
	run := func(topNForm bool) ([]string, float64) {
		s := NewSession(Parallelism(1))
		s.plan.DisableTopOneState = topNForm
		if _, err := s.Exec(`CREATE TABLE ta (id INT, s STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'topone-allocs');`); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		out, _, _ := runQuery(t, s, `SELECT id, s FROM (SELECT id, s, ROW_NUMBER() OVER (PARTITION BY id ORDER BY ts DESC) AS rn FROM ta) WHERE rn = 1`, true)
		runtime.ReadMemStats(&m1)
		slices.Sort(out)
		return out, float64(m1.Mallocs-m0.Mallocs) / n
	}
	one, aOne := run(false)
	topN, aTopN := run(true)
	if len(one) != n || !slices.Equal(one, topN) {
		t.Fatalf("%d changes in the one-row form, %d in the Top-N's; they differ", len(one), len(topN))
	}
	// two allocations a row saved; the rest of the job's allocations
	// (the key, the source's rows) move a little with the machine
	if saved := aTopN - aOne; saved < 1.5 {
		t.Errorf("%.2f allocations a row in the one-row form, %.2f in the Top-N's: saved %.2f, want 2", aOne, aTopN, saved)
	}
}
