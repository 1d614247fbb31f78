package sql_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql"
)

const backendSource = `
CREATE TABLE src (id BIGINT, v BIGINT, ts AS TO_TIMESTAMP_LTZ(v, 3), WATERMARK FOR ts AS ts) WITH ('connector' = 'datagen', 'number-of-rows' = '5000',
  'fields.id.kind' = 'random', 'fields.id.min' = '0', 'fields.id.max' = '49', 'fields.v.kind' = 'sequence', 'fields.v.start' = '1', 'fields.v.end' = '5000');
`

// lines runs a script and returns the rows its printed changelog ends
// with, sorted.
func lines(t *testing.T, script string, opts ...sql.Option) []string {
	t.Helper()
	var out bytes.Buffer
	if err := sql.Run(context.Background(), script, append(opts, sql.Stdout(&out), sql.Parallelism(2))...); err != nil {
		t.Fatal(err)
	}
	rows := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if len(l) < 3 {
			continue
		}
		switch l[:2] {
		case "+I", "+U":
			rows[l[2:]]++
		case "-U", "-D":
			rows[l[2:]]--
		}
	}
	var ls []string
	for r, n := range rows {
		for range n {
			ls = append(ls, r)
		}
	}
	slices.Sort(ls)
	return ls
}

// Flink's 'state.backend.type' = 'rocksdb' runs the SQL operators that
// keep keyed state in the job's backend on Pebble, in
// 'state.backend.rocksdb.localdir': the same rows as on the heap, and the
// state is in the directory. Operators that keep theirs in memory are
// named (Job.HeapStateOperators): none of the SQL operators does, window
// aggregations included (TUMBLE, HOP and SESSION run on process functions
// on Pebble, on weir's window operators on the heap); an unknown backend
// is an error.
func TestStateBackendSetting(t *testing.T) {
	query := `SELECT id, COUNT(*) AS c, SUM(v) AS s FROM src GROUP BY id;`
	heap := lines(t, backendSource+query)
	dir := t.TempDir()
	pebble := lines(t, "SET 'state.backend.type' = 'rocksdb';\nSET 'state.backend.rocksdb.localdir' = '"+dir+"';\n"+backendSource+query)
	if !slices.Equal(heap, pebble) || len(heap) != 50 {
		t.Fatalf("on Pebble: %d rows, on the heap %d; they differ", len(pebble), len(heap))
	}
	// the job runs on Pebble (its options, logged when it starts), and
	// says which of its operators keep their state on the heap
	var log bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelInfo}))
	lines(t, "SET 'state.backend.type' = 'rocksdb';\nSET 'state.backend.rocksdb.localdir' = '"+dir+"';\n"+backendSource+query, sql.JobOptions(weir.Logger(logger)))
	if !strings.Contains(log.String(), `state-backend=pebble state-dir=\"`+dir) || strings.Contains(log.String(), "keep their keyed state in memory") {
		t.Fatalf("the GROUP BY job is not on Pebble, or warns of heap state:\n%s", log.String())
	}
	log.Reset()
	// Flink's changelog state backend: changelog checkpoints of the
	// Pebble state (weir.StateChangelog)
	changelog := lines(t, "SET 'state.backend.type' = 'rocksdb';\nSET 'state.backend.changelog.enabled' = 'true';\n"+
		"SET 'state.backend.changelog.periodic-materialize.interval' = '1 min';\n"+backendSource+query, sql.JobOptions(weir.Logger(logger)), sql.StateDir(t.TempDir()))
	if !slices.Equal(heap, changelog) || !strings.Contains(log.String(), "changelog=true") || !strings.Contains(log.String(), "materialize-interval=1m0s") {
		t.Fatalf("with the state changelog: %d rows (heap %d), or not in the job's options:\n%s", len(changelog), len(heap), log.String())
	}
	log.Reset()
	// a window aggregation runs on a process function with Pebble state:
	// the same rows as on the heap, and no warning
	window := `SELECT window_start, id, COUNT(*) FROM TABLE(TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, id;`
	heapWindow := lines(t, backendSource+window)
	pebbleWindow := lines(t, "SET 'state.backend.type' = 'rocksdb';\n"+backendSource+window, sql.JobOptions(weir.Logger(logger)), sql.StateDir(t.TempDir()))
	if !slices.Equal(heapWindow, pebbleWindow) || len(heapWindow) < 250 {
		t.Fatalf("the window job on Pebble: %d rows, on the heap %d; they differ", len(pebbleWindow), len(heapWindow))
	}
	if !strings.Contains(log.String(), "state-backend=pebble") || strings.Contains(log.String(), "keep their keyed state in memory") {
		t.Fatalf("the window job is not on Pebble, or warns of heap state:\n%s", log.String())
	}

	plan := func(script string) ([]string, error) {
		s := sql.NewSession(sql.Stdout(&bytes.Buffer{}))
		job, err := s.Plan(script)
		if err != nil {
			return nil, err
		}
		return job.HeapStateOperators(), nil
	}
	for _, q := range []string{query,
		`SELECT a.id, b.v FROM src a JOIN src b ON a.id = b.id;`,
		`SELECT * FROM (SELECT id, v, ROW_NUMBER() OVER (PARTITION BY id ORDER BY v DESC) AS rn FROM src) WHERE rn <= 3;`,
		`SELECT id FROM src UNION SELECT v FROM src;`,
		`SELECT a.id FROM src a, src b WHERE a.id = b.id AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts;`,
		`SELECT id, COUNT(*) OVER (PARTITION BY id ORDER BY ts ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM src;`,
		window,
		`SELECT id, window_start, SUM(v) FROM TABLE(HOP(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) GROUP BY window_start, window_end, id;`,
		`SELECT window_start, COUNT(*), MAX(v) FROM TABLE(HOP(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) GROUP BY window_start, window_end;`,
		`SELECT id, window_start, COUNT(*) FROM TABLE(SESSION(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY window_start, window_end, id;`,
		`SELECT id, TUMBLE_START(ts, INTERVAL '1' SECOND), COUNT(*) FROM src GROUP BY id, TUMBLE(ts, INTERVAL '1' SECOND);`,
		`SELECT id, HOP_END(ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND), AVG(v) FROM src GROUP BY id, HOP(ts, INTERVAL '1' SECOND, INTERVAL '2' SECOND);`,
		`SELECT CAST(id AS STRING), SESSION_END(ts, INTERVAL '1' SECOND), MIN(v) FROM src GROUP BY CAST(id AS STRING), SESSION(ts, INTERVAL '1' SECOND);`,
		`SELECT id, window_start, window_end, COUNT(*) FROM TABLE(CUMULATE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '3' SECOND)) GROUP BY window_start, window_end, id;`,
	} {
		if heapOps, err := plan("SET 'state.backend.type' = 'rocksdb';\n" + backendSource + q); err != nil || len(heapOps) != 0 {
			t.Fatalf("%s keeps state on the heap: %v, %v", q, heapOps, err)
		}
	}
	// on the heap backend, the window aggregations stay on weir's window
	// operators (the fast path), which the job would name as heap state
	// were it on Pebble
	if heapOps, err := plan(backendSource + window); err != nil || len(heapOps) != 1 {
		t.Fatalf("on the heap backend, a window aggregation's operator is not weir's window operator: %v, %v", heapOps, err)
	}
	for _, bad := range []string{"SET 'state.backend.type' = 'leveldb';", "SET 'execution.checkpointing.incremental' = 'yes';",
		"SET 'state.backend.type' = 'rocksdb';\nSET 'state.backend.rocksdb.memory.fixed-per-slot' = '12 parsecs';",
		"SET 'state.backend.changelog.enabled' = 'yes';",
		"SET 'state.backend.changelog.enabled' = 'true';\nSET 'state.backend.changelog.periodic-materialize.interval' = 'soon';"} {
		if _, err := plan(bad + "\n" + backendSource + query); err == nil || !strings.Contains(err.Error(), "SET '") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
