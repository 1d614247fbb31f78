package planner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/types"
)

// runQuery plans query on s, runs it to its end (within a minute) and
// returns its rows as FormatRow prints them (with their kind, or the
// values alone), in the order the sink got them, with the job and the
// statement for their metrics and plan.
func runQuery(t testing.TB, s *Session, query string, kinds bool) ([]string, *weir.Job, *Statement) {
	t.Helper()
	schema, st, err := s.Query(query)
	if err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	var mu sync.Mutex // the sink's subtasks call it concurrently
	var out []string
	st.Subscribe(func(rs []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		for _, r := range rs {
			if !kinds {
				r = types.Row{Values: r.Values}
			}
			out = append(out, FormatRow(r, schema))
		}
		return nil
	})
	job, err := s.Job([]*Statement{st})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := job.Run(ctx); err != nil {
		t.Fatalf("%v\n%s", err, query)
	}
	return out, job, st
}
