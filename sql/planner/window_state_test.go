package planner

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/types"
)

// windowQuery matches the statements that aggregate over event-time
// windows: window table functions and legacy group windows.
var windowQuery = regexp.MustCompile(`(?i)\b(TUMBLE|HOP|SESSION)\s*\(`)

// TestWindowConformanceOnPebble runs the conformance cases with event-time
// windows on Pebble state, where TUMBLE, HOP and SESSION aggregations run
// on process functions with their state and timers in Pebble
// (window_state.go): each must print what the heap's window operators
// printed, which the files hold.
func TestWindowConformanceOnPebble(t *testing.T) {
	defer func() { execOptions = nil }()
	ran := 0
	for _, name := range []string{"windows", "windowattached", "windowjoin", "nexmark_features", "aggregates_more", "udf", "json"} {
		path := filepath.Join("testdata/conformance", name)
		t.Run(name, func(t *testing.T) {
			datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
				switch d.Cmd {
				case "rows":
					storeRows(t, path, d)
					return ""
				case "exec":
					if !windowQuery.MatchString(d.Input) {
						return d.Expected // not a window: TestConformance runs it
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
	if ran < 30 {
		t.Fatalf("%d window cases ran on Pebble: the files lost theirs, or the pattern does not match them", ran)
	}
}

// windowRows generates n rows of (k INT, s STRING, v BIGINT, d DOUBLE,
// ts TIMESTAMP(3)) for a table with a 2 s watermark delay: keys 0-4 and
// NULL, time mostly moving forward by up to 400 ms in steps of 100 ms, a
// few rows off the steps (so that rows and watermarks often fall on windows' edges), some
// rows up to 15 s behind, others about the watermark (late for the
// windows it has closed, or just in time for the others),
// and jumps of 40 s that leave windows empty in between.
func windowRows(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := int64(0) // ms
	var out []string
	for i := range n {
		switch r := rng.IntN(100); {
		case r < 2:
			at += 40_000
		case r < 90:
			at += rng.Int64N(5) * 100 // on the windows' edges often
		}
		ts := at
		if rng.IntN(10) == 0 {
			ts += rng.Int64N(100)
		}
		switch rng.IntN(20) {
		case 0:
			ts -= rng.Int64N(150) * 100
		case 1:
			ts -= 2000 + rng.Int64N(15)*100 // about the watermark
		}
		k := fmt.Sprint(rng.IntN(5))
		if rng.IntN(20) == 0 {
			k = "CAST(NULL AS INT)"
		}
		d := fmt.Sprintf("%d.%03d", rng.IntN(1000), rng.IntN(1000))
		if rng.IntN(15) == 0 {
			d = "CAST(NULL AS DOUBLE)"
		}
		out = append(out, fmt.Sprintf("+I %s, 's%d', %d, %s, TIMESTAMP '%s'", k, rng.IntN(7), i, d,
			base.Add(time.Duration(ts)*time.Millisecond).Format("2006-01-02 15:04:05.000")))
	}
	return out
}

const windowRowsDDL = `CREATE TABLE w (k INT, s STRING, v BIGINT, d DOUBLE, ts TIMESTAMP(3), WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
  WITH ('connector' = 'values', 'data-id' = 'window-state-rows');
`

// stateWindowQueries cover each path of window_state.go: integer keys
// with a count, compact and row accumulators, string, composite and no
// keys, TUMBLE with an offset, HOP overlapping, SESSION merging, the
// legacy group windows, and a window over a window's output.
var stateWindowQueries = []string{
	`SELECT k, window_start, window_end, window_time, COUNT(*) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT k, window_start, window_end, COUNT(*), MAX(v), MIN(v), COUNT(d) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(ts), INTERVAL '5' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT k, window_start, window_end, COUNT(*) AS n /* sliced */ FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT k, window_start, window_end, window_time, SUM(d), AVG(v), MIN(s), MAX(s), COUNT(DISTINCT s), FIRST_VALUE(s), LAST_VALUE(v), LISTAGG(s)
	   FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT s, window_start, window_end, COUNT(*), SUM(v), SUM(d) FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '3' SECOND, INTERVAL '9' SECOND)) WHERE v % 3 <> 0 GROUP BY s, window_start, window_end`,
	`SELECT s, k, window_start, COUNT(*), MAX(d) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(ts), INTERVAL '4' SECOND, INTERVAL '1500' MILLISECOND)) GROUP BY s, k, window_start, window_end`,
	`SELECT window_start, window_end, COUNT(*), SUM(v), MAX(d), LAST_VALUE(s), trail(s) FROM TABLE(TUMBLE(TABLE w, DESCRIPTOR(ts), INTERVAL '3' SECOND)) GROUP BY window_start, window_end`,
	`SELECT k, window_start, window_end, window_time, COUNT(*), SUM(d), MIN(s), MAX(v), AVG(d), COUNT(DISTINCT s), trail(s)
	   FROM TABLE(SESSION(TABLE w, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT s, k, window_start, window_end, COUNT(*), MAX(v) FROM TABLE(SESSION(TABLE w, DESCRIPTOR(ts), INTERVAL '700' MILLISECOND)) GROUP BY s, k, window_start, window_end`,
	`SELECT window_start, window_end, COUNT(*), trail(s) FROM TABLE(SESSION(TABLE w, DESCRIPTOR(ts), INTERVAL '2' SECOND)) GROUP BY window_start, window_end`,
	`SELECT k, TUMBLE_START(ts, INTERVAL '5' SECOND), TUMBLE_END(ts, INTERVAL '5' SECOND), COUNT(*), SUM(d) FROM w GROUP BY k, TUMBLE(ts, INTERVAL '5' SECOND)`,
	`SELECT s, HOP_START(ts, INTERVAL '1' SECOND, INTERVAL '3' SECOND), COUNT(*), MAX(v) FROM w GROUP BY s, HOP(ts, INTERVAL '1' SECOND, INTERVAL '3' SECOND)`,
	// sliced (window_state_sliced.go): integer key, exact accumulators;
	// an offset, a size not a multiple of the slide (1 s slices), windows
	// of 24 slices, and of 100 (per window again)
	`SELECT k, window_start, window_end, window_time, COUNT(*), MAX(v), MIN(v), COUNT(d) /* sliced */
	   FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '6' SECOND, INTERVAL '500' MILLISECOND)) GROUP BY k, window_start, window_end`,
	`SELECT k, HOP_START(ts, INTERVAL '2' SECOND, INTERVAL '5' SECOND), HOP_END(ts, INTERVAL '2' SECOND, INTERVAL '5' SECOND), COUNT(*), MIN(v) /* sliced */
	   FROM w GROUP BY k, HOP(ts, INTERVAL '2' SECOND, INTERVAL '5' SECOND)`,
	`SELECT k, window_start, window_end, COUNT(*) AS n /* sliced */ FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '500' MILLISECOND, INTERVAL '12' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT k, window_start, window_end, COUNT(*) AS n FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '100' MILLISECOND, INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end`,
	`SELECT k, SESSION_START(ts, INTERVAL '1' SECOND), SESSION_END(ts, INTERVAL '1' SECOND), COUNT(*) FROM w GROUP BY k, SESSION(ts, INTERVAL '1' SECOND)`,
	`SELECT window_start, window_end, SUM(n), MAX(n) FROM TABLE(TUMBLE(TABLE (
	   SELECT k, window_time AS wt, COUNT(*) AS n FROM TABLE(HOP(TABLE w, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '4' SECOND)) GROUP BY k, window_start, window_end
	 ), DESCRIPTOR(wt), INTERVAL '10' SECOND)) GROUP BY window_start, window_end /* sliced */`,
}

// slicedQuery matches the stateWindowQueries that take the sliced path.
var slicedQuery = regexp.MustCompile(`/\* sliced \*/`)

// trail is an aggregate whose result shows the order in which it saw the
// rows and merged the accumulators: the values joined by ',', merged
// accumulators in brackets.
var trail = &expr.AggregateFunction{
	Args: []types.Type{types.StringType}, Returns: types.StringType,
	Create: func() types.Value { return types.StringValue("") },
	Accumulate: func(acc types.Value, a []types.Value) (types.Value, error) {
		return types.StringValue(acc.S + a[0].S + ","), nil
	},
	Merge: func(acc, other types.Value) (types.Value, error) {
		return types.StringValue("[" + acc.S + "][" + other.S + "]"), nil
	},
	Result: func(acc types.Value) (types.Value, error) { return acc, nil },
}

// runWindowJob runs a SELECT over the generated rows and returns its
// changelog, sorted, and the late rows the job's operators dropped. It
// checks that the job's window aggregations keep their state where the
// job's backend says: on the heap's window operators, or, on Pebble, on
// process functions, leaving no keyed operator's state on the heap.
func runWindowJob(t *testing.T, query string, par int, opts ...Option) (rows []string, late int64) {
	t.Helper()
	var out syncBuffer
	s := NewSession(append([]Option{Parallelism(par), Stdout(&out), WithFunction("trail", trail)}, opts...)...)
	job, err := s.Plan(windowRowsDDL + query + ";")
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if heapOps := job.HeapStateOperators(); (job.StateBackend() == "pebble") != (len(heapOps) == 0) {
		t.Fatalf("%s: state backend %s, operators with heap state %q", query, job.StateBackend(), heapOps)
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") {
			rows = append(rows, l)
		}
	}
	slices.Sort(rows)
	for _, m := range job.Metrics().Operators {
		late += m.LateDropped
	}
	return rows, late
}

// TestStateWindowsMatchHeap runs window aggregations over rows with late
// ones, several keys (NULL among them), empty windows, overlapping HOP
// windows and merging sessions on the heap and on Pebble, at parallelism
// 1 and 2: the changelogs are the same, row for row (insert-only), the
// window columns included, the heap job did drop late rows, and the
// Pebble job counted as many in late_records_dropped_total.
func TestStateWindowsMatchHeap(t *testing.T) {
	values.mu.Lock()
	values.data["window-state-rows"] = windowRows(7, 1500)
	values.mu.Unlock()
	for i, q := range stateWindowQueries {
		par := 1 + i%2
		heap, late := runWindowJob(t, q, par)
		before := slicedPlans.Load()
		pebble, pebbleLate := runWindowJob(t, q, par, JobOptions(weir.PebbleState(t.TempDir(), 8<<20)))
		if sliced, want := slicedPlans.Load() > before, slicedQuery.MatchString(q); sliced != want {
			t.Errorf("%s: sliced %v, want %v", q, sliced, want)
		}
		if len(heap) < 20 || !strings.HasPrefix(heap[0], "+I[") || !strings.HasPrefix(heap[len(heap)-1], "+I[") {
			t.Fatalf("%s: %d rows on the heap, want an insert-only result of at least 20", q, len(heap))
		}
		if i < len(stateWindowQueries)-1 && late == 0 {
			t.Errorf("%s: the heap job dropped no late rows: the input has none for it", q)
		}
		if !slices.Equal(heap, pebble) {
			t.Errorf("%s (parallelism %d): %d rows on the heap, %d on Pebble:\n%s", q, par, len(heap), len(pebble), diffLines(heap, pebble))
		}
		if pebbleLate != late {
			t.Errorf("%s (parallelism %d): %d late rows dropped on the heap, %d on Pebble", q, par, late, pebbleLate)
		}
	}
}

// diffLines shows the lines only one of a and b (sorted) has.
func diffLines(a, b []string) string {
	var out bytes.Buffer
	i, j := 0, 0
	for n := 0; (i < len(a) || j < len(b)) && n < 20; {
		switch {
		case j == len(b) || i < len(a) && a[i] < b[j]:
			fmt.Fprintf(&out, "heap only:   %s\n", a[i])
			i++
			n++
		case i == len(a) || b[j] < a[i]:
			fmt.Fprintf(&out, "pebble only: %s\n", b[j])
			j++
			n++
		default:
			i, j = i+1, j+1
		}
	}
	return out.String()
}

// TestPebbleBackendOption: the planner plans for the backend the job says
// it has (weir.Job's StateBackend): the last of PebbleState and HeapState
// wins, as in the job's options.
func TestPebbleBackendOption(t *testing.T) {
	for _, c := range []struct {
		opts []weir.JobOption
		want bool
	}{
		{nil, false},
		{[]weir.JobOption{weir.PebbleState("/tmp/x", 0)}, true},
		{[]weir.JobOption{weir.HeapState()}, false},
		{[]weir.JobOption{weir.PebbleState("/tmp/x", 0), weir.Parallelism(2), weir.HeapState()}, false},
		{[]weir.JobOption{weir.HeapState(), weir.PebbleState("/tmp/x", 1<<20), weir.IncrementalCheckpoints()}, true},
	} {
		if got := weir.NewJob("t", c.opts...).StateBackend(); (got == "pebble") != c.want || got != "pebble" && got != "heap" {
			t.Errorf("%v: state backend %q, want pebble %v", c.opts, got, c.want)
		}
	}
}
