package engine

import (
	"testing"

	"github.com/weirstream/weir/internal/hashtable"
)

// freeTable hands out the free table that fits best (a delta the
// smallest, a new window one that holds the last window's keys, the
// largest sized up when none does), and putFree keeps at most one free
// table per open bucket and one more, letting the smallest go.
func TestAlignedFreeTables(t *testing.T) {
	op, _ := newTestAlignedOp(false)
	sized := func(slots int) *hashtable.Table[int64, int64] {
		tb := hashtable.New[int64, int64](hashtable.Holds(slots))
		if tb.Cap() != slots {
			t.Fatalf("New(Holds(%d)) has %d slots", slots, tb.Cap())
		}
		return tb
	}
	for range 3 {
		op.bucket(int64(len(op.buckets))*2000, int64(len(op.buckets))*2000+10000, 0)
	}
	t1k, t4k, t16k := sized(1024), sized(4096), sized(16384)
	op.free = nil
	for _, tb := range []*hashtable.Table[int64, int64]{t4k, t16k, t1k} {
		op.putFree(tb)
	}
	if got := op.freeTable(0); got != t1k {
		t.Fatalf("a delta got a table of %d slots, want the smallest (1024)", got.Cap())
	}
	op.putFree(t1k)
	if got := op.freeTable(2000); got != t4k {
		t.Fatalf("2000 entries got a table of %d slots, want the best fit (4096)", got.Cap())
	}
	op.putFree(t4k)
	if got := op.freeTable(50_000); got != t16k || !got.Fits(50_000) || got.Cap() != 131072 {
		t.Fatalf("50,000 entries got a table of %d slots, want the largest, sized to 131072", got.Cap())
	}
	// Three buckets: at most four free tables; a fifth lets the smallest go.
	op.free = nil
	small := sized(16)
	for _, tb := range []*hashtable.Table[int64, int64]{sized(1024), small, sized(2048), sized(4096)} {
		op.putFree(tb)
	}
	op.putFree(sized(8192))
	if len(op.free) != 4 {
		t.Fatalf("%d free tables with 3 buckets, want 4", len(op.free))
	}
	for _, tb := range op.free {
		if tb == small {
			t.Fatal("the smallest table was kept, a larger one let go")
		}
	}
}
