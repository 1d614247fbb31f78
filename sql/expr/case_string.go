package expr

import (
	"math/bits"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// CASE WHEN x = 'a' THEN ... WHEN x = 'b' THEN ... over one string
// expression x (Nexmark q21's four WHEN lower(channel) = '...'): x is
// evaluated once and compared with each constant, where each WHEN
// evaluated x and called a comparison closure; LOWER(x)/UPPER(x) against
// ASCII constants compares x's bytes (fold_compare.go), without folding
// it. As the integer switch (intSwitch), the WHENs must be the same
// expression text compared by = with literals; x a column, or LOWER or
// UPPER of one (plainString).

// stringSwitch returns x and the constants when e has that shape.
func (c *Compiler) stringSwitch(e *parser.Case) (Expr, []string, bool) {
	if e.Operand != nil || len(e.Whens) < 2 || c.GenericOnly {
		return Expr{}, nil, false
	}
	var text string
	keys := make([]string, len(e.Whens))
	for i, w := range e.Whens {
		b, ok := w.Cond.(*parser.Binary)
		if !ok || b.Op != "=" {
			return Expr{}, nil, false
		}
		if keys[i], ok = c.stringLiteral(b.R); !ok {
			return Expr{}, nil, false
		}
		if i == 0 {
			text = parser.ExprString(b.L)
		} else if parser.ExprString(b.L) != text {
			return Expr{}, nil, false
		}
	}
	l := e.Whens[0].Cond.(*parser.Binary).L
	if !c.plainString(l) {
		return Expr{}, nil, false
	}
	x, err := c.Compile(l)
	if err != nil || !x.Type.IsString() || x.Const {
		return Expr{}, nil, false
	}
	return x, keys, true
}

// stringLiteral is the value of x when x is a string literal.
func (c *Compiler) stringLiteral(x parser.Expr) (string, bool) {
	lit, ok := x.(*parser.Literal)
	if !ok || lit.Kind != parser.StringLit {
		return "", false
	}
	k, err := c.Compile(lit)
	if err != nil || !k.Const || !k.Type.IsString() {
		return "", false
	}
	v := k.Eval(nil)
	return v.S, !v.Null
}

// plainString reports whether x is a column or field, or LOWER/UPPER of
// one: evaluated once or once per WHEN, it gives the same (a
// non-deterministic function would not).
func (c *Compiler) plainString(x parser.Expr) bool {
	switch x := x.(type) {
	case *parser.Ident:
		return true
	case *parser.Call:
		_, user := c.Funcs[x.Name]
		return (x.Name == "LOWER" || x.Name == "UPPER") && !user && x.Over == nil && len(x.Args) == 1 && c.plainString(x.Args[0])
	}
	return false
}

// keyMatcher finds the first of keys that x equals (folded: LOWER or
// UPPER of x) without comparing with every key: the keys by their first
// byte (most rows of q21 have a channel whose first byte starts none of
// the four names).
type keyMatcher struct {
	keys   []string
	fold   bool
	upper  bool
	first  [256]uint64 // bit i: keys[i] starts with the byte; keys[i] == "" in none
	empty  int         // the first key that is "", or -1
	sparse bool        // at most 64 keys: first is set
}

func newKeyMatcher(keys []string, fold, upper bool) *keyMatcher {
	m := &keyMatcher{keys: keys, fold: fold, upper: upper, empty: -1, sparse: len(keys) <= 64}
	for i, k := range keys {
		if k == "" {
			if m.empty < 0 {
				m.empty = i
			}
			continue
		}
		if m.sparse {
			m.first[k[0]] |= 1 << i
		}
	}
	return m
}

// find returns the index of the first key s (folded) equals, or -1.
func (m *keyMatcher) find(s string) int {
	if len(s) == 0 {
		return m.empty // only "" folds to ""
	}
	b := s[0]
	if !m.sparse || (m.fold && b >= 0x80) {
		// a non-ASCII first rune may fold to an ASCII one (the Kelvin
		// sign): every key
		for i, k := range m.keys {
			if m.equal(s, k) {
				return i
			}
		}
		return -1
	}
	if m.fold {
		if m.upper && 'a' <= b && b <= 'z' || !m.upper && 'A' <= b && b <= 'Z' {
			b ^= 0x20
		}
	}
	for set := m.first[b]; set != 0; set &= set - 1 {
		i := bits.TrailingZeros64(set)
		if m.equal(s, m.keys[i]) {
			return i
		}
	}
	return -1
}

func (m *keyMatcher) equal(s, k string) bool {
	if m.fold {
		return foldEqual(s, k, m.upper)
	}
	return s == k
}

// keysOf is x's value to compare (x's argument when x folds it) and the
// matcher of keys.
func keysOf(x Expr, keys []string) (EvalFn, *keyMatcher) {
	if f := x.fold; f != nil && allASCII(keys) {
		return f.arg, newKeyMatcher(keys, true, f.upper)
	}
	return x.Eval, newKeyMatcher(keys, false, false)
}

// stringSwitchEval is the CASE's evaluation: thens[i] for the first key
// x equals, else els.
func stringSwitchEval(x Expr, keys []string, thens []EvalFn, els EvalFn) EvalFn {
	xf, m := keysOf(x, keys)
	return func(r []types.Value) types.Value {
		if a := xf(r); !a.Null {
			if i := m.find(a.S); i >= 0 {
				return thens[i](r)
			}
		}
		return els(r)
	}
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 {
				return false
			}
		}
	}
	return true
}

// stringIn is x [NOT] IN ('a', 'b', ...) over one string x of the same
// kind (a column, or LOWER/UPPER of one: q21's lower(channel) IN (...)):
// x once, where the OR of comparisons evaluated it per constant. ok is
// false for other shapes.
func (c *Compiler) stringIn(e *parser.In) (Expr, bool) {
	if c.GenericOnly || len(e.List) < 2 || !c.plainString(e.X) {
		return Expr{}, false
	}
	keys := make([]string, len(e.List))
	for i, item := range e.List {
		var ok bool
		if keys[i], ok = c.stringLiteral(item); !ok {
			return Expr{}, false
		}
	}
	x, err := c.Compile(e.X)
	if err != nil || !x.Type.IsString() || x.Const {
		return Expr{}, false
	}
	in, out := triTrue, triFalse
	if e.Not {
		in, out = out, in
	}
	xf, m := keysOf(x, keys)
	p := func(r []types.Value) tri {
		a := xf(r)
		if a.Null {
			return triNull
		}
		if m.find(a.S) >= 0 {
			return in
		}
		return out
	}
	t := types.Type{Kind: types.Boolean, NotNull: x.Type.NotNull}
	return Expr{Type: t, Col: -1, Eval: evalOfPred(p), pred: p}, true // (FilterOf: p == TRUE)
}
