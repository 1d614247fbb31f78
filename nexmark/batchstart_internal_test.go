package nexmark

import (
	"context"
	"testing"

	"github.com/weirstream/weir"
)

// batchCounter counts the batches and rows it is given.
type batchCounter struct{ batches, rows int }

func (c *batchCounter) StartBatch()       { c.batches++ }
func (c *batchCounter) Write(r Row) error { c.rows++; return nil }
func (c *batchCounter) Close() error      { return nil }

// The sink writers tell a BatchStarter once per batch, before its rows,
// for append-only and for updating queries.
func TestSinkWritersStartBatches(t *testing.T) {
	c := &batchCounter{}
	rw := newRowWriter[Q8Row, *Q8Row](c)
	for _, n := range []int{3, 1} {
		if err := rw.Write(context.Background(), make([]Q8Row, n)); err != nil {
			t.Fatal(err)
		}
	}
	if c.batches != 2 || c.rows != 4 {
		t.Fatalf("rows: %d batches, %d rows; want 2 and 4", c.batches, c.rows)
	}
	c = &batchCounter{}
	cw := newChangeWriter[Q4Row, *Q4Row](c)
	if err := cw.Write(context.Background(), make([]weir.Change[Q4Row], 5)); err != nil {
		t.Fatal(err)
	}
	if c.batches != 1 || c.rows != 5 {
		t.Fatalf("changes: %d batches, %d rows; want 1 and 5", c.batches, c.rows)
	}
}
