package weir_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/weirstream/weir"
)

// Count clicks per ad per minute of event time. The click of 12:00:30 that
// arrives after the watermark passed 12:01 is dropped and counted, never
// silently; LateEvents shows it.
func Example() {
	type Click struct {
		AdID string
		TS   time.Time
	}
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	events := []Click{
		{"ad-1", t0.Add(10 * time.Second)},
		{"ad-2", t0.Add(20 * time.Second)},
		{"ad-1", t0.Add(15 * time.Second)}, // out of order, within the 5s bound
		{"ad-1", t0.Add(70 * time.Second)},
		{"ad-2", t0.Add(125 * time.Second)}, // the watermark passes 12:02
		{"ad-1", t0.Add(30 * time.Second)},  // too late for 12:00–12:01
	}
	job := weir.NewJob("ad-clicks", weir.Parallelism(2))
	clicks := weir.FromSource(job, "clicks", weir.SliceSource(events),
		weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS }))
	perAd := weir.KeyBy(clicks, func(c Click) string { return c.AdID })
	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[Click]())
	out := weir.Collect(counts)
	late := weir.Collect(weir.LateEvents[Click](counts))
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}
	var lines []string
	for _, r := range out.Items() {
		lines = append(lines, fmt.Sprintf("%s %s-%s %d", r.Key, r.Start.Format("15:04"), r.End.Format("15:04"), r.Value))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	for _, l := range late.Items() {
		fmt.Printf("late: %s at %s missed %s-%s\n", l.Key, l.Timestamp.Format("15:04:05"), l.Window.Start.Format("15:04"), l.Window.End.Format("15:04"))
	}
	// Output:
	// ad-1 12:00-12:01 2
	// ad-1 12:01-12:02 1
	// ad-2 12:00-12:01 1
	// ad-2 12:02-12:03 1
	// late: ad-1 at 12:00:30 missed 12:00-12:01
}
