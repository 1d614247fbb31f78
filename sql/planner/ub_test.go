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
	return opRowsOut(t, insert, "GroupAggregate")
}

// opRowsOut runs insert and returns the rows that its one keyed process
// operator (what) emitted, and what print wrote.
func opRowsOut(t *testing.T, insert, what string) (int64, string) {
	t.Helper()
	values.mu.Lock()
	values.data["ub"] = []string{"+I 1, 'a'", "+I 2, 'a'", "+I 3, 'b'", "+I 4, 'a'", "+I 5, 'b'"}
	values.mu.Unlock()
	var out bytes.Buffer
	s := NewSession(Parallelism(1), Stdout(&out))
	if _, err := s.Exec(`
CREATE TABLE ub_src (id INT, k STRING, ts AS TO_TIMESTAMP_LTZ(id, 3), WATERMARK FOR ts AS ts)
  WITH ('connector' = 'values', 'data-id' = 'ub');
CREATE TABLE ub_hole_rows (id INT, k STRING) WITH ('connector' = 'blackhole');
CREATE TABLE ub_print_rows (id INT, k STRING) WITH ('connector' = 'print');
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
		if strings.HasPrefix(m.Name, "process") { // the group aggregation, the deduplication
			return m.RecordsOut, out.String()
		}
	}
	var names []string
	for _, m := range job.Metrics().Operators {
		names = append(names, m.Name)
	}
	t.Fatalf("no %s among the operators of %s: %q", what, insert, names)
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

// TestDeduplicateUpdatesAsFlink: a deduplication keeping the last row by
// time (Flink's Deduplicate) changes a key's row with a -U/+U pair, as
// Flink's does, and makes no -U for a sink that drops them; a Top-N on
// another order changes its rows with -D/+I, as Flink's AppendOnlyTopN.
func TestDeduplicateUpdatesAsFlink(t *testing.T) {
	const dedup = `SELECT id, k FROM (SELECT id, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM ub_src) WHERE rn = 1`
	const topN = `SELECT id, k FROM (SELECT id, k, ROW_NUMBER() OVER (PARTITION BY k ORDER BY id DESC) AS rn FROM ub_src) WHERE rn = 1`
	// a: +I 1, (-U 1,) +U 2, (-U 2,) +U 4; b: +I 3, (-U 3,) +U 5
	hole, _ := opRowsOut(t, `INSERT INTO ub_hole_rows `+dedup, "Deduplicate")
	printed, out := opRowsOut(t, `INSERT INTO ub_print_rows `+dedup, "Deduplicate")
	if hole != 5 || printed != 8 {
		t.Errorf("deduplication: %d rows into blackhole (want 5: no -U), %d into print (want 8)", hole, printed)
	}
	if strings.Count(out, "-U[") != 3 || strings.Count(out, "+U[") != 3 || strings.Contains(out, "-D[") {
		t.Errorf("print wrote:\n%s\nwant three -U/+U pairs and no -D", out)
	}
	topHole, topOut := opRowsOut(t, `INSERT INTO ub_print_rows `+topN, "Rank")
	if topHole != 8 || strings.Count(topOut, "-D[") != 3 {
		t.Errorf("Top-N by id: %d rows, print wrote:\n%s\nwant 8 with three -D", topHole, topOut)
	}
}
