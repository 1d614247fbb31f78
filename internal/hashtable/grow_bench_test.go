package hashtable

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkFill fills an empty table with n keys, as a keyed window's
// table fills while its keys only grow (Nexmark q5's auctions, q11's
// session keys). It reports the whole fill (ns/key), and the slowest
// single Upsert of the fill (max-ns): with a doubling that moves every
// entry at once, that insert paid for moving the whole table. Values are
// pointers, like the general window operator's per-key state, or plain
// counts, like q5's window tables; a pointerful table's doubling also
// allocates arrays the garbage collector scans, which a GC cycle running
// then charges to the allocating goroutine.
func BenchmarkFill(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 20} {
		b.Run(fmt.Sprintf("ptr/%d", n), func(b *testing.B) {
			vals := make([]int, n)
			fill(b, n, func(tb *Table[int64, *int], i int) {
				p, _ := tb.Upsert(mix64(uint64(i)), int64(i))
				*p = &vals[i]
			})
		})
		b.Run(fmt.Sprintf("plain/%d", n), func(b *testing.B) {
			fill(b, n, func(tb *Table[int64, int64], i int) {
				p, _ := tb.Upsert(mix64(uint64(i)), int64(i))
				*p = int64(i)
			})
		})
	}
}

func fill[V any](b *testing.B, n int, upsert func(*Table[int64, V], int)) {
	var worst time.Duration
	for b.Loop() {
		var tb Table[int64, V]
		last := time.Now()
		for i := range n {
			upsert(&tb, i)
			now := time.Now()
			worst = max(worst, now.Sub(last))
			last = now
		}
	}
	b.ReportMetric(float64(worst.Nanoseconds()), "max-ns")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
}
