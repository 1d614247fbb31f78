package planner

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// aggRowsOut runs insert (one INSERT over ub_src) and returns the rows
// its group aggregation emitted, and what print wrote.
func aggRowsOut(t *testing.T, insert string) (int64, string) {
	t.Helper()
	values.mu.Lock()
	values.data["ub"] = []string{"+I 1, 'a'", "+I 2, 'a'", "+I 3, 'b'", "+I 4, 'a'", "+I 5, 'b'"}
	values.mu.Unlock()
	var out bytes.Buffer
	s := NewSession(Parallelism(1), Stdout(&out))
	if _, err := s.Exec(`
CREATE TABLE ub_src (id INT, k STRING) WITH ('connector' = 'values', 'data-id' = 'ub');
CREATE TABLE ub_hole (k STRING, n BIGINT) WITH ('connector' = 'blackhole');
CREATE TABLE ub_print (k STRING, n BIGINT) WITH ('connector' = 'print');`); err != nil {
		t.Fatal(err)
	}
	job, err := s.Plan(insert)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range job.Metrics().Operators {
		if strings.HasPrefix(m.Name, "process") { // the group aggregation
			return m.RecordsOut, out.String()
		}
	}
	var names []string
	for _, m := range job.Metrics().Operators {
		names = append(names, m.Name)
	}
	t.Fatalf("no GroupAggregate among the operators of %s: %q", insert, names)
	return 0, ""
}

// TestUpdateBeforeOnlyWhereRead: a GROUP BY whose changes go to a sink
// that drops -U rows (blackhole, as Flink's) through projections makes
// +U alone, as Flink's planner has it; into print (which shows every
// row), or through a filter (which needs the old value), it makes the
// -U/+U pairs.
func TestUpdateBeforeOnlyWhereRead(t *testing.T) {
	const agg = `SELECT k, COUNT(*) AS n FROM ub_src GROUP BY k`
	hole, _ := aggRowsOut(t, `INSERT INTO ub_hole `+agg)
	projected, _ := aggRowsOut(t, `INSERT INTO ub_hole SELECT UPPER(k), n + 1 FROM (`+agg+`)`)
	printed, out := aggRowsOut(t, `INSERT INTO ub_print `+agg)
	filtered, _ := aggRowsOut(t, `INSERT INTO ub_hole SELECT k, n FROM (`+agg+`) WHERE n < 3`)
	// a: +I, (-U,) +U, (-U,) +U; b: +I, (-U,) +U
	if hole != 5 || projected != 5 {
		t.Errorf("into blackhole: %d rows out of the aggregation (%d through a projection), want 5 (no -U)", hole, projected)
	}
	if printed != 8 || filtered != 8 {
		t.Errorf("into print: %d rows, through a filter: %d, want 8 (each update a -U/+U pair)", printed, filtered)
	}
	if strings.Count(out, "-U[") != 3 {
		t.Errorf("print wrote:\n%s\nwant its three -U rows", out)
	}
}
