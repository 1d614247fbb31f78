package expr

import (
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
		lit, ok := b.R.(*parser.Literal)
		if !ok || lit.Kind != parser.StringLit {
			return Expr{}, nil, false
		}
		k, err := c.Compile(lit)
		if err != nil || !k.Const || !k.Type.IsString() {
			return Expr{}, nil, false
		}
		v := k.Eval(nil)
		if v.Null {
			return Expr{}, nil, false
		}
		keys[i] = v.S
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

// stringSwitchEval is the CASE's evaluation: thens[i] for the first key
// x equals, else els.
func stringSwitchEval(x Expr, keys []string, thens []EvalFn, els EvalFn) EvalFn {
	if f := x.fold; f != nil && allASCII(keys) {
		arg, upper := f.arg, f.upper
		return func(r []types.Value) types.Value {
			if a := arg(r); !a.Null {
				for i, key := range keys {
					if foldEqual(a.S, key, upper) {
						return thens[i](r)
					}
				}
			}
			return els(r)
		}
	}
	xf := x.Eval
	return func(r []types.Value) types.Value {
		if a := xf(r); !a.Null {
			for i, key := range keys {
				if a.S == key {
					return thens[i](r)
				}
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
		lit, ok := item.(*parser.Literal)
		if !ok || lit.Kind != parser.StringLit {
			return Expr{}, false
		}
		k, err := c.Compile(lit)
		if err != nil || !k.Const || !k.Type.IsString() {
			return Expr{}, false
		}
		v := k.Eval(nil)
		if v.Null {
			return Expr{}, false
		}
		keys[i] = v.S
	}
	x, err := c.Compile(e.X)
	if err != nil || !x.Type.IsString() || x.Const {
		return Expr{}, false
	}
	in, out := triTrue, triFalse
	if e.Not {
		in, out = out, in
	}
	var p predFn
	if f := x.fold; f != nil && allASCII(keys) {
		arg, upper := f.arg, f.upper
		p = func(r []types.Value) tri {
			a := arg(r)
			if a.Null {
				return triNull
			}
			for _, key := range keys {
				if foldEqual(a.S, key, upper) {
					return in
				}
			}
			return out
		}
	} else {
		xf := x.Eval
		p = func(r []types.Value) tri {
			a := xf(r)
			if a.Null {
				return triNull
			}
			for _, key := range keys {
				if a.S == key {
					return in
				}
			}
			return out
		}
	}
	t := types.Type{Kind: types.Boolean, NotNull: x.Type.NotNull}
	return Expr{Type: t, Col: -1, Eval: evalOfPred(p), pred: p, filt: func(r []types.Value) bool { return p(r) == triTrue }}, true
}
