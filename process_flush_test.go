package weir_test

import (
	"context"
	"sync"
	"testing"

	"github.com/weirstream/weir"
)

// manyOut emits 25 records per element and 30 more at the end of each
// input batch.
type manyOut struct{}

func (manyOut) ProcessElement(ctx *weir.KeyedContext[int, int], v int) error {
	for i := range 25 {
		ctx.Emit(v*1000 + i)
	}
	return nil
}

func (manyOut) EndBatch(ctx *weir.KeyedContext[int, int]) error {
	for i := range 30 {
		ctx.Emit(-1 - i)
	}
	return nil
}

// TestProcessSendsFullBatches: a Process function that emits more than a
// batch in one call (an element, a batch's end) sends each full batch on
// during the call, so that a chained consumer never gets more than a
// batch at once (SQL's operators that lend their rows from a ring of two
// batches count on it), and nothing is lost or repeated.
func TestProcessSendsFullBatches(t *testing.T) {
	const size = 8
	job := weir.NewJob("process-full-batches", weir.Parallelism(1), weir.BatchSize(size))
	in := make([]int, 100)
	for i := range in {
		in[i] = i + 1
	}
	s := weir.ProcessWith(weir.KeyBy(weir.FromSource(job, "in", weir.SliceSource(in), weir.NoWatermarks[int]()), func(v int) int { return v % 7 }),
		func() weir.KeyedProcessFunction[int, int, int] { return manyOut{} })
	var mu sync.Mutex
	var got, largest, batches int
	seen := map[int]bool{}
	weir.To(s, weir.SinkFunc[int](func(_ context.Context, vs []int) error {
		mu.Lock()
		defer mu.Unlock()
		batches++
		largest = max(largest, len(vs))
		for _, v := range vs {
			if v > 0 {
				if seen[v] {
					t.Errorf("record %d twice", v)
				}
				seen[v] = true
			}
			got++
		}
		return nil
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if largest > size {
		t.Errorf("a write of %d records from a Process with batches of %d", largest, size)
	}
	if len(seen) != 100*25 {
		t.Errorf("%d distinct element records, want %d", len(seen), 100*25)
	}
	if got < 100*25+30 || batches < got/size {
		t.Errorf("%d records in %d writes", got, batches)
	}
}
