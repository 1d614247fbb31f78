package planner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/internal/testing/weirtest"
	"github.com/weirstream/weir/sql/types"
)

// 'table.exec.state.ttl' (Flink's idle state retention): a group whose
// state was last written longer ago than the TTL, in the job's processing
// time, is gone; its next row starts it over with +I, on the heap and on
// Pebble, its COUNT(DISTINCT) values included. Without the setting the
// group lives on.
func TestStateTTL(t *testing.T) {
	for _, c := range []struct {
		name   string
		ttl    bool
		pebble bool
		want   []string
	}{
		{"heap", true, false, []string{"+I 1 1 1", "-U 1 1 1", "+U 1 2 2", "+I 1 1 1"}},
		{"pebble", true, true, []string{"+I 1 1 1", "-U 1 1 1", "+U 1 2 2", "+I 1 1 1"}},
		{"no-ttl", false, true, []string{"+I 1 1 1", "-U 1 1 1", "+U 1 2 2", "-U 1 2 2", "+U 1 3 2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch := make(chan int64, 16)
			feed := t.Name()
			feeds.Store(feed, ch)
			clock := &testClock{}
			clock.ms.Store(1_000)
			opts := []weir.JobOption{weir.Clock(clock.now)}
			if c.pebble {
				opts = append(opts, weir.PebbleState(t.TempDir(), 0))
			}
			s := NewSession(JobOptions(opts...))
			set := ""
			if c.ttl {
				set = "SET 'table.exec.state.ttl' = '10 s';\n"
			}
			if _, err := s.Exec(set + fmt.Sprintf(`CREATE TABLE bid (b BIGINT) WITH ('connector' = 'test-feed', 'feed-id' = '%s');`, feed)); err != nil {
				t.Fatal(err)
			}
			_, st, err := s.Query(`SELECT MOD(b, 2) AS k, COUNT(*) AS n, COUNT(DISTINCT b) AS d FROM bid GROUP BY MOD(b, 2)`)
			if err != nil {
				t.Fatal(err)
			}
			rows := collect(st, func(r types.Row) string {
				return fmt.Sprintf("%s %d %d %d", r.Kind, r.Values[0].I, r.Values[1].I, r.Values[2].I)
			})
			job, err := s.Job([]*Statement{st})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- job.Run(context.Background()) }()
			ch <- 1
			weirtest.WaitFor(t, "the first row's change", 30*time.Second, func() bool { return len(rows()) == 1 })
			clock.ms.Store(6_000)
			ch <- 3
			weirtest.WaitFor(t, "the second row's change", 30*time.Second, func() bool { return len(rows()) == 3 })
			clock.ms.Store(17_000) // 11 s after the group's last write
			ch <- 3
			close(ch)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if r := rows(); !slices.Equal(r, c.want) {
				t.Fatalf("changes %v, want %v", r, c.want)
			}
		})
	}
}

// A deduplication (a Top-1) under 'table.exec.state.ttl': a partition
// whose row was last written longer ago than the TTL starts over, its
// next row an insert, not an update; the heap's Top-1, which writes its
// row over in place, refreshes the TTL all the same.
func TestStateTTLDeduplication(t *testing.T) {
	for _, pebble := range []bool{false, true} {
		t.Run(fmt.Sprint("pebble=", pebble), func(t *testing.T) {
			ch := make(chan int64, 16)
			feeds.Store(t.Name(), ch)
			clock := &testClock{}
			clock.ms.Store(1_000)
			opts := []weir.JobOption{weir.Clock(clock.now)}
			if pebble {
				opts = append(opts, weir.PebbleState(t.TempDir(), 0))
			}
			s := NewSession(JobOptions(opts...))
			if _, err := s.Exec(fmt.Sprintf(`SET 'table.exec.state.ttl' = '10 s';
CREATE TABLE bid (b BIGINT) WITH ('connector' = 'test-feed', 'feed-id' = '%s');`, t.Name())); err != nil {
				t.Fatal(err)
			}
			// the last row per parity, by arrival
			_, st, err := s.Query(`SELECT k, b FROM (SELECT MOD(b, 2) AS k, b, ROW_NUMBER() OVER (PARTITION BY MOD(b, 2) ORDER BY PROCTIME() DESC) AS rn FROM bid) WHERE rn = 1`)
			if err != nil {
				t.Fatal(err)
			}
			rows := collect(st, func(r types.Row) string { return fmt.Sprintf("%s %d %d", r.Kind, r.Values[0].I, r.Values[1].I) })
			job, err := s.Job([]*Statement{st})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- job.Run(context.Background()) }()
			ch <- 1
			weirtest.WaitFor(t, "the first row", 30*time.Second, func() bool { return len(rows()) == 1 })
			clock.ms.Store(8_000)
			ch <- 3 // refreshes the partition's TTL
			weirtest.WaitFor(t, "the second row", 30*time.Second, func() bool { return len(rows()) >= 2 })
			clock.ms.Store(16_000) // 8 s after the last write: alive
			ch <- 5
			weirtest.WaitFor(t, "the third row", 30*time.Second, func() bool { return len(rows()) >= 4 })
			clock.ms.Store(27_000) // 11 s after the last write: gone
			ch <- 7
			close(ch)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			want := []string{"+I 1 1", "-U 1 1", "+U 1 3", "-U 1 3", "+U 1 5", "+I 1 7"}
			if r := rows(); !slices.Equal(r, want) {
				t.Fatalf("changes %v, want %v", r, want)
			}
		})
	}
}

// A malformed 'table.exec.state.ttl' is an error naming the setting.
func TestStateTTLMalformed(t *testing.T) {
	s := NewSession()
	if _, err := s.Exec("SET 'table.exec.state.ttl' = 'a while';\nCREATE TABLE v (b BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '1');"); err != nil {
		t.Fatal(err)
	}
	_, st, err := s.Query(`SELECT b, COUNT(*) FROM v GROUP BY b`)
	if err != nil {
		t.Fatal(err)
	}
	st.Subscribe(func([]types.Row) error { return nil })
	if _, err := s.Job([]*Statement{st}); err == nil || !strings.Contains(err.Error(), "table.exec.state.ttl") {
		t.Fatalf("job with a malformed TTL: %v", err)
	}
}
