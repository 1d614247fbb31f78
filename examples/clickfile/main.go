// Command clickfile counts clicks per ad per minute of event time from a
// JSON-lines file twice: with the Go API, and with the Flink SQL of
// clicks.sql. The file's timestamps are in Flink's SQL form
// ("2026-11-29 12:00:10.000", as `weir sql` reads and writes them); a
// jsontime.Timestamp field reads them in Go.
//
//	go run ./examples/clickfile [file]    (default examples/clickfile/clicks.jsonl)
package main

import (
	"context"
	_ "embed"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/format/jsontime"
	"github.com/weirstream/weir/sql"
	_ "github.com/weirstream/weir/sql/connector/builtin" // the SQL connectors and formats
)

// Click is one line of the file: {"ad":"ad-1","ts":"2026-11-29 12:00:10.000"}.
type Click struct {
	Ad string             `json:"ad"`
	TS jsontime.Timestamp `json:"ts"`
}

//go:embed clicks.sql
var clicksSQL string

func main() {
	path := "examples/clickfile/clicks.jsonl"
	if len(os.Args) > 1 {
		path = os.Args[1]
	}
	ctx := context.Background()

	// The Go API. A line that is not a Click (a timestamp that is not
	// one) fails the job with its file and line; OnBadRecord(weir.Skip)
	// or weir.DeadLetter(sink) would keep going.
	job := weir.NewJob("clickfile")
	clicks := weir.FromSource(job, "clicks", file.JSONLines[Click]([]string{path}),
		weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS.Time }))
	perAd := weir.KeyBy(clicks, func(c Click) string { return c.Ad })
	out := weir.Collect(weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[Click]()))
	if err := job.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("Go API:")
	for _, r := range out.Items() {
		fmt.Println(r.Key, r.Start.Format(time.TimeOnly), r.End.Format(time.TimeOnly), r.Value)
	}

	// The same file in SQL: rows print as Flink's print connector does.
	fmt.Println("SQL:")
	if err := sql.Run(ctx, clicksSQL, sql.Define("path", path)); err != nil {
		log.Fatal(err)
	}
}
