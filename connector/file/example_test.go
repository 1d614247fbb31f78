package file_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
)

type Click struct {
	Ad string    `json:"ad"`
	TS time.Time `json:"ts"`
}

// Count the clicks per ad and minute of a JSON Lines file.
func ExampleJSONLines() {
	dir, err := os.MkdirTemp("", "weir-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "clicks.jsonl")
	data := `{"ad":"shoes","ts":"2024-05-01T10:00:05Z"}
{"ad":"hats","ts":"2024-05-01T10:00:20Z"}
{"ad":"shoes","ts":"2024-05-01T10:00:59Z"}

{"ad":"shoes","ts":"2024-05-01T10:00:58Z"}
{"ad":"shoes","ts":"2024-05-01T10:01:30Z"}
`
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		panic(err)
	}

	job := weir.NewJob("clicks-per-minute")
	clicks := weir.FromSource(job, "in", file.JSONLines[Click]([]string{path}),
		weir.BoundedOutOfOrderness(5*time.Second, func(c Click) time.Time { return c.TS }))
	perAd := weir.KeyBy(clicks, func(c Click) string { return c.Ad })
	counts := weir.Aggregate(weir.Window(perAd, weir.Tumbling(time.Minute)), weir.Count[Click]())
	out := weir.Collect(counts)
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}

	var lines []string
	for _, r := range out.Items() {
		lines = append(lines, fmt.Sprintf("%s %s %d", r.Start.UTC().Format("15:04"), r.Key, r.Value))
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// 10:00 hats 1
	// 10:00 shoes 3
	// 10:01 shoes 1
}
