package sql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/batchref"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// Flink's Nexmark query files (sql/nexmarksql: q0-q22 but q6, which Flink
// does not run) give, through weir's SQL planner, the rows of the
// hand-written Go queries (package nexmark) over the same generated
// events, and the rows of the batch evaluator (nexmark/batchref) over a
// JSON-lines file of them, read both by the 'nexmark' connector and by the
// 'filesystem' connector with the json format, at parallelism 1 and 2.
// Updating queries are compared by their final view: the changelog
// applied.

// moreEvents at moreRate are 12 s of event time (3 s under the race
// detector, where the whole package must stay within go test's timeout on
// a loaded machine): 10 s windows that close (q7, q8, q12), several
// hopping windows (q5), sessions (q11), auctions with bids (q4, q9, q20).
var moreEvents = map[bool]int64{false: 12000, true: 3000}[raceEnabled]

const moreRate = 1000

func moreConfig(splits int) nexmark.GeneratorConfig {
	return nexmark.GeneratorConfig{Events: moreEvents, EventRate: moreRate, Splits: splits}
}

// moreQueries are the queries of TestNexmarkSQLConformance.
func moreQueries() []string {
	var out []string
	for _, q := range nexmarksql.Queries() {
		if q != "q6" {
			out = append(out, q)
		}
	}
	return out
}

// eventFile writes the generator's events as `weir nexmark gen` does, and
// the side input of q13 as the suite's side_input.txt.
func eventFile(t *testing.T) (events, side string) {
	t.Helper()
	g, err := nexmark.NewGenerator(moreConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var e nexmark.Event
	for i := int64(0); i < moreEvents; i++ {
		g.Event(i, &e)
		buf.Write(e.AppendJSON(nil))
		buf.WriteByte('\n')
	}
	dir := t.TempDir()
	events = filepath.Join(dir, "events.json")
	if err := os.WriteFile(events, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, r := range nexmark.SideInput(nexmark.SideInputRows) {
		fmt.Fprintf(&sb, "%d,%s\n", r.Key, r.Value)
	}
	side = filepath.Join(dir, "side_input.txt")
	if err := os.WriteFile(side, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return events, side
}

// goRows runs the hand-written query over the generator: its rows, or an
// updating query's final view, as canonical JSON.
func goRows(t *testing.T, name string, par int) []string {
	t.Helper()
	q, err := nexmark.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	jl := nexmark.NewJSONLines(&buf)
	view := nexmark.NewUpsertView()
	out := jl.Output()
	if q.Updating() {
		out = view.Output()
	}
	job := weir.NewJob("go-"+name, weir.Parallelism(par))
	q.Build(nexmark.Events(job, nexmark.Source(moreConfig(par))), out)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	if q.Updating() {
		if _, err := view.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
	}
	var rows []string
	for line := range strings.Lines(buf.String()) {
		rows = append(rows, canonical(t, []byte(line)))
	}
	return totals(t, name, rows)
}

// sinkColumns are the columns of query name's sink table nexmark_qN, from
// its CREATE TABLE ("" for a query file that is a SELECT alone).
func sinkColumns(t *testing.T, name string) []string {
	t.Helper()
	text, err := nexmarksql.Job(name)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)CREATE TABLE nexmark_` + name + ` \((.*?)\n\)`).FindStringSubmatch(text)
	if m == nil {
		return nil
	}
	var cols []string
	for _, line := range strings.Split(m[1], "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			cols = append(cols, strings.Trim(f[0], "`"))
		}
	}
	return cols
}

// sqlRows runs query name's SQL at parallelism par over the 'nexmark'
// connector (events == "") or over the JSON-lines file events, and returns
// the changelog's final rows as canonical JSON. The columns are named as
// the sink table of the file names them (Flink's INSERT maps by position:
// q4's category is the sink's id).
func sqlRows(t *testing.T, name string, par int, events, side string) []string {
	t.Helper()
	s := sql.NewSession(sql.Parallelism(par), sql.Define("TPS", fmt.Sprint(moreRate)),
		sql.Define("EVENTS_NUM", fmt.Sprint(moreEvents)), sql.Define("NEXMARK_TABLE", "datagen"),
		sql.Define("EVENTS_FILE", events), sql.Define("SIDE_INPUT", side))
	ddl := nexmarksql.DDL()
	if events != "" {
		ddl = nexmarksql.DDLJSON()
	}
	setup, err := nexmarksql.Setup(name)
	if err != nil {
		t.Fatal(err)
	}
	query, err := nexmarksql.Query(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exec(ddl + "\n" + setup); err != nil {
		t.Fatal(err)
	}
	out := runMultiset(t, s, name, query)
	return totals(t, name, out)
}

// sinkNames names the columns of query name's SELECT as its sink table
// does. q7's SELECT puts price before bidder and its sink bidder before
// price: Flink writes the price into the sink's bidder column. The Go
// query and batchref name each value as the SELECT does (batchref's doc),
// and so does the comparison.
func sinkNames(t *testing.T, name string, schema types.Schema) types.Schema {
	if sink := sinkColumns(t, name); len(sink) == len(schema) && name != "q7" {
		schema = slices.Clone(schema)
		for i := range schema {
			schema[i].Name = sink[i]
		}
	}
	return schema
}

// totals turns q12's rows, bids per bidder per processing-time window, into
// the total per bidder, which does not depend on the clock (as
// nexmark/conformance_test.go does); other queries' rows pass, sorted.
func totals(t *testing.T, name string, rows []string) []string {
	t.Helper()
	if name == "q12" {
		sum := map[int64]int64{}
		for _, r := range rows {
			var w struct {
				Bidder    int64 `json:"bidder"`
				BidCount  int64 `json:"bid_count"`
				StartTime int64 `json:"starttime"`
				EndTime   int64 `json:"endtime"`
			}
			if err := json.Unmarshal([]byte(r), &w); err != nil {
				t.Fatalf("q12 row %s: %v", r, err)
			}
			if w.BidCount < 1 || w.EndTime-w.StartTime != 10_000 || w.StartTime%10_000 != 0 {
				t.Fatalf("q12 row %s: not a 10 s window with bids", r)
			}
			sum[w.Bidder] += w.BidCount
		}
		rows = rows[:0]
		for b, n := range sum {
			rows = append(rows, fmt.Sprintf(`{"bid_count":%d,"bidder":%d}`, n, b))
		}
	}
	slices.Sort(rows)
	return rows
}

// sameRows reports how got differs from want as multisets.
func sameRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the reference gave no rows: the comparison would be empty", what)
	}
	var missing, extra []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing)+len(extra) > 0 {
		t.Errorf("%s: %d rows, want %d; %d missing, e.g. %v; %d unexpected, e.g. %v", what,
			len(got), len(want), len(missing), missing[:min(3, len(missing))], len(extra), extra[:min(3, len(extra))])
	}
}

func TestNexmarkSQLConformance(t *testing.T) {
	events, side := eventFile(t)
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	var inRef []string
	for _, q := range moreQueries() {
		if batchref.Columns(q) != nil {
			inRef = append(inRef, q)
		}
	}
	ref, err := batchref.EvaluateAll(inRef, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range moreQueries() {
		t.Run(q, func(t *testing.T) {
			var want []string
			if ref[q] != nil {
				for _, r := range ref[q] {
					want = append(want, canonical(t, []byte(r)))
				}
			}
			for _, par := range []int{1, 2} {
				if testing.Short() && par == 2 {
					continue
				}
				gen := sqlRows(t, q, par, "", side)
				if _, err := nexmark.Lookup(q); err == nil {
					sameRows(t, fmt.Sprintf("p%d, generator, against the Go query", par), gen, goRows(t, q, par))
				}
				if want == nil {
					continue
				}
				sameRows(t, fmt.Sprintf("p%d, generator, against batchref", par), gen, want)
				if raceEnabled && par == 2 {
					continue // under -race the file is read at parallelism 1 only
				}
				sameRows(t, fmt.Sprintf("p%d, JSON-lines file, against batchref", par), sqlRows(t, q, par, events, side), want)
			}
		})
	}
}
