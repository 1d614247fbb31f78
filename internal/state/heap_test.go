package state

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
)

type fakeClock struct{ ms int64 }

func (c *fakeClock) now() int64 { return c.ms }

func newTestHeap(t testing.TB, clk *fakeClock) *Heap {
	h, err := NewHeap(Config{MaxParallelism: 128, KeyGroups: KeyGroupRange{0, 128}, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func testKeys(n int) ([]string, []uint64) {
	hash, _ := keygroup.Hasher[string]()
	ks := make([]string, n)
	hs := make([]uint64, n)
	for i := range ks {
		ks[i] = fmt.Sprint("k", i)
		hs[i] = hash(ks[i])
	}
	return ks, hs
}

// Expired entries of keys that are never accessed again go away through the
// incremental cleanup driven by accesses to other keys.
func TestIncrementalCleanup(t *testing.T) {
	clk := &fakeClock{}
	h := newTestHeap(t, clk)
	ks, hs := testKeys(1001)
	v, _ := NewValueStore[string, VoidNamespace, int](h, "v", Options{TTL: time.Second})
	l, _ := NewListStore[string, VoidNamespace, int](h, "l", Options{TTL: time.Second})
	m, _ := NewMapStore[string, VoidNamespace, int, int](h, "m", Options{TTL: time.Second})
	for i := range 1000 {
		v.Put(hs[i], ks[i], VoidNamespace{}, i)
		l.Add(hs[i], ks[i], VoidNamespace{}, i)
		m.Put(hs[i], ks[i], VoidNamespace{}, i, i)
	}
	lens := func() [3]int {
		return [3]int{v.(*heapValue[string, VoidNamespace, int]).len(), l.(*heapList[string, VoidNamespace, int]).len(), m.(*heapMap[string, VoidNamespace, int, int]).len()}
	}
	clk.ms = 2000
	// The last key is live and accessed; the others all expired.
	last, lh := ks[1000], hs[1000]
	for range 2000 {
		v.Put(lh, last, VoidNamespace{}, 1)
		l.Update(lh, last, VoidNamespace{}, []int{1})
		m.Put(lh, last, VoidNamespace{}, 1, 1)
	}
	if got := lens(); got != [3]int{1, 1, 1} {
		t.Fatalf("entries left after cleanup: %v, want only the live key's", got)
	}
}

// Value, reducing and aggregating accesses do not allocate, with and
// without TTL.
func TestHeapNoAllocs(t *testing.T) {
	clk := &fakeClock{}
	h := newTestHeap(t, clk)
	ks, hs := testKeys(1000)
	for _, o := range []Options{{}, {TTL: time.Hour, TTLUpdateOnRead: true}} {
		name := fmt.Sprint(o.TTL)
		v, _ := NewValueStore[string, VoidNamespace, int](h, "v"+name, o)
		r, _ := NewReducingStore[string, VoidNamespace, int](h, "r"+name, func(a, b int) int { return a + b }, o)
		a, _ := NewAggregatingStore[string, VoidNamespace, int, int, int](h, "a"+name, sumInts{}, o)
		w, _ := NewValueStore[string, int64, int](h, "w"+name, o)
		q, _ := NewTimerQueue[string, VoidNamespace](h, "t"+name)
		i := 0
		step := func() {
			k, hh := ks[i%len(ks)], hs[i%len(ks)]
			x, _ := v.Get(hh, k, VoidNamespace{})
			v.Put(hh, k, VoidNamespace{}, x+1)
			r.Add(hh, k, VoidNamespace{}, 1)
			r.Get(hh, k, VoidNamespace{})
			a.Add(hh, k, VoidNamespace{}, 1)
			a.Get(hh, k, VoidNamespace{})
			w.Put(hh, k, int64(i%3), i)
			w.Get(hh, k, int64(i%3))
			q.Register(hh, k, VoidNamespace{}, int64(i%7))
			if i%2 == 0 {
				q.Pop()
			} else {
				q.Delete(hh, k, VoidNamespace{}, int64(i%7))
			}
			i++
		}
		for range 5000 { // grow the tables and the timer slab first
			step()
		}
		if n := testing.AllocsPerRun(1000, step); n != 0 {
			t.Errorf("TTL %v: %v allocations per access round, want 0", o.TTL, n)
		}
	}
}

type sumInts struct{}

func (sumInts) Create() int      { return 0 }
func (sumInts) Add(a, b int) int { return a + b }
func (sumInts) Result(a int) int { return a }

// The timer heap keeps its positions consistent under random operations.
func TestTimerHeapInvariant(t *testing.T) {
	h := newTestHeap(t, &fakeClock{})
	qq, _ := NewTimerQueue[string, VoidNamespace](h, "t")
	q := qq.(*heapTimers[string, VoidNamespace])
	ks, hs := testKeys(30)
	r := rand.New(rand.NewPCG(1, 1))
	for step := range 20000 {
		i := r.IntN(len(ks))
		ts := int64(r.IntN(50))
		switch r.IntN(3) {
		case 0:
			q.Register(hs[i], ks[i], VoidNamespace{}, ts)
		case 1:
			q.Delete(hs[i], ks[i], VoidNamespace{}, ts)
		case 2:
			q.Pop()
		}
		for p, n := range q.heap {
			if int(q.nodes[n].pos) != p {
				t.Fatalf("step %d: node %d at %d records pos %d", step, n, p, q.nodes[n].pos)
			}
			if p > 0 && q.less(n, q.heap[(p-1)/2]) {
				t.Fatalf("step %d: heap order broken at %d", step, p)
			}
		}
		if len(q.heap)+len(q.free) != len(q.nodes) {
			t.Fatalf("step %d: %d in heap + %d free != %d nodes", step, len(q.heap), len(q.free), len(q.nodes))
		}
	}
}

func BenchmarkHeapValuePut(b *testing.B) {
	h := newTestHeap(b, &fakeClock{})
	ks, hs := testKeys(8192)
	s, _ := NewValueStore[string, VoidNamespace, int64](h, "v", Options{})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		j := i & 8191
		v, _ := s.Get(hs[j], ks[j], VoidNamespace{})
		s.Put(hs[j], ks[j], VoidNamespace{}, v+1)
	}
}
