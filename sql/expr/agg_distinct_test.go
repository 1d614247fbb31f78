package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// TestDistinctHashedEqualsSorted: DISTINCT aggregates over values that
// compare by their bits keep them in a types.CountedSet (the COUNTs of
// one column in one types.CountedSets, a set per FILTER); the results
// equal those of the sorted list (the form kept for other types and in
// older state) under random additions, retractions and merges, and an
// accumulator restored from state (either form, encoded) goes on with
// the same results.
func TestDistinctHashedEqualsSorted(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "i", Type: types.BigIntType}, {Name: "s", Type: types.StringType}}}
	calls := []string{`COUNT(DISTINCT i)`, `SUM(DISTINCT i)`, `AVG(DISTINCT i)`, `COUNT(DISTINCT s)`, `COUNT(DISTINCT i) FILTER (WHERE i > 3)`,
		`COUNT(DISTINCT s) FILTER (WHERE i < 6)`, `COUNT(DISTINCT i) FILTER (WHERE i < 2 OR i > 8)`}
	compile := func(hashed bool) *AggLayout {
		var cs []*AggCall
		for _, src := range calls {
			e, err := parser.ParseExpr(src)
			if err != nil {
				t.Fatal(err)
			}
			a, err := CompileAgg(e.(*parser.Call), &Compiler{Scope: sc}, true)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			if !a.hashed {
				t.Fatalf("%s: not hashed", src)
			}
			a.hashed = hashed
			cs = append(cs, a)
		}
		return NewAggLayout(0, cs)
	}
	hashed, sorted := compile(true), compile(false)
	// the COUNT(DISTINCT)s of one column share one hash table
	for i, want := range []int{3, 0, 0, 2, 3, 2, 3} {
		if g := hashed.Calls[i].group; (g == nil && want > 0) || (g != nil && len(g.calls) != want) {
			t.Fatalf("%s: not in a group of %d", calls[i], want)
		}
	}
	results := func(l *AggLayout, acc []types.Value) string {
		var out []types.Value
		for _, c := range l.Calls {
			out = append(out, l.Result(acc, c))
		}
		return fmt.Sprint(out)
	}
	roundTrip := func(acc []types.Value) []types.Value {
		b, err := types.Row{Values: acc}.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var r types.Row
		if err := r.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		return r.Values
	}
	r := rand.New(rand.NewPCG(7, 9))
	row := func() []types.Value {
		i := r.Int64N(12)
		s := types.StringValue(fmt.Sprint("s", r.IntN(5)))
		if r.IntN(10) == 0 {
			s = types.NullValue
		}
		return []types.Value{types.IntValue(i), s}
	}
	for round := range 50 {
		h, s := hashed.Create(nil), sorted.Create(nil)
		var live [][]types.Value
		for step := range 200 {
			switch k := r.IntN(10); {
			case k < 6 || len(live) == 0:
				in := row()
				live = append(live, in)
				hashed.Accumulate(h, in, 1)
				sorted.Accumulate(s, in, 1)
			case k < 9:
				j := r.IntN(len(live))
				in := live[j]
				live = append(live[:j], live[j+1:]...)
				hashed.Accumulate(h, in, -1)
				sorted.Accumulate(s, in, -1)
			default:
				ho, so := hashed.Create(nil), sorted.Create(nil)
				for range 3 {
					in := row()
					live = append(live, in)
					hashed.Accumulate(ho, in, 1)
					sorted.Accumulate(so, in, 1)
				}
				hashed.Merge(h, ho)
				sorted.Merge(s, so)
			}
			if step%50 == 49 {
				// restored from state: the hashed one as its encoding (a
				// list), then also from the sorted form (older state)
				h = roundTrip(h)
				if round%2 == 1 {
					h = roundTrip(s)
				}
				s = roundTrip(s)
			}
			if got, want := results(hashed, h), results(sorted, s); got != want {
				t.Fatalf("round %d step %d: hashed %s, sorted %s", round, step, got, want)
			}
		}
		// the encodings are the same (the set encodes as the sorted list)
		hb, _ := types.Row{Values: h}.MarshalBinary()
		sb, _ := types.Row{Values: s}.MarshalBinary()
		if string(hb) != string(sb) {
			t.Fatalf("round %d: the hashed accumulator encodes differently from the sorted one", round)
		}
	}
}

// TestDistinctHashedTypes: which argument types a DISTINCT keeps in a
// hash set (those whose equality is their bits) and which keep the
// sorted list (DOUBLE: -0.0 = 0.0; big decimals: two forms; rows).
func TestDistinctHashedTypes(t *testing.T) {
	for _, c := range []struct {
		typ  types.Type
		want bool
	}{
		{types.BigIntType, true},
		{types.StringType, true},
		{types.Type{Kind: types.Date}, true},
		{types.Type{Kind: types.Decimal, Precision: 10, Scale: 2}, true},
		{types.Type{Kind: types.Decimal, Precision: 30, Scale: 2}, false},
		{types.Type{Kind: types.Double}, false},
		{types.Type{Kind: types.Float}, false},
	} {
		if got, _ := bitsEqual(c.typ); got != c.want {
			t.Errorf("%s: hashed %v, want %v", c.typ, got, c.want)
		}
	}
}

// TestSharedFilters: calls whose FILTER is written alike evaluate it once
// a row (Nexmark q15/q16 filter bids, bidders and auctions by the same
// price bands), with the results of evaluating each.
func TestSharedFilters(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "i", Type: types.BigIntType}, {Name: "s", Type: types.StringType}}}
	var evals int
	var calls []*AggCall
	for _, src := range []string{
		`COUNT(*) FILTER (WHERE i < 5)`, `COUNT(DISTINCT s) FILTER (WHERE i < 5)`, `SUM(i) FILTER (WHERE i < 5)`,
		`COUNT(*) FILTER (WHERE i >= 5)`, `COUNT(DISTINCT i) FILTER (WHERE i >= 5)`, `COUNT(*)`,
	} {
		e, err := parser.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		a, err := CompileAgg(e.(*parser.Call), &Compiler{Scope: sc}, false)
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if f := a.Filter; f != nil {
			a.Filter = func(r []types.Value) types.Value { evals++; return f(r) }
		}
		calls = append(calls, a)
	}
	l := NewAggLayout(0, calls)
	acc := l.Create(nil)
	for i := range 10 {
		l.Accumulate(acc, []types.Value{types.IntValue(int64(i)), types.StringValue(fmt.Sprint("s", i%3))}, 1)
	}
	if evals != 20 {
		t.Errorf("%d filter evaluations for 10 rows and 2 distinct filters, want 20", evals)
	}
	var got []types.Value
	for _, c := range l.Calls {
		got = append(got, l.Result(acc, c))
	}
	if g, want := fmt.Sprint(got), fmt.Sprint([]types.Value{types.IntValue(5), types.IntValue(3), types.IntValue(10), types.IntValue(5), types.IntValue(5), types.IntValue(10)}); g != want {
		t.Errorf("results %s, want %s", g, want)
	}
}
