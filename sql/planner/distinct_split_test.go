package planner

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/types"
)

// TestDistinctSplitPlan: the option turns the aggregation into a partial
// and a final one (with an Expand for several distinct columns); off, and
// by default, the plan is the one aggregation.
func TestDistinctSplitPlan(t *testing.T) {
	values.mu.Lock()
	values.data["ds_plan"] = []string{"+I 1, 2, 'a'"}
	values.mu.Unlock()
	explain := func(sets, query string) string {
		t.Helper()
		var out syncBuffer
		s := NewSession(Stdout(&out))
		if _, err := s.Exec("CREATE TABLE t (k INT, v INT, s STRING) WITH ('connector' = 'values', 'data-id' = 'ds_plan');" + sets + "EXPLAIN " + query); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	const on = "SET 'table.optimizer.distinct-agg.split.enabled' = 'true';"
	for _, c := range []struct {
		sets, query string
		aggs        int
		expand      bool
	}{
		{"", "SELECT k, COUNT(DISTINCT v) FROM t GROUP BY k", 1, false},
		{"SET 'table.optimizer.distinct-agg.split.enabled' = 'false';", "SELECT k, COUNT(DISTINCT v) FROM t GROUP BY k", 1, false},
		{on, "SELECT k, COUNT(DISTINCT v) FROM t GROUP BY k", 2, false},
		{on, "SELECT COUNT(DISTINCT v), SUM(v) FROM t", 2, false},
		{on, "SELECT k, COUNT(DISTINCT v), COUNT(DISTINCT s) FILTER (WHERE v > 1) FROM t GROUP BY k", 2, true},
		{on, "SELECT k, SUM(DISTINCT v), AVG(v), MIN(s) FROM t GROUP BY k", 2, true},
		{on, "SELECT k, COUNT(v) FROM t GROUP BY k", 1, false},                         // no DISTINCT
		{on, "SELECT k, COUNT(DISTINCT v), LAST_VALUE(s) FROM t GROUP BY k", 1, false}, // LAST_VALUE does not split
		{on + "SET 'table.optimizer.distinct-agg.split.bucket-num' = '7';", "SELECT k, COUNT(DISTINCT v) FROM t GROUP BY k", 2, false},
	} {
		plan := explain(c.sets, c.query)
		aggs, expand := strings.Count(plan, "GroupAggregate("), strings.Contains(plan, "Expand(")
		if aggs != c.aggs || expand != c.expand {
			t.Errorf("%s %s: %d aggregations (want %d), Expand %v (want %v):\n%s", c.sets, c.query, aggs, c.aggs, expand, c.expand, plan)
		}
		if c.aggs == 2 && (!strings.Contains(plan, "partialFinalType=[PARTIAL]") || !strings.Contains(plan, "partialFinalType=[FINAL]")) {
			t.Errorf("%s: no partial and final aggregation:\n%s", c.query, plan)
		}
		if strings.Contains(c.sets, "'7'") && !strings.Contains(plan, "MOD(HASH_CODE(v), 7)") {
			t.Errorf("bucket-num 7 not in the plan:\n%s", plan)
		}
	}
}

// TestDistinctSplitSameRows runs queries over random rows, insert-only and
// updating (retractions of earlier rows), with the split off and on, at
// parallelism 1 and 2, with and without mini-batch, with few and many
// buckets: the materialized rows must be the same.
func TestDistinctSplitSameRows(t *testing.T) {
	rng := rand.New(rand.NewSource(39))
	row := func() string {
		v := "NULL"
		if rng.Intn(8) > 0 {
			v = fmt.Sprint(rng.Intn(25))
		}
		s := "NULL"
		if rng.Intn(8) > 0 {
			s = fmt.Sprintf("'s%d'", rng.Intn(12))
		}
		// DOUBLE values with both zeros; decimals whose sums are exact
		x := []string{"0.0", "-0.0", "1.5", "-2.25", "NULL", "8.0"}[rng.Intn(6)]
		return fmt.Sprintf("%d, %s, %s, %d, %d.%02d, %s", rng.Intn(5), v, s, rng.Intn(40), rng.Intn(100), rng.Intn(100), x)
	}
	var ins []string
	for range 300 {
		ins = append(ins, "+I "+row())
	}
	var upd, live []string
	for range 400 {
		switch n := rng.Intn(10); {
		case n < 2 && len(live) > 0:
			i := rng.Intn(len(live))
			upd = append(upd, "-D "+live[i])
			live = slices.Delete(live, i, i+1)
		case n < 4 && len(live) > 0:
			i := rng.Intn(len(live))
			r := row()
			upd = append(upd, "-U "+live[i], "+U "+r)
			live[i] = r
		default:
			r := row()
			upd = append(upd, "+I "+r)
			live = append(live, r)
		}
	}
	values.mu.Lock()
	values.data["ds_rand_ins"], values.data["ds_rand_upd"] = ins, upd
	values.mu.Unlock()

	queries := []string{
		"k, COUNT(DISTINCT v), COUNT(*), SUM(v), MAX(id) FROM t GROUP BY k",
		// Nexmark q15/q16's shape: distinct columns under several filters
		"k, COUNT(*) FILTER (WHERE v < 10), COUNT(DISTINCT s), COUNT(DISTINCT s) FILTER (WHERE v < 10), COUNT(DISTINCT s) FILTER (WHERE v >= 10), COUNT(DISTINCT id), COUNT(DISTINCT id) FILTER (WHERE v >= 10 AND v < 20) FROM t GROUP BY k",
		"k, SUM(DISTINCT v), AVG(v), AVG(DISTINCT v), MIN(s), MAX(DISTINCT s), SUM(d), AVG(DISTINCT d), MIN(id), COUNT(DISTINCT x), MAX(x) FROM t GROUP BY k",
		"COUNT(DISTINCT v), COUNT(DISTINCT v, s), COUNT(*), MIN(DISTINCT id) FROM t",
		"v, COUNT(DISTINCT k), COUNT(DISTINCT s) FROM t GROUP BY v HAVING COUNT(DISTINCT id) > 2",
	}
	cols := []string{
		"k INT, a BIGINT, b BIGINT, c INT, e INT",
		"k INT, a BIGINT, b BIGINT, c BIGINT, e BIGINT, f BIGINT, g BIGINT",
		"k INT, a INT, b INT, c INT, e STRING, f STRING, g DECIMAL(38, 2), h DECIMAL(38, 6), i INT, j BIGINT, l DOUBLE",
		"a BIGINT, b BIGINT, c BIGINT, e INT",
		"v INT, a BIGINT, b BIGINT",
	}
	const mbSets = "SET 'table.exec.mini-batch.enabled' = 'true'; SET 'table.exec.mini-batch.allow-latency' = '1 s'; SET 'table.exec.mini-batch.size' = '7';"
	for _, data := range []string{"ds_rand_ins", "ds_rand_upd"} {
		for _, par := range []int{1, 2} {
			for _, mb := range []string{"", mbSets, mbSets + "SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';"} {
				for _, buckets := range []int{1, 3, 1024} {
					name := fmt.Sprintf("%s/p%d/mb%v/phases%v/b%d", data, par, mb != "", strings.Contains(mb, "TWO"), buckets)
					t.Run(name, func(t *testing.T) {
						var b strings.Builder
						b.WriteString(mb)
						fmt.Fprintf(&b, "CREATE TABLE t (k INT, v INT, s STRING, id INT, d DECIMAL(10, 2), x DOUBLE) WITH ('connector' = 'values', 'data-id' = '%s');\n", data)
						for i, c := range cols {
							fmt.Fprintf(&b, "CREATE TABLE off%d (%s) WITH ('connector' = 'values');\n", i, c)
							fmt.Fprintf(&b, "CREATE TABLE on%d (%s) WITH ('connector' = 'values');\n", i, c)
						}
						for i, q := range queries {
							fmt.Fprintf(&b, "INSERT INTO off%d SELECT %s;\n", i, q)
						}
						fmt.Fprintf(&b, "SET 'table.optimizer.distinct-agg.split.enabled' = 'true'; SET 'table.optimizer.distinct-agg.split.bucket-num' = '%d';\n", buckets)
						for i, q := range queries {
							fmt.Fprintf(&b, "INSERT INTO on%d SELECT %s;\n", i, q)
						}
						sinks := runSinks(t, par, b.String())
						for i := range queries {
							off, on := sinks[fmt.Sprintf("off%d", i)], sinks[fmt.Sprintf("on%d", i)]
							if len(off) == 0 {
								t.Fatalf("query %d: no rows", i)
							}
							if !slices.Equal(off, on) {
								t.Errorf("query %d (%s): split off and on differ\noff: %v\non:  %v", i, queries[i], off, on)
							}
						}
					})
				}
			}
		}
	}
}

// runSinks plans and runs statements and returns each values sink's
// materialized rows.
func runSinks(t *testing.T, par int, stmts string) map[string][]string {
	t.Helper()
	values.mu.Lock()
	values.sinks = map[string][]types.Row{}
	values.mu.Unlock()
	s := NewSession(Parallelism(par))
	job, err := s.Plan(stmts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	values.mu.Lock()
	defer values.mu.Unlock()
	out := map[string][]string{}
	for n, rows := range values.sinks {
		var lines []string
		for _, r := range rows {
			lines = append(lines, FormatRow(r, values.schemas[n]))
		}
		m, err := materialize(lines)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[n] = m
	}
	return out
}

// TestDistinctSplitBuckets: values that DISTINCT takes as equal fall in the
// same bucket (floating point zeros, a big decimal in either form), the
// buckets are in [0, n) and spread, NULL has none; composites that hold
// floating point are not bucketed.
func TestDistinctSplitBuckets(t *testing.T) {
	arg := func(r []types.Value) types.Value { return r[0] }
	b := func(t types.Type, v types.Value, n int) types.Value { return bucketFn(arg, t, n)([]types.Value{v}) }
	dbl := types.DoubleType
	for n := 2; n < 200; n++ {
		if p, m := b(dbl, types.FloatValue(0), n), b(dbl, types.FloatValue(math.Copysign(0, -1)), n); p != m {
			t.Fatalf("bucket-num %d: 0.0 in %d, -0.0 in %d", n, p.I, m.I)
		}
		bigT := types.DecimalType(30, 2)
		if x, y := b(bigT, types.IntValue(12345), n), b(bigT, types.BigDecimalValue(new(big.Int).SetInt64(12345)), n); x != y {
			t.Fatalf("bucket-num %d: a big decimal's two forms in %d and %d", n, x.I, y.I)
		}
	}
	if v := b(types.BigIntType, types.NullValue, 16); !v.Null {
		t.Errorf("NULL's bucket is %d", v.I)
	}
	seen := map[int64]bool{}
	for i := range 1000 {
		v := b(types.BigIntType, types.IntValue(int64(i)), 16)
		if v.I < 0 || v.I >= 16 {
			t.Fatalf("bucket %d out of [0, 16)", v.I)
		}
		seen[v.I] = true
		s := b(types.StringType, types.StringValue(fmt.Sprint("u", i)), 16)
		if s.I < 0 || s.I >= 16 {
			t.Fatalf("bucket %d out of [0, 16)", s.I)
		}
	}
	if len(seen) != 16 {
		t.Errorf("1000 integers in %d of 16 buckets", len(seen))
	}
	row := types.Type{Kind: types.Structured, Fields: []types.Field{{Name: "a", Type: types.BigIntType}, {Name: "b", Type: dbl}}}
	if bucketable(row) || !bucketable(dbl) || !bucketable(types.StringType) {
		t.Errorf("bucketable: ROW with a DOUBLE %v, DOUBLE %v, STRING %v", bucketable(row), bucketable(dbl), bucketable(types.StringType))
	}
}
