package state

import "unsafe"

// Usage is what a backend's state takes: its keys and an estimate of its
// bytes on the heap.
//
// Bytes is, per store, the hash tables' arrays exactly (slots × slot size
// + control bytes, Table.Bytes) plus what the entries point to, estimated
// from a sample of usageSample entries a table: a string key's or value's
// bytes, a value's HeapBytes when it implements HeapSizer, a list's
// element array and a map's own table. Keys is the entries of the store
// that has the most (the stores of one operator mostly share their keys);
// timers add bytes, not keys. Memory a value reaches through pointers it
// does not account for in HeapBytes is not counted.
type Usage struct {
	Keys  int64
	Bytes int64
}

// HeapSizer is implemented by state values (and keys) that hold heap
// memory beyond their own bytes in a table's slot.
type HeapSizer interface {
	HeapBytes() int
}

// UsageReporter is implemented by backends that can say what their state
// takes (the heap; a serializing backend keeps its state off the heap).
type UsageReporter interface {
	Usage() Usage
}

// usager is a heap store that can estimate its usage.
type usager interface {
	usage() Usage
}

// Usage implements UsageReporter. It walks every table's arrays' sizes
// and a few entries of each: cheap enough for an operator to call every
// few thousand records.
func (h *Heap) Usage() Usage {
	var u Usage
	for _, s := range h.stores {
		su, ok := s.(usager)
		if !ok {
			continue
		}
		x := su.usage()
		u.Bytes += x.Bytes
		u.Keys = max(u.Keys, x.Keys)
	}
	return u
}

// usageSample is how many entries of a table the estimate of what they
// point to reads.
const usageSample = 16

// tableUsage adds a table's entries, its arrays and the estimated bytes
// its entries point to (per entry: extra) to u.
func tableUsage[K comparable, V any](u *Usage, t *table[K, V], extra func(k K, v *V) int) {
	n := t.Len()
	if n == 0 {
		u.Bytes += int64(t.Bytes())
		return
	}
	u.Keys += int64(n)
	u.Bytes += int64(t.Bytes())
	seen, sum := 0, 0
	t.All(func(_ uint64, k K, v *V) bool {
		sum += extra(k, v)
		seen++
		return seen < usageSample
	})
	if seen > 0 {
		u.Bytes += int64(sum) * int64(n) / int64(seen)
	}
}

// heapBytes is what x points to: a string's bytes, a HeapSizer's
// HeapBytes, else nothing.
func heapBytes(x any) int {
	switch v := x.(type) {
	case string:
		return AllocSize(len(v))
	case HeapSizer:
		return v.HeapBytes()
	}
	return 0
}

// AllocSize is the size of the allocation Go's allocator makes for n
// bytes: n rounded up to its size class (small objects), or to a page.
func AllocSize(n int) int {
	if n <= 0 {
		return 0
	}
	for _, c := range sizeClasses {
		if n <= c {
			return c
		}
	}
	const page = 8192
	return (n + page - 1) / page * page
}

// sizeClasses are Go's small-object size classes up to 32 KiB
// (runtime/sizeclasses.go).
var sizeClasses = [...]int{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728, 10240,
	10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

func (s *heapValue[K, N, V]) usage() Usage {
	var u Usage
	extra := func(k nsKey[N, K], v *V) int { return heapBytes(k.key) + heapBytes(*v) }
	for i := range s.plain.tabs {
		tableUsage(&u, &s.plain.tabs[i], extra)
	}
	for i := range s.g.tabs {
		tableUsage(&u, &s.g.tabs[i], func(k nsKey[N, K], v *ttlVal[V]) int { return heapBytes(k.key) + heapBytes(v.v) })
	}
	return u
}

func (s *heapList[K, N, E]) usage() Usage {
	var u Usage
	var e E
	esize := int(unsafe.Sizeof(e))
	for i := range s.g.tabs {
		tableUsage(&u, &s.g.tabs[i], func(k nsKey[N, K], l *listVal[E]) int {
			n := heapBytes(k.key) + AllocSize(cap(l.vals)*esize) + AllocSize(cap(l.exps)*8)
			for _, x := range l.vals {
				n += heapBytes(x)
			}
			return n
		})
	}
	return u
}

func (s *heapMap[K, N, MK, MV]) usage() Usage {
	var u Usage
	for i := range s.g.tabs {
		tableUsage(&u, &s.g.tabs[i], func(k nsKey[N, K], m **mapTable[MK, MV]) int {
			n := heapBytes(k.key) + (*m).Bytes()
			if (*m).Len() <= usageSample {
				(*m).All(func(_ uint64, mk MK, v *ttlVal[MV]) bool {
					n += heapBytes(mk) + heapBytes(v.v)
					return true
				})
			}
			return n
		})
	}
	return u
}

// usage of timers: bytes only (a timer's key is a key of the other
// stores).
func (q *heapTimers[K, N]) usage() Usage {
	var u Usage
	for i := range q.g.tabs {
		tableUsage(&u, &q.g.tabs[i], func(k timerKey[N, K], _ *int32) int { return heapBytes(k.key) })
	}
	var node timerNode[K, N]
	u.Bytes += int64(cap(q.nodes))*int64(unsafe.Sizeof(node)) + int64(cap(q.free)+cap(q.heap))*4
	return Usage{Bytes: u.Bytes}
}
