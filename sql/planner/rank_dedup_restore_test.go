package planner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/connector"
	"github.com/weirstream/weir/sql/types"
)

// heldValuesFactory is the 'values' source of the savepoint tests: with
// 'hold-after' = k its reader returns k rows, then nothing until the job
// stops (weirtest.HoldAfter); positions are the plain source's, so a job
// restored from a savepoint of it reads on with 'hold-after' = 0.
type heldValuesFactory struct{}

func (heldValuesFactory) Identifier() string { return "held-values" }

func init() { connector.Register(heldValuesFactory{}) }

func (heldValuesFactory) CreateSource(t *connector.Table) (*connector.Source, error) {
	rows, err := valuesRows(t)
	if err != nil {
		return nil, err
	}
	var hold int
	if _, err := fmt.Sscan(t.Options["hold-after"], &hold); err != nil {
		return nil, fmt.Errorf("table '%s': 'hold-after' = %q", t.Name, t.Options["hold-after"])
	}
	src := weir.SliceSource(rows).(weir.RestorableSource[types.Row])
	if hold > 0 {
		src = weirtest.HoldAfter(src, hold)
	}
	return &connector.Source{Source: weir.Source[types.Row](src), Bounded: true, Changelog: types.InsertOnly}, nil
}

// TestTopOneRestoresTopNForm: a savepoint of a deduplication and of a
// Top-1 taken by a job that keeps the Top-N's form of state (a list of
// one ListValue per partition: what weir wrote before rank_dedup.go, here
// Config.DisableTopOneState) restores into a job that keeps the one-row
// form, and the result (the changes applied) is that of an uninterrupted
// run; so does a savepoint of the one-row form. Every partition has rows
// before the savepoint and after, at parallelism 1 and 2 (the restored job
// at the other parallelism: the state moves by key group). The result on
// Pebble is the same.
func TestTopOneRestoresTopNForm(t *testing.T) {
	const n, hold = 4000, 1500
	var rows []string
	for i := 0; i < n; i++ {
		rows = append(rows, fmt.Sprintf("+I %d, 's%d', TIMESTAMP '2024-01-01 00:00:00' + INTERVAL '%d' SECOND", i, i%13, i/5))
	}
	values.mu.Lock()
	values.data["topone-restore"] = rows
	values.mu.Unlock()
	ddl := func(hold int) string {
		return fmt.Sprintf(`CREATE TABLE tr (id INT, s STRING, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)
			WITH ('connector' = 'held-values', 'data-id' = 'topone-restore', 'hold-after' = '%d');`, hold)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, q := range []struct{ name, query string }{
		{"dedup", `SELECT k, id, s, ts FROM (SELECT k, id, s, ts, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn
			FROM (SELECT MOD(id, 40) AS k, id, UPPER(s) AS s, ts FROM tr)) WHERE rn = 1`},
		{"top1", `SELECT k, id, v FROM (SELECT k, id, v, ROW_NUMBER() OVER (PARTITION BY k ORDER BY v DESC) AS rn
			FROM (SELECT MOD(id, 40) AS k, id, MOD(id * 7919, 1000) AS v FROM tr)) WHERE rn <= 1`},
	} {
		// the result: the changes applied
		var mu sync.Mutex
		table := map[string]int{}
		plan := func(s *Session) *weir.Job {
			schema, st, err := s.Query(q.query)
			if err != nil {
				t.Fatal(err)
			}
			st.Subscribe(func(rs []types.Row) error {
				mu.Lock()
				defer mu.Unlock()
				for _, r := range rs {
					k := FormatRow(types.Row{Values: r.Values}, schema)
					if r.Kind.IsRetraction() {
						table[k]--
					} else {
						table[k]++
					}
				}
				return nil
			})
			job, err := s.Job([]*Statement{st})
			if err != nil {
				t.Fatal(err)
			}
			return job
		}
		result := func() []string {
			mu.Lock()
			defer mu.Unlock()
			var out []string
			for k, c := range table {
				if c != 0 {
					out = append(out, fmt.Sprintf("%d× %s", c, k))
				}
			}
			slices.Sort(out)
			clear(table)
			return out
		}
		s := NewSession(Parallelism(1))
		if _, err := s.Exec(ddl(0)); err != nil {
			t.Fatal(err)
		}
		if err := plan(s).Run(ctx); err != nil {
			t.Fatal(err)
		}
		want := result()
		if len(want) != 40 {
			t.Fatalf("%s: %d rows in the uninterrupted result, want one per partition (40)", q.name, len(want))
		}
		// on Pebble, where a value read is a decoded copy that the Top-1
		// must write back (topNFn.inPlace is for the heap)
		ps := NewSession(Parallelism(2), JobOptions(weir.PebbleState(t.TempDir(), 8<<20)))
		if _, err := ps.Exec(ddl(0)); err != nil {
			t.Fatal(err)
		}
		if err := plan(ps).Run(ctx); err != nil {
			t.Fatal(err)
		}
		if got := result(); !slices.Equal(got, want) {
			t.Errorf("%s on Pebble: the result differs:\n%s\non the heap:\n%s", q.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		for _, c := range []struct {
			name    string
			topN    bool // the savepoint's job keeps the Top-N form
			p1, p2  int
			restore string
		}{
			{"top-n form", true, 1, 2, ""},
			{"top-n form", true, 2, 1, ""},
			{"one-row form", false, 2, 1, ""},
		} {
			dir := t.TempDir()
			s := NewSession(Parallelism(c.p1), Checkpointing(time.Hour, filepath.Join(dir, "ck")), JobOptions(weirtest.FirstCheckpointAfter(time.Hour)))
			s.plan.DisableTopOneState = c.topN
			if _, err := s.Exec(ddl(hold)); err != nil {
				t.Fatal(err)
			}
			job := plan(s)
			errc := make(chan error, 1)
			go func() { errc <- job.Run(ctx) }()
			weirtest.WaitFor(t, "the held rows through the Top-1", time.Minute, func() bool {
				var in int64
				for _, m := range job.Metrics().Operators {
					if strings.HasPrefix(m.Name, "process") { // the Top-1
						in += m.RecordsIn
					}
				}
				return in >= hold
			})
			sp := filepath.Join(dir, "sp")
			if _, err := job.Savepoint(ctx, sp, true); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			s2 := NewSession(Parallelism(c.p2), Checkpointing(time.Hour, filepath.Join(dir, "ck2")), JobOptions(weirtest.FirstCheckpointAfter(time.Hour), weir.RestoreFrom(sp)))
			if _, err := s2.Exec(ddl(0)); err != nil {
				t.Fatal(err)
			}
			if err := plan(s2).Run(ctx); err != nil {
				t.Fatal(err)
			}
			if got := result(); !slices.Equal(got, want) {
				t.Errorf("%s, %s from p%d to p%d: the restored job's result differs:\n%s\nuninterrupted:\n%s", q.name, c.name, c.p1, c.p2,
					strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
	}
}
