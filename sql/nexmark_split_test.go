package sql_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
)

// TestNexmarkSQLDistinctSplit runs Nexmark q15 and q16 (distinct bidders
// and auctions per day, in all and per price band: COUNT(DISTINCT)
// FILTER) with Flink's table.optimizer.distinct-agg.split.enabled: their
// plans split (a partial aggregation per bucket, a final one), and their
// final rows are the hand-written queries', at parallelism 1 and 2, with
// 1024 and 4 buckets, with mini-batch on.
func TestNexmarkSQLDistinctSplit(t *testing.T) {
	const split = "SET 'table.optimizer.distinct-agg.split.enabled' = 'true';"
	variants := []struct{ name, sets string }{
		{"split", split},
		{"split-4-buckets", split + "SET 'table.optimizer.distinct-agg.split.bucket-num' = '4';"},
		{"split-mini-batch", split + "SET 'table.exec.mini-batch.enabled' = 'true'; SET 'table.exec.mini-batch.allow-latency' = '1 s'; SET 'table.exec.mini-batch.size' = '100';"},
	}
	for _, q := range []string{"q15", "q16"} {
		t.Run(q, func(t *testing.T) {
			want := goRows(t, q, 1)
			for _, par := range []int{1, 2} {
				if testing.Short() && par == 2 {
					continue
				}
				for _, v := range variants {
					sameRows(t, fmt.Sprintf("p%d, %s, against the Go query", par, v.name), splitRows(t, q, par, v.sets), want)
				}
			}
		})
	}
}

// splitRows is sqlRows with the SET statements sets, after checking that
// the query's plan has a partial and a final aggregation.
func splitRows(t *testing.T, name string, par int, sets string) []string {
	t.Helper()
	var explained bytes.Buffer
	s := sql.NewSession(sql.Parallelism(par), sql.Define("TPS", fmt.Sprint(moreRate)),
		sql.Define("EVENTS_NUM", fmt.Sprint(moreEvents)), sql.Define("NEXMARK_TABLE", "datagen"), sql.Stdout(&explained))
	setup, err := nexmarksql.Setup(name)
	if err != nil {
		t.Fatal(err)
	}
	query, err := nexmarksql.Query(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(sets + "\n" + nexmarksql.DDL() + "\n" + setup); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec("EXPLAIN " + query); err != nil {
		t.Fatal(err)
	}
	if plan := explained.String(); !strings.Contains(plan, "partialFinalType=[PARTIAL]") || !strings.Contains(plan, "partialFinalType=[FINAL]") {
		t.Fatalf("%s with %s: the plan is not split:\n%s", name, sets, plan)
	}
	return totals(t, name, runMultiset(t, s, name, query))
}
