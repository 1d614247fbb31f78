package sql_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/types"
)

// TestGroupAggregationWithoutUpdateBefore: a group aggregation whose -U
// rows are not read (a sink that drops them) sends the +I and +U rows it
// sends when they are read, in the same order. Where every row changes
// its group's result (an insert-only input and an unfiltered COUNT(*)),
// it does not compute the result before a change (groupAggFn.grows); a
// COUNT(*) under a FILTER need not change, and an unchanged result sends
// nothing either way. Row at a time and with mini-batches, at
// parallelism 1 (one order of arrival).
func TestGroupAggregationWithoutUpdateBefore(t *testing.T) {
	queries := map[string]string{
		"grows":    "SELECT auction, COUNT(*) AS n, MAX(price) AS top, COUNT(DISTINCT bidder) AS b FROM bid GROUP BY auction",
		"filtered": "SELECT MOD(auction, 7) AS a, COUNT(*) FILTER (WHERE price > 30000000) AS n, MAX(price) AS top FROM bid GROUP BY MOD(auction, 7)",
	}
	for _, miniBatch := range []bool{false, true} {
		for name, query := range queries {
			run := func(dropUB bool) []string {
				s := nexmarkSession(t, 4000, 1)
				if miniBatch {
					if _, err := s.Exec(`SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 s';
SET 'table.exec.mini-batch.size' = '1000';`); err != nil {
						t.Fatal(err)
					}
				}
				schema, st, err := s.Query(query)
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var out []string
				st.SubscribeLent(func(rows []types.Row) error {
					mu.Lock()
					defer mu.Unlock()
					for _, r := range rows {
						out = append(out, sql.FormatRow(r, schema))
					}
					return nil
				})
				if dropUB {
					st.DropUpdateBefore()
				}
				job, err := s.Job([]*sql.Statement{st})
				if err != nil {
					t.Fatal(err)
				}
				if err := job.Run(context.Background()); err != nil {
					t.Fatal(err)
				}
				return out
			}
			all, dropped := run(false), run(true)
			var want []string
			updates := 0
			for _, r := range all {
				switch {
				case strings.HasPrefix(r, "-U"):
				case strings.HasPrefix(r, "+U"):
					updates++
					want = append(want, r)
				default:
					want = append(want, r)
				}
			}
			if updates < 100 {
				t.Fatalf("%s (mini-batch %v): %d updates: the input does not exercise it", name, miniBatch, updates)
			}
			if miniBatch {
				// mini-batches also end with time: compare each group's
				// last row
				want, dropped = lastPerGroup(want), lastPerGroup(dropped)
			}
			if !slices.Equal(dropped, want) {
				i := 0
				for i < min(len(want), len(dropped)) && want[i] == dropped[i] {
					i++
				}
				t.Fatalf("%s (mini-batch %v): %d rows without -U, want %d; from row %d: %q, want %q", name, miniBatch, len(dropped), len(want), i, at(dropped, i), at(want, i))
			}
		}
	}
}

// lastPerGroup returns the last of the rows ("+I[k, ...]") of each group
// k, sorted.
func lastPerGroup(rows []string) []string {
	last := map[string]string{}
	for _, r := range rows {
		k, _, _ := strings.Cut(r[3:], ",")
		last[k] = r[3:]
	}
	var out []string
	for _, r := range last {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}
