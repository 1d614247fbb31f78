package expr

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// TestFoldEqual: foldEqual is strings.ToLower/ToUpper and ==, on strings
// whose folding changes their length (the Kelvin sign, 'İ', 'ı') or
// meets invalid UTF-8.
func TestFoldEqual(t *testing.T) {
	parts := []string{"a", "A", "k", "K", "\u212a", "İ", "ı", "i", "I", "\xff", "é", "É", "-", "1", "apple", "APPLE"}
	consts := []string{"", "a", "k", "kk", "apple", "APPLE", "i", "I", "ka", "KA", "a-1"}
	r := rand.New(rand.NewPCG(3, 21))
	for range 20000 {
		var b strings.Builder
		for n := r.IntN(4); n > 0; n-- {
			b.WriteString(parts[r.IntN(len(parts))])
		}
		s, c := b.String(), consts[r.IntN(len(consts))]
		if got, want := foldEqual(s, c, false), strings.ToLower(s) == c; got != want {
			t.Fatalf("LOWER(%q) = %q: %v, want %v", s, c, got, want)
		}
		if got, want := foldEqual(s, c, true), strings.ToUpper(s) == c; got != want {
			t.Fatalf("UPPER(%q) = %q: %v, want %v", s, c, got, want)
		}
	}
}

// TestFoldCompareSQL: LOWER(x) = 'c' and <> compare without folding x
// (no allocation for an ASCII x with upper-case letters), with NULL as
// NULL.
func TestFoldCompareSQL(t *testing.T) {
	sc := &Scope{Cols: []Column{{Name: "channel", Type: types.StringType}}}
	for _, c := range []struct {
		src, in string
		null    bool
		want    bool
	}{
		{"LOWER(channel) = 'apple'", "Apple", false, true},
		{"LOWER(channel) = 'apple'", "Apples", false, false},
		{"LOWER(channel) <> 'apple'", "APPLE", false, false},
		{"UPPER(channel) = 'APPLE'", "apple", false, true},
		{"LOWER(channel) = 'k'", "\u212a", false, true},
		{"LOWER(channel) IN ('apple', 'google')", "Google", false, true},
		{"LOWER(channel) = 'apple'", "", true, false},
	} {
		e, err := parser.ParseExpr(c.src)
		if err != nil {
			t.Fatal(err)
		}
		x, err := (&Compiler{Scope: sc}).Compile(e)
		if err != nil {
			t.Fatal(err)
		}
		v := types.StringValue(c.in)
		if c.null {
			v = types.NullValue
		}
		row := []types.Value{v}
		got := x.Eval(row)
		if got.Null != c.null || (!c.null && got.Bool() != c.want) {
			t.Errorf("%s on %q: %v, want %v (null %v)", c.src, c.in, got, c.want, c.null)
		}
		if n := testing.AllocsPerRun(100, func() { x.Eval(row) }); n != 0 && c.in != "\u212a" {
			t.Errorf("%s on %q: %.1f allocations, want 0", c.src, c.in, n)
		}
	}
}
