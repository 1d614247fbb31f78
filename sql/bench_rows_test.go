package sql_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

// BenchmarkNexmarkSQLPerEvent runs a Nexmark query's SQL plan over b.N
// generated events at parallelism 1, so that -benchmem's B/op and
// allocs/op are per event (per input row of the plan) and ns/op is the
// cost of one event through the whole plan, generator included:
//
//	go test -run XXX -bench NexmarkSQLPerEvent -benchtime 1000000x -benchmem ./sql/
//
// The setup (parsing, planning) runs outside the timer but inside the
// allocation count; at a million events its few thousand allocations are
// below 0.01 per event.
func BenchmarkNexmarkSQLPerEvent(b *testing.B) {
	// QUERY-mb: with mini-batch on, as `weir bench nexmark --sql
	// --mini-batch 1000` runs the updating queries
	for _, q := range []string{"q0", "q1", "q2", "q11", "q12", "q12-mb", "q14", "q15", "q15-mb", "q9", "q16", "q16-mb", "q18", "q19", "q21", "q22"} {
		b.Run(q, func(b *testing.B) {
			q, mb := strings.CutSuffix(q, "-mb")
			query, err := nexmarksql.Query(q)
			if err != nil {
				b.Fatal(err)
			}
			s := sql.NewSession(sql.Define("TPS", "10000000"), sql.Define("EVENTS_NUM", fmt.Sprint(b.N)),
				sql.Define("NEXMARK_TABLE", "datagen"))
			if _, err := s.Exec(nexmarksql.DDL()); err != nil {
				b.Fatal(err)
			}
			// q12's view, q14's function
			if setup, err := nexmarksql.Setup(q); err != nil {
				b.Fatal(err)
			} else if _, err := s.Exec(setup); err != nil {
				b.Fatal(err)
			}
			if mb {
				if _, err := s.Exec("SET 'table.exec.mini-batch.enabled' = 'true'; SET 'table.exec.mini-batch.allow-latency' = '1 s'; SET 'table.exec.mini-batch.size' = '1000';"); err != nil {
					b.Fatal(err)
				}
			}
			_, st, err := s.Query(query)
			if err != nil {
				b.Fatal(err)
			}
			rows := 0
			st.SubscribeLent(func(rs []types.Row) error { rows += len(rs); return nil })
			st.DropUpdateBefore() // as the query files' blackhole sink
			job, err := s.Job([]*sql.Statement{st})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			cpu0 := processCPU()
			b.ResetTimer()
			if err := job.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			cpu := processCPU() - cpu0
			runtime.ReadMemStats(&m1)
			// per event with fractions (allocs/op rounds down), and the
			// process's CPU time per event, which is what `weir bench
			// nexmark` divides by: on a busy machine it varies far less
			// than wall time
			b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(b.N), "allocs/event")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/event")
			if rows == 0 && b.N > 1000 {
				b.Fatal("no rows")
			}
		})
	}
}

// processCPU is the user and system CPU time of the process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
