package nexmark

import (
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// The local maximum passes every count tied at or above the largest so far
// of its window, drops the others, and starts over on another window (also
// on a window it saw before: it only keeps the last one).
func TestQ5LocalMaxFilter(t *testing.T) {
	keep := q5LocalMax()
	type in struct{ end, auction, num int64 }
	input := []in{
		{10, 1, 3}, {10, 2, 1}, {10, 3, 3}, {10, 4, 5}, {10, 5, 2}, {10, 6, 5}, {10, 7, 4}, {10, 8, 5},
		{12, 1, 1}, {12, 2, 1}, {12, 3, 0},
		{10, 9, 1}, {10, 10, 1},
	}
	var got []int64
	for _, c := range input {
		r := weir.WindowResult[int64, int64]{Key: c.auction, Start: time.UnixMilli(c.end - 10), End: time.UnixMilli(c.end), Value: c.num}
		if keep(r, c.end-1, c.end-2) {
			got = append(got, c.auction)
		}
	}
	want := []int64{1, 3, 4, 6, 8, 1, 2, 9, 10}
	if !slices.Equal(got, want) {
		t.Fatalf("passed auctions %v, want %v", got, want)
	}
}
