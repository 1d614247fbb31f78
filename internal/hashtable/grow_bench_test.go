package hashtable

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkFill fills an empty table with n keys, as a keyed window's
// table fills while its keys only grow (Nexmark q11's session keys). It
// reports the whole fill (ns/op), and the slowest single Upsert of the
// fill (max-ns): with a grow that moves every entry at once, that insert
// pays for moving the whole table. Values are pointers, like the window
// operators' per-key state.
func BenchmarkFill(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 20} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			vals := make([]int, n)
			var worst time.Duration
			for b.Loop() {
				var tb Table[int64, *int]
				last := time.Now()
				for i := range n {
					k := int64(i)
					p, _ := tb.Upsert(mix64(uint64(k)), k)
					*p = &vals[i]
					now := time.Now()
					worst = max(worst, now.Sub(last))
					last = now
				}
			}
			b.ReportMetric(float64(worst.Nanoseconds()), "max-ns")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
