package sql_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/types"
)

// A Calc that feeds a counting window (COUNT(*) over TUMBLE or HOP, one
// integer key) lends its rows: the window's edge reads each row's key and
// keeps nothing. COUNT(price) (never NULL in Nexmark) is the same count on
// an edge that ships the rows, so its Calc allocates them; both give the
// same rows (counts of 7 keys in each window of 2 ms, 3 windows: 20,000 events at
// 10 M/s) with batches of 8 (the ring wraps many times), at parallelism 1
// and 2, and the counting query allocates far less per event.
func TestLentRowsToACountingWindow(t *testing.T) {
	const (
		star  = "SELECT MOD(auction, 7), COUNT(*) AS n, window_end FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '1' MILLISECOND, INTERVAL '2' MILLISECOND)) GROUP BY MOD(auction, 7), window_start, window_end"
		price = "SELECT MOD(auction, 7), COUNT(price) AS n, window_end FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '1' MILLISECOND, INTERVAL '2' MILLISECOND)) GROUP BY MOD(auction, 7), window_start, window_end"
	)
	run := func(query string, p, events int) ([]string, float64) {
		s := nexmarkSession(t, events, p)
		schema, st, err := s.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var out []string
		st.Subscribe(func(rows []types.Row) error {
			mu.Lock()
			defer mu.Unlock()
			for _, r := range rows {
				out = append(out, sql.FormatRow(r, schema))
			}
			return nil
		})
		job, err := s.Job([]*sql.Statement{st})
		if err != nil {
			t.Fatal(err)
		}
		var allocs float64
		if p == 1 {
			allocs = allocsPerEvent(t, job, events)
		} else if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out, allocs
	}
	for _, p := range []int{1, 2} {
		got, lentAllocs := run(star, p, 20_000)
		want, allocs := run(price, p, 20_000)
		if len(want) < 14 || !slices.Equal(got, want) {
			t.Fatalf("p%d: COUNT(*) gave %d rows, COUNT(price) %d; they differ", p, len(got), len(want))
		}
		if p == 1 {
			t.Logf("allocations per event: %.2f counting, %.2f with the rows shipped", lentAllocs, allocs)
			if lentAllocs > allocs-0.5 {
				t.Errorf("the counting window's input allocates %.2f objects per event, the shipped rows' %.2f: its Calc does not lend", lentAllocs, allocs)
			}
		}
	}
}
