package expr

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// TestDistinctHashedEqualsSorted: DISTINCT aggregates over values that
// compare by their bits keep them in a types.CountedSet; the results
// equal those of the sorted list (the form kept for other types and in
// older state) under random additions, retractions and merges, and an
// accumulator restored from state (either form, encoded) goes on with
// the same results.
func TestDistinctHashedEqualsSorted(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "i", Type: types.BigIntType}, {Name: "s", Type: types.StringType}}}
	calls := []string{`COUNT(DISTINCT i)`, `SUM(DISTINCT i)`, `AVG(DISTINCT i)`, `COUNT(DISTINCT s)`, `COUNT(DISTINCT i) FILTER (WHERE i > 3)`}
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
