package weir_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

func TestStatelessOperatorsAndEdges(t *testing.T) {
	var in []int
	for i := 0; i < 5000; i++ {
		in = append(in, i)
	}
	job := weir.NewJob("ops", weir.Parallelism(2), weir.BatchSize(64))
	src := weir.FromSource(job, "ints", weir.SliceSource(in), weir.NoWatermarks[int]())
	even := weir.Filter(src, func(i int) bool { return i%2 == 0 })
	twice := weir.FlatMap(even, func(i int, emit func(int)) { emit(i); emit(-i) })
	spread := weir.Rebalance(twice, weir.Parallelism(3))
	strs := weir.Map(spread, func(i int) string { return fmt.Sprint(i) })
	all := weir.Collect(strs)
	bc := weir.Collect(weir.Broadcast(weir.Filter(src, func(i int) bool { return i < 10 }), weir.Parallelism(3)))
	other := weir.FromSource(job, "more", weir.SliceSource([]int{-1, -2, -3}), weir.NoWatermarks[int]())
	un := weir.Collect(weir.Union(weir.Filter(src, func(i int) bool { return i < 3 }), other))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(all.Items()); got != 5000 {
		t.Fatalf("filter+flatmap+rebalance: %d records, want 5000", got)
	}
	seen := map[string]bool{}
	for _, s := range all.Items() {
		if seen[s] && s != "0" {
			t.Fatalf("%s twice", s)
		}
		seen[s] = true
	}
	if !seen["4998"] || !seen["-4998"] || seen["1"] {
		t.Fatal("wrong records after filter and flatmap")
	}
	if got := len(bc.Items()); got != 30 {
		t.Fatalf("broadcast to 3 subtasks: %d records, want 30", got)
	}
	u := un.Items()
	sort.Ints(u)
	if fmt.Sprint(u) != "[-3 -2 -1 0 1 2]" {
		t.Fatalf("union: %v", u)
	}
}

type sale struct {
	Shop  string
	Price int64
	TS    int64
}

func TestReadyAggregatesAgainstBatch(t *testing.T) {
	var sales []sale
	r := newRand(4)
	for i := 0; i < 3000; i++ {
		sales = append(sales, sale{Shop: fmt.Sprintf("s%d", r.IntN(5)), Price: r.Int64N(1000), TS: int64(i) * 7})
	}
	type agg struct{ sum, min, max, n int64 }
	want := map[string]*agg{}
	for _, s := range sales {
		k := fmt.Sprintf("%s@%d", s.Shop, s.TS/1000*1000)
		a := want[k]
		if a == nil {
			a = &agg{min: 1 << 62, max: -1}
			want[k] = a
		}
		a.sum += s.Price
		a.n++
		a.min, a.max = min(a.min, s.Price), max(a.max, s.Price)
	}
	job := weir.NewJob("aggs", weir.Parallelism(2))
	src := weir.FromSource(job, "sales", weir.SliceSource(sales),
		weir.MonotonousTimestamps(func(s sale) time.Time { return time.UnixMilli(s.TS) }))
	ws := weir.Window(weir.KeyBy(src, func(s sale) string { return s.Shop }), weir.Tumbling(time.Second))
	price := func(s sale) int64 { return s.Price }
	sums := weir.Collect(weir.Aggregate(ws, weir.Sum(price)))
	mins := weir.Collect(weir.Aggregate(ws, weir.Min(price)))
	maxs := weir.Collect(weir.Aggregate(ws, weir.Max(price)))
	avgs := weir.Collect(weir.Aggregate(ws, weir.Avg(price)))
	reds := weir.Collect(weir.Reduce(ws, func(a, b sale) sale { a.Price += b.Price; return a }))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	key := func(k string, start time.Time) string { return fmt.Sprintf("%s@%d", k, start.UnixMilli()) }
	for _, r := range sums.Items() {
		if want[key(r.Key, r.Start)].sum != r.Value {
			t.Fatalf("sum %s = %d, want %d", key(r.Key, r.Start), r.Value, want[key(r.Key, r.Start)].sum)
		}
	}
	for _, r := range mins.Items() {
		if want[key(r.Key, r.Start)].min != r.Value {
			t.Fatalf("min %s = %d", key(r.Key, r.Start), r.Value)
		}
	}
	for _, r := range maxs.Items() {
		if want[key(r.Key, r.Start)].max != r.Value {
			t.Fatalf("max %s = %d", key(r.Key, r.Start), r.Value)
		}
	}
	for _, r := range avgs.Items() {
		a := want[key(r.Key, r.Start)]
		if d := r.Value - float64(a.sum)/float64(a.n); d > 1e-9 || d < -1e-9 {
			t.Fatalf("avg %s = %v", key(r.Key, r.Start), r.Value)
		}
	}
	for _, r := range reds.Items() {
		if want[key(r.Key, r.Start)].sum != r.Value.Price {
			t.Fatalf("reduce %s = %d", key(r.Key, r.Start), r.Value.Price)
		}
	}
	if n := len(sums.Items()); n != len(want) || len(avgs.Items()) != n || len(reds.Items()) != n || len(mins.Items()) != n || len(maxs.Items()) != n {
		t.Fatalf("result counts differ from the %d windows", len(want))
	}
}
