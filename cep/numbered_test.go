package cep_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
)

// DetectNumbered numbers each key's matches from 1, in match order.
func TestDetectNumbered(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var rs []Reading
	for i := range 6 {
		rs = append(rs, Reading{"a", float64(i), t0.Add(time.Duration(i) * time.Second)})
		if i < 4 {
			rs = append(rs, Reading{"b", float64(i), t0.Add(time.Duration(i) * time.Second)})
		}
	}
	// any two readings in a row, the next match after the last
	pair := cep.Begin[Reading]("x", cep.SkipPastLastEvent()).Next("y")
	job := weir.NewJob("numbered", weir.Parallelism(2))
	src := weir.FromSource(job, "r", weir.SliceSource(rs), weir.BoundedOutOfOrderness(time.Second, func(r Reading) time.Time { return r.TS }))
	out := weir.Collect(cep.DetectNumbered(weir.KeyBy(src, func(r Reading) string { return r.Sensor }), pair,
		func(k string, n int64, m cep.Match[Reading]) string {
			return fmt.Sprintf("%s#%d@%v", k, n, m["x"][0].Temp)
		}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := out.Items()
	slices.Sort(got)
	want := []string{"a#1@0", "a#2@2", "a#3@4", "b#1@0", "b#2@2"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
