package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/keygroup"
	"github.com/weirstream/weir/internal/state"
)

// stateBench is a RuntimeContext over a heap backend with the key switched
// by hand, as the process operator does per record.
type stateBench struct {
	rc     *RuntimeContext[string]
	cur    *currentKey[string]
	keys   []string
	hashes []uint64
	clock  int64
}

func newStateBench(tb testing.TB, nkeys int) *stateBench {
	sb := &stateBench{cur: &currentKey[string]{}}
	be, err := state.NewHeap(state.Config{MaxParallelism: 128, KeyGroups: state.KeyGroupRange{Start: 0, End: 128},
		Now: func() int64 { return sb.clock }})
	if err != nil {
		tb.Fatal(err)
	}
	sb.rc = &RuntimeContext[string]{keys: sb.cur, backend: be}
	hash, _ := keygroup.Hasher[string]()
	for i := range nkeys {
		k := fmt.Sprint("user-", i)
		sb.keys = append(sb.keys, k)
		sb.hashes = append(sb.hashes, hash(k))
	}
	return sb
}

func (sb *stateBench) key(i int) {
	j := i % len(sb.keys)
	sb.cur.key, sb.cur.hash = sb.keys[j], sb.hashes[j]
}

// The handles of value, reducing and aggregating state do not allocate per
// access, with or without TTL.
func TestStateHandlesDoNotAllocate(t *testing.T) {
	for _, opts := range [][]StateOption{nil, {TTL(time.Hour), TTLUpdateOnRead()}} {
		sb := newStateBench(t, 1000)
		v := NewValueState[int64](sb.rc, "v", opts...)
		r := NewReducingState(sb.rc, "r", func(a, b int64) int64 { return a + b }, opts...)
		a := NewAggregatingState(sb.rc, "a", Avg(func(x int64) int64 { return x }), opts...)
		if sb.rc.err != nil {
			t.Fatal(sb.rc.err)
		}
		i := 0
		step := func() {
			sb.key(i)
			n, _ := v.Value()
			v.Update(n + 1)
			r.Add(n)
			r.Get()
			a.Add(n)
			a.Get()
			if i%5 == 0 {
				v.Clear()
			}
			i++
		}
		for range 3000 {
			step()
		}
		if n := testing.AllocsPerRun(1000, step); n != 0 {
			t.Errorf("options %v: %v allocations per access round, want 0", opts, n)
		}
	}
}

func TestListAndMapStateHandles(t *testing.T) {
	sb := newStateBench(t, 2)
	l := NewListState[string](sb.rc, "l")
	m := NewMapState[string, int](sb.rc, "m")
	sb.key(0)
	l.AddAll([]string{"a", "b"})
	got := l.Get()
	got[0] = "changed" // a copy
	if g := l.Get(); !slices.Equal(g, []string{"a", "b"}) {
		t.Fatalf("Get returned the stored list: %v", g)
	}
	var seen []string
	for e := range l.All() {
		l.Add("c") // does not change what All yields
		seen = append(seen, e)
	}
	if !slices.Equal(seen, []string{"a", "b"}) || len(l.Get()) != 4 {
		t.Fatalf("All yielded %v, list %v", seen, l.Get())
	}
	m.Put("x", 1)
	sb.key(1)
	if m.Len() != 0 || l.Get() != nil {
		t.Fatal("state of key 0 seen under key 1")
	}
	sb.key(0)
	if v, ok := m.Get("x"); !ok || v != 1 {
		t.Fatalf("Get(x) = %v, %v", v, ok)
	}
	if s := fmt.Sprint(TTL(time.Second), TTLUpdateOnRead()); s != "TTL(1s) TTLUpdateOnRead" {
		t.Errorf("options print as %q", s)
	}
	if ProcessingTime.String() != "ProcessingTime" || EventTime.String() != "EventTime" {
		t.Error("TimeDomain names")
	}
}

// BenchmarkValueStateUpdate is the hot path of a keyed counter: read and
// update a ValueState for the record's key, 10,000 keys.
func BenchmarkValueStateUpdate(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts []StateOption
	}{{"plain", nil}, {"TTL", []StateOption{TTL(time.Hour)}}} {
		b.Run(bc.name, func(b *testing.B) {
			sb := newStateBench(b, 10000)
			s := NewValueState[int64](sb.rc, "count", bc.opts...)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				sb.key(i)
				n, _ := s.Value()
				s.Update(n + 1)
			}
		})
	}
}

func BenchmarkReducingStateAdd(b *testing.B) {
	sb := newStateBench(b, 10000)
	s := NewReducingState(sb.rc, "sum", func(a, b int64) int64 { return a + b })
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sb.key(i)
		s.Add(int64(i))
	}
}

func BenchmarkAggregatingStateAdd(b *testing.B) {
	sb := newStateBench(b, 10000)
	s := NewAggregatingState(sb.rc, "avg", Avg(func(x int64) int64 { return x }))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sb.key(i)
		s.Add(int64(i))
	}
}

func BenchmarkEventTimeTimerRegister(b *testing.B) {
	sb := newStateBench(b, 10000)
	q, err := state.NewTimerQueue[string, state.VoidNamespace](sb.rc.backend, "t")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sb.key(i)
		q.Register(sb.cur.hash, sb.cur.key, void, int64(i))
		if q.Len() > 10000 {
			q.Pop()
		}
	}
}
