package hashtable

import "testing"

var walkSink uint64

// BenchmarkAllPrefetch walks a table larger than the caches (600,000
// entries of 64-byte slots, like a window of q8 on one subtask) reading
// each value, with All and with AllPrefetch. ns/key is the walk per full
// slot. At load factor 1/2 (a quarter full) the prefetch halved the walk,
// 33 -> 17 ns/key; at 3/4 (57% full) the hardware follows the walk alone
// and the walk by itself gains nothing (8.4-8.7 against 9.8-10.5 ns/key),
// while a firing, with more work a key, still does (BenchmarkAlignedFireRows
// 39-47 ms with All, 35-39 with AllPrefetch).
func BenchmarkAllPrefetch(b *testing.B) {
	const keys = 600_000
	tab := New[uint64, [6]uint64](0)
	for k := uint64(0); k < keys; k++ {
		p, _ := tab.Upsert(mix64(k), k)
		p[5] = k
	}
	read := func(_ uint64, k uint64, v *[6]uint64) bool {
		walkSink += v[0] + v[5]
		return true
	}
	b.Run("all", func(b *testing.B) {
		for range b.N {
			tab.All(read)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
	})
	b.Run("prefetch", func(b *testing.B) {
		for range b.N {
			tab.AllPrefetch(read)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/keys, "ns/key")
	})
}
