// Package pq is a typed 4-ary min-heap for timers: no interface boxing, so
// pushing a timer does not allocate (container/heap's Push(any) does for
// non-pointer values).
package pq

// Item orders itself against another item of its type.
type Item[T any] interface {
	Less(other T) bool
}

// Heap is a min-heap. The zero value is empty and ready to use.
//
// It is 4-ary, and items move into a hole rather than by swaps: a heap of
// hundreds of thousands of timers (Nexmark q11: one per open session and
// subtask) is larger than the caches, and a 4-ary heap is half as deep,
// its four children of a node on one or two cache lines
// (BenchmarkHeapLarge). The order items pop in does not depend on the
// arity: every user orders its timers totally (a sequence number last).
type Heap[T Item[T]] struct {
	items []T
}

// Len is the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Peek returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Peek() T { return h.items[0] }

// Push adds an item.
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	items := h.items
	i := len(items) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !x.Less(items[p]) {
			break
		}
		items[i] = items[p]
		i = p
	}
	items[i] = x
}

// Pop removes and returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Pop() T {
	items := h.items
	top := items[0]
	n := len(items) - 1
	x := items[n]
	var zero T
	items[n] = zero
	items = items[:n]
	h.items = items
	if n == 0 {
		return top
	}
	i := 0
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		for j := c + 1; j < min(c+4, n); j++ {
			if items[j].Less(items[m]) {
				m = j
			}
		}
		if !items[m].Less(x) {
			break
		}
		items[i] = items[m]
		i = m
	}
	items[i] = x
	return top
}

// All returns the items in heap order (not sorted), for snapshots.
func (h *Heap[T]) All() []T { return h.items }
