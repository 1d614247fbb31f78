// Command adclicks is the smallest complete weir job: count clicks per ad
// per minute of event time, with a watermark that tolerates 5 seconds of
// disorder.
//
//	go run ./examples/adclicks
package main

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/weirstream/weir"
)

// Click is one ad click with the time it happened.
type Click struct {
	AdID string
	TS   time.Time
}

func main() {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	events := []Click{
		{"ad-1", t0.Add(10 * time.Second)},
		{"ad-2", t0.Add(20 * time.Second)},
		{"ad-1", t0.Add(15 * time.Second)}, // out of order, within 5s: counted
		{"ad-1", t0.Add(70 * time.Second)},
		{"ad-2", t0.Add(125 * time.Second)},
		{"ad-1", t0.Add(30 * time.Second)}, // its window fired already: dropped
	}
	ctx := context.Background()

	job := weir.NewJob("ad-clicks", weir.Parallelism(2))
	clicks := weir.FromSource(job, "clicks", weir.SliceSource(events),
		weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS }))
	perAd := weir.KeyBy(clicks, func(c Click) string { return c.AdID })
	var counts *weir.Stream[weir.WindowResult[string, int64]] = weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[Click]())
	out := weir.Collect(counts)
	err := job.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range out.Items() {
		fmt.Println(r.Key, r.Start.Format(time.TimeOnly), r.End.Format(time.TimeOnly), r.Value)
	}
}
