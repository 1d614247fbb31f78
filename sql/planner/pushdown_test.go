package planner

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// runNexmark runs query over the Nexmark ddl (3,000 events) and returns its
// result (the changelog applied) as sorted strings, and the statement.
func runNexmark(t *testing.T, query string, par int) ([]string, *Statement) {
	t.Helper()
	return runNexmarkWith(t, query, par, Config{})
}

// runNexmarkWith is runNexmark with the planner's rules switched by cfg.
func runNexmarkWith(t *testing.T, query string, par int, cfg Config) ([]string, *Statement) {
	t.Helper()
	s := NewSession(Parallelism(par), Define("TPS", "1000"), Define("EVENTS_NUM", "3000"), Define("NEXMARK_TABLE", "datagen"))
	s.plan = cfg
	if _, err := s.Exec(nexmarksql.DDL()); err != nil {
		t.Fatal(err)
	}
	_, st, err := s.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var mu sync.Mutex
	count := map[string]int{}
	st.Subscribe(func(rows []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			k := fmt.Sprint(r.Values)
			if r.Kind.IsRetraction() {
				count[k]--
			} else {
				count[k]++
			}
		}
		return nil
	})
	job, err := s.Job([]*Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var out []string
	for k, n := range count {
		for range n {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, st
}

// Projection pushdown changes no result: queries that read whole ROWs,
// single fields, computed columns, views, filters, window aggregates and
// joins give the same rows over the projecting scan as over the full one.
func TestPushdownSameRows(t *testing.T) {
	queries := []string{
		"SELECT * FROM datagen",
		"SELECT event_type, bid, person.name, auction.seller, `dateTime` FROM datagen WHERE event_type <> 2",
		"SELECT bid.price, bid.price * 2, person.id FROM datagen WHERE bid.bidder > 100 OR person.id IS NOT NULL",
		"SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
		"SELECT id, name, `dateTime` FROM person",
		"SELECT bidder, COUNT(*), MAX(price) FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND)) GROUP BY bidder, window_start, window_end",
		"SELECT seller, COUNT(*) FROM auction GROUP BY seller",
	}
	for _, q := range []string{"q5", "q7", "q8"} {
		text, err := nexmarksql.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		queries = append(queries, text)
	}
	for _, q := range queries {
		got, _ := runNexmark(t, q, 2)
		want, _ := runNexmarkWith(t, q, 2, Config{DisablePushdown: true})
		if len(want) == 0 {
			t.Fatalf("%s: no rows", q)
		}
		if !slices.Equal(got, want) {
			n := min(len(got), len(want), 3)
			t.Fatalf("%s: %d rows with pushdown, %d without; first %q vs %q", q, len(got), len(want), got[:n], want[:n])
		}
	}
}

// scanPaths returns the projections of the projecting scans below r.
func scanPaths(r *rel) [][]connector.Path {
	var out [][]connector.Path
	if r.push != nil {
		out = append(out, r.push.Paths)
	}
	for _, in := range r.inputs {
		out = append(out, scanPaths(in)...)
	}
	return out
}

// q0's scan reads what q0 reads (four fields of bid) and what the computed
// dateTime reads, not the bid view's other columns (channel, url) which
// the query's Calc fuses away; q11's window aggregation prunes its input
// Calc to bidder (and the time column), so its scan reads bid.bidder only.
func TestPushdownReadsOnlyUsedFields(t *testing.T) {
	// event_type; person, auction and bid dateTime; the computed dateTime
	common := []string{"-1.-1", "0.-1", "1.6", "2.5", "3.5"}
	for _, c := range []struct {
		q    string
		want []string
	}{
		{"q0", append([]string{"3.0", "3.1", "3.2", "3.6"}, common...)}, // bid auction, bidder, price, extra
		{"q11", append([]string{"3.1"}, common...)},                     // bid bidder
	} {
		text, err := nexmarksql.Query(c.q)
		if err != nil {
			t.Fatal(err)
		}
		_, st := runNexmark(t, text, 1)
		scans := scanPaths(st.root)
		if len(scans) != 1 {
			t.Fatalf("%s: %d projecting scans, want 1", c.q, len(scans))
		}
		var got []string
		for _, p := range scans[0] {
			got = append(got, fmt.Sprintf("%d.%d", p.Col, p.Field))
		}
		sort.Strings(got)
		sort.Strings(c.want)
		if !slices.Equal(got, c.want) {
			t.Fatalf("%s reads %s, want %s", c.q, strings.Join(got, " "), strings.Join(c.want, " "))
		}
	}
}
