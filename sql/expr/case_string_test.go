package expr

import (
	"math/rand/v2"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// TestStringSwitch: a CASE of WHEN x = 'constant', and x IN ('constant',
// ...), over one string x evaluate x once per row (Subst counts the reads
// of the column), and give what the generic compilation gives, NULL x
// and the Kelvin sign included.
func TestStringSwitch(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "channel", Type: types.StringType}}}
	ins := []string{"Apple", "apple", "Google", "baidu", "FACEBOOK", "channel-1", "", "\u212a", "k", "K"}
	for _, src := range []string{
		"CASE WHEN lower(channel) = 'apple' THEN '0' WHEN lower(channel) = 'google' THEN '1' WHEN lower(channel) = 'k' THEN 'k' ELSE channel END",
		"CASE WHEN upper(channel) = 'BAIDU' THEN 3 WHEN upper(channel) = 'FACEBOOK' THEN 2 END",
		"CASE WHEN channel = 'apple' THEN 'a' WHEN channel = 'Apple' THEN 'A' WHEN channel = 'apple' THEN 'x' ELSE 'z' END",
		"lower(channel) IN ('apple', 'google', 'k')",
		"upper(channel) NOT IN ('APPLE', 'BAIDU')",
		"channel IN ('Apple', 'k', '')",
	} {
		e, err := parser.ParseExpr(src)
		if err != nil {
			t.Fatal(err)
		}
		reads := 0
		col := types.NullValue
		counted := &Compiler{Scope: sc, Subst: func(x parser.Expr) (Expr, bool, error) {
			if id, ok := x.(*parser.Ident); ok && id.Parts[0] == "channel" {
				return Expr{Type: types.StringType, Col: -1, Eval: func([]types.Value) types.Value { reads++; return col }}, true, nil
			}
			return Expr{}, false, nil
		}}
		fast, err := counted.Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := (&Compiler{Scope: sc, GenericOnly: true}).Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		for range 200 {
			col = types.NullValue
			if i := r.IntN(len(ins) + 1); i < len(ins) {
				col = types.StringValue(ins[i])
			}
			row := []types.Value{col}
			reads = 0
			got, want := fast.Eval(row), slow.Eval(row)
			if !got.Equal(want) || got.Null != want.Null {
				t.Fatalf("%s on %v: %v, want %v", src, col, got, want)
			}
			// one read for the WHENs, one more for an ELSE of channel
			if reads > 2 {
				t.Fatalf("%s on %v: channel read %d times", src, col, reads)
			}
		}
	}
}

// TestKeyMatcher: the first-byte dispatch finds the key a linear scan
// finds, folded or not, for the Kelvin sign, "" and keys sharing a first
// byte.
func TestKeyMatcher(t *testing.T) {
	keys := []string{"apple", "ab", "k", "", "Apple", "kk", "b", "ab"}
	ins := []string{"Apple", "apple", "APPLE", "ab", "AB", "k", "K", "\u212a", "kK", "", "b", "B", "x", "\xff", "é"}
	r := rand.New(rand.NewPCG(5, 8))
	for _, fold := range []bool{false, true} {
		for _, upper := range []bool{false, true} {
			m := newKeyMatcher(keys, fold, upper)
			for range 2000 {
				s := ins[r.IntN(len(ins))] + []string{"", "a", "P", "pple"}[r.IntN(4)]
				want := -1
				for i, k := range keys {
					if m.equal(s, k) {
						want = i
						break
					}
				}
				if got := m.find(s); got != want {
					t.Fatalf("fold %v upper %v: find(%q) = %d, want %d", fold, upper, s, got, want)
				}
			}
		}
	}
}
