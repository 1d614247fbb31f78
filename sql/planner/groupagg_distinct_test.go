package planner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

var distinctQuery = regexp.MustCompile(`(?i)\bDISTINCT\b`)

// TestDistinctConformanceOnPebble runs the conformance cases with a
// DISTINCT on Pebble state, where a group aggregation keeps its DISTINCT
// sets in map state (groupagg_distinct.go): the rows expected on the heap.
func TestDistinctConformanceOnPebble(t *testing.T) {
	defer func() { execOptions = nil }()
	ran := 0
	for _, name := range []string{"groupby", "distinct_split", "minibatch", "grouping_sets", "aggregates_more", "aggregates_collect", "subquery_correlated", "udf"} {
		path := filepath.Join("testdata/conformance", name)
		t.Run(name, func(t *testing.T) {
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				switch d.Cmd {
				case "rows":
					storeRows(t, path, d)
					return ""
				case "exec":
					if !distinctQuery.MatchString(d.Input) {
						return d.Expected // TestConformance runs it
					}
					ran++
					execOptions = []Option{JobOptions(weir.PebbleState(t.TempDir(), 8<<20))}
					defer func() { execOptions = nil }()
					return runExec(t, d)
				}
				t.Fatalf("unknown command %s", d.Cmd)
				return ""
			})
		})
	}
	if ran < 25 {
		t.Fatalf("%d DISTINCT cases ran on Pebble: the files lost theirs, or the pattern does not match them", ran)
	}
}

// distinctRows is a changelog of (id INT, k INT, b BIGINT, s STRING, p INT,
// d DECIMAL(10, 2)): inserts, and retractions (-D, -U/+U) of rows inserted
// before, so that values' counts fall back to 0 and groups empty.
func distinctRows(seed uint64, n int, retract bool) []string {
	rng := rand.New(rand.NewPCG(seed, 3))
	type row struct {
		k, p int
		b    int64
		s    string
		d    string
	}
	var live []row
	var out []string
	line := func(kind string, r row) string {
		s := "NULL"
		if r.s != "" {
			s = "'" + r.s + "'"
		}
		return fmt.Sprintf("%s %d, %d, %d, %s, %d, %s", kind, len(out), r.k, r.b, s, r.p, r.d)
	}
	for len(out) < n {
		if retract && len(live) > 0 && rng.IntN(4) == 0 {
			i := rng.IntN(len(live))
			r := live[i]
			live = append(live[:i], live[i+1:]...)
			if rng.IntN(2) == 0 {
				out = append(out, line("-D", r))
				continue
			}
			out = append(out, line("-U", r))
			r.p = rng.IntN(100)
			out = append(out, line("+U", r))
			live = append(live, r)
			continue
		}
		r := row{k: rng.IntN(4), b: rng.Int64N(30), p: rng.IntN(100), d: fmt.Sprintf("%d.%02d", rng.IntN(5), rng.IntN(3))}
		if rng.IntN(8) != 0 {
			r.s = fmt.Sprint("s", rng.IntN(25))
		}
		live = append(live, r)
		out = append(out, line("+I", r))
	}
	return out
}

// A group aggregation with DISTINCT aggregates gives the same changelog on
// Pebble, its sets in map state, as on the heap: over inserts and
// retractions, with and without mini-batches, in two phases, split
// (table.optimizer.distinct-agg.split.enabled), at parallelism 1 and 2.
func TestDistinctPebbleSameAsHeap(t *testing.T) {
	defer func() { execOptions = nil }()
	const query = `SELECT k, COUNT(*) AS n, COUNT(DISTINCT b) AS db,
  COUNT(DISTINCT b) FILTER (WHERE p < 50) AS db50, COUNT(DISTINCT b) FILTER (WHERE p >= 20) AS db20,
  COUNT(DISTINCT s) AS ds, COUNT(DISTINCT s) FILTER (WHERE p < 50) AS ds50,
  SUM(DISTINCT b) AS sb, AVG(DISTINCT p) AS ap, SUM(DISTINCT d) AS sd, COUNT(DISTINCT d) AS cd, SUM(p) AS sp
FROM t GROUP BY k;`
	settings := map[string]string{
		"plain":     "",
		"minibatch": "SET 'table.exec.mini-batch.enabled' = 'true';\nSET 'table.exec.mini-batch.allow-latency' = '1 s';\nSET 'table.exec.mini-batch.size' = '7';\n",
		"twophase":  "SET 'table.exec.mini-batch.enabled' = 'true';\nSET 'table.exec.mini-batch.allow-latency' = '1 s';\nSET 'table.exec.mini-batch.size' = '7';\nSET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';\n",
		"split":     "SET 'table.optimizer.distinct-agg.split.enabled' = 'true';\nSET 'table.optimizer.distinct-agg.split.bucket-num' = '4';\n",
	}
	for _, retract := range []bool{false, true} {
		data := fmt.Sprintf("distinct_same_%v", retract)
		values.mu.Lock()
		values.data[data] = distinctRows(7, 600, retract)
		values.mu.Unlock()
		ddl := "CREATE TABLE t (id INT, k INT, b BIGINT, s STRING, p INT, d DECIMAL(10, 2)) WITH ('connector' = 'values', 'data-id' = '" + data + "');\n" +
			"CREATE TABLE out (k INT, n BIGINT, db BIGINT, db50 BIGINT, db20 BIGINT, ds BIGINT, ds50 BIGINT, sb BIGINT, ap INT, sd DECIMAL(38, 2), cd BIGINT, sp INT) WITH ('connector' = 'values');\n"
		for name, set := range settings {
			if name == "twophase" && retract {
				continue // two phases need an insert-only input
			}
			for _, par := range []int{1, 2} {
				t.Run(fmt.Sprintf("%s/retract=%v/p=%d", name, retract, par), func(t *testing.T) {
					d := &datadriven.TestData{Cmd: "exec", Input: set + ddl + "INSERT INTO out " + query, CmdArgs: []datadriven.CmdArg{{Key: "parallelism", Vals: []string{fmt.Sprint(par)}}}}
					if par == 1 {
						// one subtask: the changelog's order is the input's
						d.CmdArgs = append(d.CmdArgs, datadriven.CmdArg{Key: "changelog"})
					}
					execOptions = nil
					heap := runExec(t, d)
					execOptions = []Option{JobOptions(weir.PebbleState(t.TempDir(), 8<<20))}
					pebble := runExec(t, d)
					if heap != pebble || strings.Contains(heap, "error") || strings.Count(heap, "\n") < 4 {
						t.Errorf("heap:\n%s\npebble:\n%s", heap, pebble)
					}
				})
			}
		}
	}
}

// distinctLayout compiles the aggregate calls of sel (a select list over
// (k BIGINT, b BIGINT, s STRING, p INT)) into a layout with one group key.
func distinctLayout(t *testing.T, sel string, retract bool) *expr.AggLayout {
	t.Helper()
	stmts, err := parser.Parse("SELECT " + sel + " FROM t")
	if err != nil {
		t.Fatal(err)
	}
	sc := &expr.Scope{Cols: []expr.Column{{Name: "k", Type: types.BigIntType}, {Name: "b", Type: types.BigIntType}, {Name: "s", Type: types.Type{Kind: types.Varchar}}, {Name: "p", Type: types.Type{Kind: types.Int}}}}
	var calls []*expr.AggCall
	for _, it := range stmts[0].(*parser.QueryStmt).Query.(*parser.Select).Items {
		c, err := expr.CompileAgg(it.Expr.(*parser.Call), &expr.Compiler{Scope: sc}, retract)
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, c)
	}
	return expr.NewAggLayout(1, calls)
}

// encodeMeter is a group aggregation that measures, after each row, the
// bytes of its group's accumulator: what the value state encodes and
// writes on every change of the group in a serializing backend.
type encodeMeter struct {
	*groupAggFn
	max *int
}

func (m encodeMeter) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	if err := m.groupAggFn.ProcessElement(ctx, in); err != nil {
		return err
	}
	if st, ok := m.acc.Value(); ok {
		b, err := st.MarshalBinary()
		if err != nil {
			return err
		}
		*m.max = max(*m.max, len(b))
	}
	return nil
}

// On Pebble, what a row of a group with DISTINCT aggregates writes does
// not grow with the group's distinct values: the accumulator holds the
// sets' sizes, the values are map entries (before, it held the sets, and
// every row encoded all their values again: Nexmark q15 and q16).
func TestDistinctAccumulatorSizeOnPebble(t *testing.T) {
	layout := distinctLayout(t, "COUNT(*), COUNT(DISTINCT b), COUNT(DISTINCT b) FILTER (WHERE p < 50), COUNT(DISTINCT s), SUM(DISTINCT b)", false)
	const n = 3000
	rows := make([]types.Row, n)
	for i := range rows {
		rows[i] = types.Row{Values: []types.Value{types.IntValue(1), types.IntValue(int64(i)), {S: fmt.Sprint("s", i)}, types.IntValue(int64(i % 100))}}
	}
	var largest int
	job := weir.NewJob("distinct-size", weir.PebbleState(t.TempDir(), 8<<20))
	src := weir.FromSource(job, "rows", weir.SliceSource(rows), weir.NoWatermarks[types.Row]())
	ks := weir.KeyBy(src, func(r types.Row) string { return types.Key(r.Values[:1]) })
	out := weir.Collect(weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
		return encodeMeter{groupAggFn: &groupAggFn{layout: layout, keys: []expr.EvalFn{func(vs []types.Value) types.Value { return vs[0] }}, rows: rowMaker{width: 1 + len(layout.Calls)}, storeDistinct: true}, max: &largest}
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	items := out.Items()
	last := items[len(items)-1].Values
	if last[1].I != n || last[2].I != n || last[3].I != n/2 || last[4].I != n || last[5].I != n*(n-1)/2 {
		t.Fatalf("last result %v", last)
	}
	// a few integers (the key, the row count, the sizes and the sum)
	if largest > 64 {
		t.Fatalf("the accumulator of a group of %d distinct values encodes to %d bytes: it holds the values", n, largest)
	}
}

// A group aggregation keeps its DISTINCT sets in map state on Pebble
// (the builder's pebble: weir.Job's StateBackend, TestPebbleBackendOption),
// when it has hashed DISTINCT calls, and in the accumulator on the heap.
func TestStoresDistinct(t *testing.T) {
	for _, c := range []struct {
		sel    string
		pebble bool
		want   bool
	}{
		{"COUNT(DISTINCT b), SUM(p)", true, true},
		{"COUNT(DISTINCT b), SUM(p)", false, false},
		{"SUM(DISTINCT p), COUNT(DISTINCT s) FILTER (WHERE p > 1)", true, true},
		{"COUNT(*), SUM(p), MIN(b)", true, false},
		{"MAX(DISTINCT b)", true, false}, // a sorted list, in the accumulator
	} {
		b := &builder{pebble: c.pebble}
		if got := b.storesDistinct(distinctLayout(t, c.sel, true)); got != c.want {
			t.Errorf("%s on pebble=%v: map state %v, want %v", c.sel, c.pebble, got, c.want)
		}
	}
}
