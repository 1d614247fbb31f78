package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// mapStore is a DistinctStore in a Go map: the model of the planner's
// map state.
type mapStore struct {
	units []DistinctUnit
	m     map[storeKey][]int64
}

type storeKey struct {
	u int
	i int64
	s string
}

func (ms *mapStore) key(u int, v types.Value) storeKey {
	if ms.units[u].Strs {
		return storeKey{u: u, s: v.S}
	}
	return storeKey{u: u, i: v.I}
}

func (ms *mapStore) Add(u int, v types.Value, mask uint64, n int64) (changed uint64) {
	k := ms.key(u, v)
	cs, ok := ms.m[k]
	if !ok {
		cs = make([]int64, ms.units[u].Width)
	}
	live := false
	for i := range cs {
		if mask&(1<<i) != 0 {
			before := cs[i] > 0
			if before || n > 0 {
				cs[i] = max(cs[i]+n, 0)
			}
			if before != (cs[i] > 0) {
				changed |= 1 << i
			}
		}
		live = live || cs[i] > 0
	}
	if live {
		ms.m[k] = cs
	} else {
		delete(ms.m, k)
	}
	return changed
}

func (ms *mapStore) each(fn func(u int, v types.Value, counts []int64)) {
	for k, cs := range ms.m {
		v := types.Value{I: k.i}
		if ms.units[k.u].Strs {
			v = types.Value{S: k.s}
		}
		fn(k.u, v, cs)
	}
}

// TestDistinctStoreEqualsHeap: an accumulator whose DISTINCT sets are in
// a store (AccumulateWith, MergeWith: Pebble's) gives the results of one
// that holds them (Accumulate, Merge: the heap's) under random additions,
// retractions and merges of a local phase's partials; it encodes to its
// sizes alone; the sets move into a store (Externalize, a savepoint of
// the heap restored on Pebble) and out of it (Internalize, the other way)
// with the same results; and a store holds nothing once every row is
// retracted.
func TestDistinctStoreEqualsHeap(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "i", Type: types.BigIntType}, {Name: "s", Type: types.StringType}, {Name: "d", Type: types.Type{Kind: types.Decimal, Precision: 10, Scale: 2}}}}
	var cs []*AggCall
	for _, src := range []string{`COUNT(*)`, `COUNT(DISTINCT i)`, `SUM(DISTINCT i)`, `AVG(DISTINCT i)`, `COUNT(DISTINCT s)`,
		`COUNT(DISTINCT i) FILTER (WHERE i > 3)`, `COUNT(DISTINCT s) FILTER (WHERE i < 6)`, `COUNT(DISTINCT i) FILTER (WHERE i < 2 OR i > 8)`,
		`SUM(DISTINCT d)`, `COUNT(DISTINCT d) FILTER (WHERE i > 5)`, `SUM(i)`} {
		e, err := parser.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		a, err := CompileAgg(e.(*parser.Call), &Compiler{Scope: sc}, true)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		cs = append(cs, a)
	}
	l := NewAggLayout(0, cs)
	// units: COUNT(DISTINCT i) x3, SUM(DISTINCT i), AVG(DISTINCT i),
	// COUNT(DISTINCT s) x2, SUM(DISTINCT d), COUNT(DISTINCT d)
	if got := len(l.DistinctUnits()); got != 6 {
		t.Fatalf("%d units, want 6", got)
	}
	// results as encoded: a decimal sum read back from state is in its
	// compact form, the same number
	results := func(acc []types.Value) string {
		var out []types.Value
		for _, c := range l.Calls {
			out = append(out, l.Result(acc, c))
		}
		b, err := types.Row{Values: out}.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%x", b)
	}
	roundTrip := func(acc []types.Value) ([]types.Value, int) {
		b, err := types.Row{Values: acc}.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var r types.Row
		if err := r.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		return r.Values, len(b)
	}
	newStore := func() *mapStore { return &mapStore{units: l.DistinctUnits(), m: map[storeKey][]int64{}} }
	r := rand.New(rand.NewPCG(3, 5))
	row := func() []types.Value {
		s := types.StringValue(fmt.Sprint("s", r.IntN(6)))
		if r.IntN(10) == 0 {
			s = types.NullValue
		}
		d := types.IntValue(r.Int64N(4)*100 + r.Int64N(3)) // a compact DECIMAL(10, 2): cents
		return []types.Value{types.IntValue(r.Int64N(12)), s, d}
	}
	for round := range 40 {
		h, e, ds := l.Create(nil), l.Create(nil), newStore()
		var live [][]types.Value
		for step := range 200 {
			switch k := r.IntN(10); {
			case k < 6 || len(live) == 0:
				in := row()
				live = append(live, in)
				l.Accumulate(h, in, 1)
				l.AccumulateWith(e, in, 1, ds)
			case k < 9:
				j := r.IntN(len(live))
				in := live[j]
				live = append(live[:j], live[j+1:]...)
				l.Accumulate(h, in, -1)
				l.AccumulateWith(e, in, -1, ds)
			default:
				p := l.Create(nil)
				for range 3 {
					in := row()
					live = append(live, in)
					l.Accumulate(p, in, 1)
				}
				q, _ := roundTrip(p) // the partial's sets, as the heap's Merge reads them
				l.Merge(h, p)
				l.MergeWith(e, q, ds)
			}
			var n int
			if e, n = roundTrip(e); n > 64 {
				t.Fatalf("round %d step %d: the accumulator of a store encodes to %d bytes", round, step, n)
			}
			if l.SizesOnly(h) {
				t.Fatalf("round %d step %d: the heap's accumulator is taken for sizes only", round, step)
			}
			switch step % 50 {
			case 24:
				// Pebble -> heap: the store's sets back in the accumulator
				if len(ds.m) > 0 && !l.SizesOnly(e) {
					t.Fatalf("round %d step %d: an accumulator of sizes is not taken for one", round, step)
				}
				h, _ = roundTrip(e)
				l.Internalize(h, ds.each)
			case 49:
				// heap -> Pebble: the heap's sets into a new store
				e, _ = roundTrip(h)
				ds = newStore()
				l.Externalize(e, ds)
			}
			if got, want := results(e), results(h); got != want {
				t.Fatalf("round %d step %d: store %s, heap %s", round, step, got, want)
			}
		}
		for _, in := range live {
			l.AccumulateWith(e, in, -1, ds)
		}
		if len(ds.m) != 0 || l.HoldsDistinct(e) {
			t.Fatalf("round %d: every row retracted, the store holds %d values, the sizes %v", round, len(ds.m), e)
		}
	}
}
