package sql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/sql"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// The Nexmark queries in SQL (testdata/nexmark, Flink's nexmark-flink
// queries over the 'nexmark' connector) give the same rows as weir's
// hand-written Go queries (package nexmark) over the same generated
// events, compared as multisets of JSON objects, at parallelism 1 and 2.

const (
	nexEvents = 30000
	nexRate   = 1000 // events per second of event time: 30 s of events
)

func goQuery(t *testing.T, q string, par int) []string {
	job := weir.NewJob("go-"+q, weir.Parallelism(par))
	ev := nexmark.Events(job, nexmark.Source(nexmark.GeneratorConfig{Events: nexEvents, EventRate: nexRate, Splits: par}))
	var rows func() []nexmark.Row
	switch q {
	case "q0":
		c := weir.Collect(nexmark.Q0(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	case "q1":
		c := weir.Collect(nexmark.Q1(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	case "q2":
		c := weir.Collect(nexmark.Q2(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	case "q5":
		c := weir.Collect(nexmark.Q5(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	case "q7":
		c := weir.Collect(nexmark.Q7(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	case "q8":
		c := weir.Collect(nexmark.Q8(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	case "q11":
		c := weir.Collect(nexmark.Q11(ev))
		rows = func() []nexmark.Row { return asRows(c.Items()) }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows() {
		out = append(out, canonical(t, r.AppendJSON(nil)))
	}
	sort.Strings(out)
	return out
}

func asRows[R any, PR interface {
	*R
	nexmark.Row
}](items []R) []nexmark.Row {
	out := make([]nexmark.Row, len(items))
	for i := range items {
		out[i] = PR(&items[i])
	}
	return out
}

// canonical re-encodes a JSON object with sorted keys and numbers as
// written.
func canonical(t *testing.T, b []byte) string {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, _ := json.Marshal(m)
	return string(out)
}

func sqlQuery(t *testing.T, q string, par int) []string {
	ddl := []byte(nexmarksql.DDL())
	query, err := nexmarksql.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	s := sql.NewSession(sql.Parallelism(par), sql.Define("TPS", fmt.Sprint(nexRate)),
		sql.Define("EVENTS_NUM", fmt.Sprint(nexEvents)), sql.Define("NEXMARK_TABLE", "datagen"))
	if _, err := s.Exec(string(ddl)); err != nil {
		t.Fatal(err)
	}
	out := runMultiset(t, s, q, string(query))
	sort.Strings(out)
	return out
}

// rowJSON writes a result row as the Go queries do: lower-case column
// names, timestamps in epoch milliseconds, decimals as numbers.
func rowJSON(r types.Row, schema types.Schema) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range schema {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(strings.ToLower(f.Name))
		b.Write(k)
		b.WriteByte(':')
		v := r.Values[i]
		switch {
		case v.Null:
			b.WriteString("null")
		case f.Type.Kind == types.Timestamp || f.Type.Kind == types.TimestampLTZ:
			fmt.Fprint(&b, v.I/1000)
		case f.Type.IsString():
			s, _ := json.Marshal(v.S)
			b.Write(s)
		default:
			b.WriteString(sql.FormatValue(v, f.Type))
		}
	}
	b.WriteByte('}')
	return b.String()
}

func TestNexmarkSQLMatchesGo(t *testing.T) {
	for _, q := range []string{"q0", "q1", "q2", "q5", "q7", "q8", "q11"} {
		for _, par := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/p%d", q, par), func(t *testing.T) {
				if testing.Short() && par == 2 {
					t.Skip("short")
				}
				want := goQuery(t, q, par)
				got := sqlQuery(t, q, par)
				t.Logf("%d rows", len(want))
				if len(want) == 0 {
					t.Fatalf("the Go query gave no rows: the comparison would be empty")
				}
				if len(got) != len(want) {
					t.Errorf("SQL gave %d rows, Go %d", len(got), len(want))
				}
				diff := 0
				for i := 0; i < len(got) && i < len(want) && diff < 5; i++ {
					if got[i] != want[i] {
						t.Errorf("row %d: SQL %s, Go %s", i, got[i], want[i])
						diff++
					}
				}
			})
		}
	}
}

// runMultiset runs query (the SELECT of Nexmark query name) in s and
// returns its result as a multiset of canonical JSON rows, named as the
// query's sink names them, with the changelog applied (a retraction
// removes one copy of its row; more retractions than additions fail).
func runMultiset(t *testing.T, s *sql.Session, name, query string) []string {
	t.Helper()
	schema, st, err := s.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	schema = sinkNames(t, name, schema)
	var mu sync.Mutex
	count := map[string]int{}
	st.Subscribe(func(rows []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rows {
			k := rowJSON(r, schema)
			if r.Kind.IsRetraction() {
				count[k]--
			} else {
				count[k]++
			}
		}
		return nil
	})
	job, err := s.Job([]*sql.Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k, n := range count {
		if n < 0 {
			t.Fatalf("%s retracted more often than added", k)
		}
		for range n {
			out = append(out, canonical(t, []byte(k)))
		}
	}
	return out
}
