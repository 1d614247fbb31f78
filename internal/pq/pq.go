// Package pq is a typed binary min-heap for timers: no interface boxing, so
// pushing a timer does not allocate (container/heap's Push(any) does for
// non-pointer values).
package pq

// Item orders itself against another item of its type.
type Item[T any] interface {
	Less(other T) bool
}

// Heap is a min-heap. The zero value is empty and ready to use.
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
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.items[i].Less(h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

// Pop removes and returns the smallest item; the heap must not be empty.
func (h *Heap[T]) Pop() T {
	top := h.items[0]
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	var zero T
	h.items[n] = zero
	h.items = h.items[:n]
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.items[r].Less(h.items[l]) {
			m = r
		}
		if !h.items[m].Less(h.items[i]) {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

// All returns the items in heap order (not sorted), for snapshots.
func (h *Heap[T]) All() []T { return h.items }
