package sql_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/sql"
	"github.com/weirstream/weir/sql/nexmarksql"
	"github.com/weirstream/weir/sql/types"
)

const benchEvents = 1_000_000

// BenchmarkNexmark runs each query in SQL (the 'nexmark' connector and
// Flink's query text) and as weir's hand-written Go query over the same
// generated events at parallelism 1, into a discarding sink, and reports
// events/s of each:
//
//	go test -run XXX -bench Nexmark -benchtime 1x ./sql/
func BenchmarkNexmark(b *testing.B) {
	for _, q := range []string{"q0", "q1", "q2", "q5", "q7", "q8", "q11"} {
		b.Run(q+"/sql", func(b *testing.B) {
			ddl := nexmarksql.DDL()
			query, err := nexmarksql.Query(q)
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				s := sql.NewSession(sql.Define("TPS", "10000000"), sql.Define("EVENTS_NUM", fmt.Sprint(benchEvents)),
					sql.Define("NEXMARK_TABLE", "datagen"))
				if _, err := s.Exec(string(ddl)); err != nil {
					b.Fatal(err)
				}
				_, st, err := s.Query(string(query))
				if err != nil {
					b.Fatal(err)
				}
				st.SubscribeLent(func([]types.Row) error { return nil })
				job, err := s.Job([]*sql.Statement{st})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				if err := job.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(benchEvents/time.Since(start).Seconds(), "events/s")
			}
		})
		b.Run(q+"/go", func(b *testing.B) {
			for range b.N {
				job := weir.NewJob("go-" + q)
				ev := nexmark.Events(job, nexmark.Source(nexmark.GeneratorConfig{Events: benchEvents, Splits: 1}))
				switch q {
				case "q0":
					weir.To(nexmark.Q0(ev), weir.SinkFunc[nexmark.Q0Row](func(context.Context, []nexmark.Q0Row) error { return nil }))
				case "q1":
					weir.To(nexmark.Q1(ev), weir.SinkFunc[nexmark.Q1Row](func(context.Context, []nexmark.Q1Row) error { return nil }))
				case "q2":
					weir.To(nexmark.Q2(ev), weir.SinkFunc[nexmark.Q2Row](func(context.Context, []nexmark.Q2Row) error { return nil }))
				case "q5":
					weir.To(nexmark.Q5(ev), weir.SinkFunc[nexmark.Q5Row](func(context.Context, []nexmark.Q5Row) error { return nil }))
				case "q7":
					weir.To(nexmark.Q7(ev), weir.SinkFunc[nexmark.Q7Row](func(context.Context, []nexmark.Q7Row) error { return nil }))
				case "q8":
					weir.To(nexmark.Q8(ev), weir.SinkFunc[nexmark.Q8Row](func(context.Context, []nexmark.Q8Row) error { return nil }))
				case "q11":
					weir.To(nexmark.Q11(ev), weir.SinkFunc[nexmark.Q11Row](func(context.Context, []nexmark.Q11Row) error { return nil }))
				}
				start := time.Now()
				if err := job.Run(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(benchEvents/time.Since(start).Seconds(), "events/s")
			}
		})
	}
}
