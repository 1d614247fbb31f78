package weir_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/weirstream/weir"
)

// FlatMapWith calls its factory once per subtask, and each subtask's
// function keeps its own state (here a counter no other subtask touches).
func TestFlatMapWithOneFunctionPerSubtask(t *testing.T) {
	job := weir.NewJob("flatmapwith", weir.Parallelism(2), weir.BatchSize(3))
	in := make([]int, 100)
	for i := range in {
		in[i] = i
	}
	var made atomic.Int32
	s := weir.FlatMapWith(weir.Rebalance(weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[int]())), func() func(int, func(int)) {
		made.Add(1)
		seen := 0 // this subtask's own
		return func(v int, emit func(int)) {
			seen++
			if seen > 0 {
				emit(v * 2)
			}
		}
	})
	var mu sync.Mutex
	var got []int
	weir.To(s, weir.SinkFunc[int](func(_ context.Context, vs []int) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, vs...)
		return nil
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := made.Load(); n != 2 {
		t.Fatalf("factory called %d times, want once per subtask (2)", n)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != 2*i {
			t.Fatalf("got %v", got)
		}
	}
	if len(got) != len(in) {
		t.Fatalf("%d records, want %d", len(got), len(in))
	}
	if job.BatchSize() != 3 {
		t.Fatalf("BatchSize() = %d, want 3", job.BatchSize())
	}
}

// FlatMapFlushWith's flush runs after each input batch: a function that
// sums a batch's records and emits the sum there gives one record per
// batch (at most), and the sums add up to the input's.
func TestFlatMapFlushWithPerBatch(t *testing.T) {
	job := weir.NewJob("flatmapflush", weir.Parallelism(1), weir.BatchSize(10))
	in := make([]int, 1000)
	for i := range in {
		in[i] = i + 1
	}
	s := weir.FlatMapFlushWith(weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[int]()),
		func() (func(int, func(int)), func(func(int))) {
			sum := 0
			return func(v int, _ func(int)) { sum += v }, func(emit func(int)) {
				if sum != 0 {
					emit(sum)
				}
				sum = 0
			}
		})
	var mu sync.Mutex
	var got []int
	weir.To(s, weir.SinkFunc[int](func(_ context.Context, vs []int) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, vs...)
		return nil
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, v := range got {
		total += v
	}
	if total != 1000*1001/2 {
		t.Fatalf("sums add up to %d, want %d", total, 1000*1001/2)
	}
	if len(got) > 100 || len(got) == 0 {
		t.Fatalf("%d sums for 1000 records in batches of at most 10: want one per batch (at most 100)", len(got))
	}
}
