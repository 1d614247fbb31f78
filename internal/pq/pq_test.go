package pq

import (
	"math/rand/v2"
	"sort"
	"testing"
)

type num int

func (a num) Less(b num) bool { return a < b }

func TestHeapSorts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var h Heap[num]
	var model []int
	for step := 0; step < 5000; step++ {
		if r.IntN(3) > 0 || h.Len() == 0 {
			x := r.IntN(100)
			h.Push(num(x))
			model = append(model, x)
			continue
		}
		sort.Ints(model)
		if got := h.Pop(); int(got) != model[0] {
			t.Fatalf("step %d: popped %d, want %d", step, got, model[0])
		}
		model = model[1:]
	}
	if h.Len() != len(model) {
		t.Fatalf("len %d, want %d", h.Len(), len(model))
	}
}

func TestPushDoesNotAllocate(t *testing.T) {
	var h Heap[num]
	for i := 0; i < 1024; i++ {
		h.Push(num(i))
	}
	for h.Len() > 0 {
		h.Pop()
	}
	if a := testing.AllocsPerRun(100, func() { h.Push(3); h.Pop() }); a != 0 {
		t.Fatalf("%v allocations per push+pop", a)
	}
}

// timer is the size of the general window's heap entries (32 bytes).
type timer struct {
	at, seq int64
	kind    uint8
	p       *int
}

func (a timer) Less(b timer) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

// BenchmarkHeapLarge pops the smallest of 400 K timers and pushes one
// later, as a session window's timers move (Nexmark q11's heap per
// subtask): ns per pop and push.
func BenchmarkHeapLarge(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var h Heap[timer]
	var seq int64
	for range 400_000 {
		seq++
		h.Push(timer{at: r.Int64N(10_000_000), seq: seq})
	}
	for b.Loop() {
		t := h.Pop()
		seq++
		h.Push(timer{at: t.at + r.Int64N(10_000_000), seq: seq})
	}
}
