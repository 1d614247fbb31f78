package planner

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/weirstream/weir"
)

// execOptions are added to the sessions of runExec.
var execOptions []Option

// TestNewOperatorsOnPebble runs the window join, MATCH_RECOGNIZE, the
// temporal sort, the set operations and RANK with Pebble state, where
// every state value goes through the codec (the heap backend of the
// conformance suite keeps values as they are), and compares with the heap
// results.
func TestNewOperatorsOnPebble(t *testing.T) {
	defer func() { execOptions = nil }()
	values.mu.Lock()
	values.data["pb-l"] = []string{"+I 1, 'L1', TIMESTAMP '2024-01-01 00:00:01'", "+I 2, 'L2', TIMESTAMP '2024-01-01 00:00:03'", "+I 1, 'L3', TIMESTAMP '2024-01-01 00:00:12'"}
	values.data["pb-r"] = []string{"+I 1, 'R1', TIMESTAMP '2024-01-01 00:00:02'", "+I 1, 'R2', TIMESTAMP '2024-01-01 00:00:05'", "+I 2, 'R3', TIMESTAMP '2024-01-01 00:00:11'"}
	values.mu.Unlock()
	ddl := `CREATE TABLE l (id INT, v STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'pb-l');
CREATE TABLE r (id INT, v STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts) WITH ('connector' = 'values', 'data-id' = 'pb-r');
`
	queries := []string{
		`SELECT L.v, R.v FROM (SELECT * FROM TABLE(TUMBLE(TABLE l, DESCRIPTOR(ts), INTERVAL '10' SECOND))) L
  FULL JOIN (SELECT * FROM TABLE(TUMBLE(TABLE r, DESCRIPTOR(ts), INTERVAL '10' SECOND))) R
  ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.id = R.id;`,
		`SELECT * FROM l MATCH_RECOGNIZE (PARTITION BY id ORDER BY ts MEASURES FIRST(A.v) AS a, LAST(B.v) AS b, COUNT(B.v) AS n
  PATTERN (A B+?) WITHIN INTERVAL '1' MINUTE DEFINE B AS B.ts > LAST(A.ts)) AS m;`,
		`SELECT v FROM l ORDER BY ts LIMIT 2;`,
		`SELECT id FROM l EXCEPT ALL SELECT id FROM r WHERE v <> 'R2';`,
		`SELECT v, rk FROM (SELECT v, RANK() OVER (PARTITION BY id ORDER BY ts DESC) AS rk FROM r) WHERE rk <= 1;`,
	}
	for _, q := range queries {
		heap := runExec(t, &datadriven.TestData{Cmd: "exec", Input: ddl + q})
		execOptions = []Option{JobOptions(weir.PebbleState(t.TempDir(), 8<<20))}
		pebble := runExec(t, &datadriven.TestData{Cmd: "exec", Input: ddl + q})
		execOptions = nil
		if heap != pebble || strings.Contains(heap, "error") || !strings.Contains(heap, "[") {
			t.Errorf("%s\nheap:\n%s\npebble:\n%s", q, heap, pebble)
		}
	}
}
