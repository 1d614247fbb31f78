package cep_test

import (
	"context"
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/cep"
)

type Reading struct {
	Sensor string
	Temp   float64
	TS     time.Time
}

// "The temperature rose for 30 seconds": a reading, then strictly rising
// readings, the last at least 30 s after the first. Each reading is
// compared with the one before it in the partial match (an iterative
// condition).
func Example() {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	readings := []Reading{
		{"s1", 20.0, at(0)}, {"s2", 18.0, at(0)},
		{"s1", 20.5, at(10)}, {"s2", 18.5, at(10)},
		{"s1", 21.0, at(20)}, {"s2", 18.3, at(20)}, // s2 falls
		{"s1", 21.4, at(30)}, {"s2", 18.9, at(30)},
		{"s1", 21.2, at(40)}, {"s2", 19.0, at(40)},
	}
	// last is the previous reading of the partial match.
	last := func(ctx *cep.Context[Reading]) Reading {
		if up := ctx.EventsForPattern("up"); len(up) > 0 {
			return up[len(up)-1]
		}
		return ctx.EventsForPattern("first")[0]
	}
	rose := cep.Begin[Reading]("first", cep.SkipPastLastEvent()).
		Next("up").WhereIter(func(r Reading, ctx *cep.Context[Reading]) bool { return r.Temp > last(ctx).Temp }).
		OneOrMore().Consecutive().
		Next("end").WhereIter(func(r Reading, ctx *cep.Context[Reading]) bool {
		return r.Temp > last(ctx).Temp && r.TS.Sub(ctx.EventsForPattern("first")[0].TS) >= 30*time.Second
	}).Within(time.Minute)

	job := weir.NewJob("temperature")
	src := weir.FromSource(job, "readings", weir.SliceSource(readings),
		weir.BoundedOutOfOrderness(time.Second, func(r Reading) time.Time { return r.TS }))
	alerts := cep.Detect(weir.KeyBy(src, func(r Reading) string { return r.Sensor }), rose,
		func(sensor string, m cep.Match[Reading]) string {
			first, end := m["first"][0], m["end"][0]
			return fmt.Sprintf("%s rose from %.1f to %.1f in %v", sensor, first.Temp, end.Temp, end.TS.Sub(first.TS))
		})
	out := weir.Collect(alerts)
	if err := job.Run(context.Background()); err != nil {
		panic(err)
	}
	for _, a := range out.Items() {
		fmt.Println(a)
	}
	// Output:
	// s1 rose from 20.0 to 21.4 in 30s
}
