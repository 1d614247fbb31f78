package planner

import (
	"slices"
	"strings"
	"testing"
)

const joinPruneDDL = `
CREATE TABLE pa (id BIGINT, name STRING, city STRING, extra STRING, ts TIMESTAMP(3), r ROW<x INT, y STRING>, WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'prune-a');
CREATE TABLE pb (id BIGINT, a BIGINT, price BIGINT, extra STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'prune-b');
CREATE TABLE pc (a BIGINT, note STRING) WITH ('connector' = 'values', 'data-id' = 'prune-c');
`

// runJoinPrune runs query over the prune tables at parallelism 1 and
// returns the rows of the table its changelog makes, sorted, and the
// names of the columns of its joins' inputs.
func runJoinPrune(t *testing.T, query string, prune bool) ([]string, string) {
	t.Helper()
	ts := func(s string) string { return "TIMESTAMP '1970-01-01 00:00:" + s + "'" }
	values.mu.Lock()
	values.data["prune-a"] = []string{
		"+I 1, 'ann', 'oslo', 'xa1', " + ts("01") + ", ROW(1, 'p')",
		"+I 2, 'bob', 'rome', 'xa2', " + ts("02") + ", ROW(2, 'q')",
		"+I 3, 'cid', 'oslo', 'xa3', " + ts("03") + ", ROW(3, NULL)",
	}
	values.data["prune-b"] = []string{
		"+I 10, 1, 100, 'xb1', " + ts("02"),
		"+I 11, 1, 150, 'xb2', " + ts("04"),
		"+I 12, 2, 90, 'xb3', " + ts("05"),
		"+I 13, 3, 300, 'xb4', " + ts("30"),
		"+I 14, 9, 10, 'xb5', " + ts("31"),
	}
	values.data["prune-c"] = []string{"+I 1, 'one'", "+I 2, 'two'", "+I 3, 'three'"}
	values.mu.Unlock()
	s := NewSession(Parallelism(1))
	s.plan.DisableJoinPrune = !prune
	if _, err := s.Exec(joinPruneDDL); err != nil {
		t.Fatal(err)
	}
	out, _, st := runQuery(t, s, query, true)
	// an outer join's changelog depends on which side's row came first
	// (two sources interleave): compare the table it makes
	n := map[string]int{}
	for _, r := range out {
		if strings.HasPrefix(r, "-") {
			n[r[2:]]--
		} else {
			n[r[2:]]++
		}
	}
	out = out[:0]
	for r, k := range n {
		for range k {
			out = append(out, r)
		}
		if k < 0 {
			out = append(out, "retracted and never there: "+r)
		}
	}
	slices.Sort(out)
	// the columns of the joins' inputs
	var cols []string
	var walk func(r *rel)
	walk = func(r *rel) {
		if strings.Contains(r.op, "Join(") {
			for _, in := range r.inputs {
				for _, c := range in.sc.Cols {
					cols = append(cols, c.Name)
				}
			}
		}
		for _, in := range r.inputs {
			walk(in)
		}
	}
	walk(st.root)
	return out, strings.Join(cols, " ")
}

// TestJoinPruneSameRows: with the inputs of its joins pruned to the
// columns the query mentions, every query gives the rows it gives with
// all columns kept: stars, qualified stars, USING, columns of the same
// name on both sides, ROW fields, correlated subqueries, HAVING, nested
// joins, outer, interval and window joins, a CROSS JOIN that reads no
// column of a side. And the join's inputs do lose the columns nobody
// reads (extra, city).
func TestJoinPruneSameRows(t *testing.T) {
	queries := []string{
		`SELECT A.name, B.price FROM pa A, pb B WHERE A.id = B.a`,
		`SELECT * FROM pa A JOIN pb B ON A.id = B.a`,
		`SELECT B.*, A.name FROM pa A JOIN pb B ON A.id = B.a`,
		`SELECT A.id, B.id FROM pa A JOIN pb B ON A.id = B.a`,
		`SELECT A.r.y, B.price FROM pa A JOIN pb B ON A.id = B.a WHERE A.r.x > 1`,
		`SELECT pb.a, note, price FROM pb JOIN pc USING (a)`,
		`SELECT A.name, COUNT(*) AS n, SUM(B.price) AS total FROM pa A JOIN pb B ON A.id = B.a GROUP BY A.name HAVING SUM(B.price) > 95`,
		`SELECT A.name, C.note, B.price FROM pa A JOIN pb B ON A.id = B.a JOIN pc C ON C.a = A.id`,
		`SELECT A.name, B.price FROM pa A LEFT JOIN pb B ON A.id = B.a AND B.price > 95`,
		`SELECT A.name, B.price FROM pa A FULL JOIN pb B ON A.id = B.a`,
		`SELECT A.name, B.price FROM pa A JOIN pb B ON A.id = B.a AND B.ts BETWEEN A.ts AND A.ts + INTERVAL '5' SECOND`,
		`SELECT A.name FROM pa A JOIN pb B ON A.id = B.a WHERE EXISTS (SELECT 1 FROM pc C WHERE C.a = A.id AND C.note <> A.city)`,
		`SELECT COUNT(*) AS n FROM pa A CROSS JOIN pc C`,
		`SELECT L.name, R.price, L.window_start FROM (SELECT * FROM TABLE(TUMBLE(TABLE pa, DESCRIPTOR(ts), INTERVAL '10' SECOND))) L
JOIN (SELECT * FROM TABLE(TUMBLE(TABLE pb, DESCRIPTOR(ts), INTERVAL '10' SECOND))) R
ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.id = R.a`,
	}
	for _, q := range queries {
		pruned, inputs := runJoinPrune(t, q, true)
		all, _ := runJoinPrune(t, q, false)
		if len(all) == 0 || !slices.Equal(pruned, all) {
			t.Errorf("%s:\npruned:\n%s\nall columns:\n%s", q, strings.Join(pruned, "\n"), strings.Join(all, "\n"))
		}
		if !strings.Contains(q, "*") && (strings.Contains(inputs, "extra") || inputs == "") {
			t.Errorf("%s: the joins' inputs carry %s", q, inputs)
		}
	}
}
