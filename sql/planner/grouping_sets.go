package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// GROUP BY GROUPING SETS (...), ROLLUP (...) and CUBE (...), planned as
// Flink (Calcite) plans them: an Expand sends each input row once per
// grouping set, with the group keys the set does not hold NULL and $e,
// the set's number; one aggregation groups by all the keys and $e; the
// select list computes GROUPING, GROUPING_ID and GROUP_ID from $e.
//
//	SELECT a, b, COUNT(*) FROM t GROUP BY ROLLUP (a, b)
//
// groups the rows of t by (a, b), by (a) and by () in one aggregation,
// keyed by (a', b', $e) where a' and b' are a and b or NULL. As in
// Calcite, a GROUP BY's items multiply: GROUP BY a, ROLLUP (b, c) is
// GROUPING SETS ((a, b, c), (a, b), (a)); a set listed twice is grouped
// twice (GROUP_ID tells the copies apart); one set alone is a plain GROUP
// BY. The aggregates read the input's own columns, so COUNT(a) counts a
// where the set nulls it (Flink's Expand duplicates such columns). A key
// that some set leaves out is nullable in the result.
//
// It works wherever a GROUP BY key does: a group aggregation (retracting,
// mini-batch, two-phase) and a window aggregation (GROUP BY window_start,
// window_end, GROUPING SETS (...): the Expand runs before the window
// operator, the window columns are no grouping keys). Where weir differs
// from Flink: $e numbers the sets in the order written (Flink: a bitmask
// of the keys the set leaves out); the split of distinct aggregates does
// not apply; the aggregations grouped by a window operator's output
// (window_attached.go) refuse grouping sets.

// groupingSets are a GROUP BY's grouping sets over its distinct keys.
type groupingSets struct {
	// sets holds each set's keys (indexes into the keys, ascending)
	sets [][]int
	// nkeys is the number of distinct keys
	nkeys int
}

// maxGroupingSets bounds the sets of a GROUP BY (CUBE of n keys has 2^n).
const maxGroupingSets = 4096

// groupingSetsOf reads a GROUP BY's items (without its window): when some
// is GROUPING SETS, ROLLUP or CUBE, the distinct key expressions and the
// sets over them; else the items unchanged and nil. One set alone is a
// plain GROUP BY of its keys (nil sets).
func groupingSetsOf(items []parser.Expr) ([]parser.Expr, *groupingSets, error) {
	if !slices.ContainsFunc(items, func(e parser.Expr) bool { _, ok := e.(*parser.GroupingSets); return ok }) {
		return items, nil, nil
	}
	var keys []parser.Expr
	var keyText []string
	index := func(e parser.Expr) int {
		t := parser.ExprString(e)
		if i := slices.Index(keyText, t); i >= 0 {
			return i
		}
		keys, keyText = append(keys, e), append(keyText, t)
		return len(keys) - 1
	}
	// the sets of one item, each a list of key indexes
	var setsOf func(e parser.Expr) ([][]int, error)
	setsOf = func(e parser.Expr) ([][]int, error) {
		g, ok := e.(*parser.GroupingSets)
		if !ok {
			return [][]int{{index(e)}}, nil
		}
		elems := make([][]int, len(g.Elems))
		var out [][]int
		for i, el := range g.Elems {
			if len(el) == 1 {
				if inner, nested := el[0].(*parser.GroupingSets); nested {
					ss, err := setsOf(inner)
					if err != nil {
						return nil, err
					}
					out = append(out, ss...)
					continue
				}
			}
			for _, x := range el {
				elems[i] = append(elems[i], index(x))
			}
			if g.Kind == "GROUPING SETS" {
				out = append(out, elems[i])
			}
		}
		switch g.Kind {
		case "ROLLUP":
			// (e1, ..., en), (e1, ..., en-1), ..., ()
			for n := len(elems); n >= 0; n-- {
				out = append(out, slices.Concat(elems[:n]...))
			}
		case "CUBE":
			if len(elems) > 12 {
				return nil, parser.Errorf(g.Pos, "CUBE of %d elements makes too many grouping sets", len(elems))
			}
			// every subset, the fullest first: (a, b), (a), (b), ()
			n := len(elems)
			for m := 1<<n - 1; m >= 0; m-- {
				var s []int
				for i := range n {
					if m&(1<<(n-1-i)) != 0 {
						s = append(s, elems[i]...)
					}
				}
				out = append(out, s)
			}
		}
		if len(out) > maxGroupingSets {
			return nil, parser.Errorf(g.Pos, "%s makes more than %d grouping sets", g.Kind, maxGroupingSets)
		}
		return out, nil
	}
	// the items multiply: each set of the product takes one set of each
	sets := [][]int{{}}
	for _, it := range items {
		ss, err := setsOf(it)
		if err != nil {
			return nil, nil, err
		}
		if len(sets)*len(ss) > maxGroupingSets {
			return nil, nil, parser.Errorf(it.ExprPos(), "GROUP BY makes more than %d grouping sets", maxGroupingSets)
		}
		var next [][]int
		for _, s := range sets {
			for _, t := range ss {
				next = append(next, slices.Concat(s, t))
			}
		}
		sets = next
	}
	for i, s := range sets {
		slices.Sort(s)
		sets[i] = slices.Compact(s)
	}
	if len(sets) == 1 {
		only := make([]parser.Expr, len(sets[0]))
		for i, k := range sets[0] {
			only[i] = keys[k]
		}
		return only, nil, nil
	}
	if len(keys) > 63 {
		return nil, nil, parser.Errorf(items[0].ExprPos(), "GROUPING SETS over more than 63 distinct expressions are not supported")
	}
	return keys, &groupingSets{sets: sets, nkeys: len(keys)}, nil
}

// has reports whether set e holds key k.
func (g *groupingSets) has(e, k int) bool { return slices.Contains(g.sets[e], k) }

// String is the sets for EXPLAIN, by the keys' texts.
func (g *groupingSets) String(keyText []string) string {
	var b strings.Builder
	for e, s := range g.sets {
		if e > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('{')
		for i, k := range s {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(keyText[k])
		}
		b.WriteByte('}')
	}
	return b.String()
}

// expand plans the Expand of the sets over in: in's columns, then the
// keys (keys compiled against in; NULL where the set leaves them out),
// then $e. It returns the Expand and the aggregation's group keys over
// it: the key columns and $e.
func (g *groupingSets) expand(in *rel, keys []expr.Expr, keyText []string) (*rel, []expr.Expr) {
	nIn := len(in.sc.Cols)
	cols := make([]expr.Column, len(keys))
	evals := make([]expr.EvalFn, len(keys))
	refs := make([]expr.Expr, 0, len(keys)+1)
	var proj []string
	for k, ke := range keys {
		t := ke.Type
		t.TimeAttr = 0
		if slices.ContainsFunc(g.sets, func(s []int) bool { return !slices.Contains(s, k) }) {
			t.NotNull = false
		}
		cols[k] = expr.Column{Name: fmt.Sprintf("$f%d", nIn+k), Type: t}
		evals[k] = ke.Eval
		refs = append(refs, expr.ColRef(nIn+k, t))
		proj = append(proj, keyText[k]+" AS "+cols[k].Name)
	}
	refs = append(refs, expr.ColRef(nIn+len(keys), types.Type{Kind: types.Int, NotNull: true}))
	op := fmt.Sprintf("Expand(keys=[%s], groupingSets=[%s])", strings.Join(proj, ", "), g.String(keyText))
	return expandRel(in, cols, evals, g.sets, op), refs
}

// groupingFn compiles GROUPING(args), GROUPING_ID(args) and GROUP_ID()
// over an aggregation's output whose $e column is eCol (sets nil: a plain
// GROUP BY, where each is 0). keyOf finds the key an argument is (-1:
// none).
func groupingFn(c *parser.Call, g *groupingSets, eCol int, keyOf func(parser.Expr) int) (expr.Expr, error) {
	bigint := types.Type{Kind: types.BigInt, NotNull: true}
	var table []int64 // the value per set
	nsets := 1
	if g != nil {
		nsets = len(g.sets)
	}
	if c.Star || c.Distinct || c.Filter != nil {
		return expr.Expr{}, expr.ErrAt(c, "%s takes expressions of the GROUP BY", c.Name)
	}
	switch c.Name {
	case "GROUP_ID":
		if len(c.Args) != 0 {
			return expr.Expr{}, expr.ErrAt(c, "GROUP_ID takes no arguments")
		}
		// the number of earlier sets equal to this one
		table = make([]int64, nsets)
		for e := range nsets {
			for d := range e {
				if slices.Equal(g.sets[d], g.sets[e]) {
					table[e]++
				}
			}
		}
	default:
		if len(c.Args) == 0 || len(c.Args) > 63 {
			return expr.Expr{}, expr.ErrAt(c, "%s takes 1 to 63 expressions of the GROUP BY", c.Name)
		}
		ks := make([]int, len(c.Args))
		for i, a := range c.Args {
			if ks[i] = keyOf(a); ks[i] < 0 {
				return expr.Expr{}, expr.ErrAt(a, "argument to %s must be a grouped expression", c.Name)
			}
		}
		// bit n-1-i is 1 when the set leaves argument i out
		table = make([]int64, nsets)
		for e := range nsets {
			for i, k := range ks {
				if g != nil && !g.has(e, k) {
					table[e] |= 1 << (len(ks) - 1 - i)
				}
			}
		}
	}
	if g == nil {
		return expr.Const(types.IntValue(table[0]), bigint), nil
	}
	vals := make([]types.Value, len(table))
	for e, v := range table {
		vals[e] = types.IntValue(v)
	}
	return expr.Expr{Type: bigint, Col: -1, Eval: func(r []types.Value) types.Value { return vals[r[eCol].I] }}, nil
}

// hasGroupingCall reports whether e calls GROUPING, GROUPING_ID or
// GROUP_ID (which, as aggregates do, make a SELECT an aggregation).
func hasGroupingCall(e parser.Expr, funcs map[string]expr.Function) bool {
	found := false
	walkExpr(e, func(x parser.Expr) bool {
		if c, ok := x.(*parser.Call); ok && c.Over == nil && isGroupingCall(c.Name) && funcs[c.Name] == nil {
			found = true
		}
		return !found
	})
	return found
}

// isGroupingCall reports GROUPING, GROUPING_ID and GROUP_ID.
func isGroupingCall(name string) bool {
	return name == "GROUPING" || name == "GROUPING_ID" || name == "GROUP_ID"
}

// expandRel is Flink's Expand: each row of from once per grouping, with
// extra columns after from's (each computed once a row by its eval; a
// grouping keeps the ones it lists, the others are NULL) and $e, the
// grouping's number. The split of distinct aggregates (distinct_split.go)
// expands by bucket columns, grouping sets by group keys.
func expandRel(from *rel, cols []expr.Column, evals []expr.EvalFn, groupings [][]int, op string) *rel {
	nIn, nx := len(from.sc.Cols), len(cols)
	width := nIn + nx + 1
	sc := &expr.Scope{Cols: slices.Clone(from.sc.Cols)}
	sc.Cols = append(sc.Cols, cols...)
	sc.Cols = append(sc.Cols, expr.Column{Name: "$e", Type: types.Type{Kind: types.Int, NotNull: true}})
	keep := make([][]bool, len(groupings))
	for e, g := range groupings {
		keep[e] = make([]bool, nx)
		for _, j := range g {
			keep[e][j] = true
		}
	}
	r := &rel{op: op, sc: sc, mode: from.mode, inputs: []*rel{from}, updater: from.updater, bounded: from.bounded}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(from)
		if err != nil {
			return nil, err
		}
		return weir.FlatMap(s, func(row types.Row, emit func(types.Row)) {
			// one allocation for all the row's copies; the input's values
			// are copied, so nothing of a lent input row is kept
			all := make([]types.Value, width*len(groupings))
			first := all[nIn : nIn+nx]
			for j, f := range evals {
				first[j] = f(row.Values)
			}
			// the last copy first: the first one's extra columns are read
			// by every copy, and nulled last
			for e := len(groupings) - 1; e >= 0; e-- {
				vs := all[e*width : (e+1)*width : (e+1)*width]
				copy(vs, row.Values)
				for j := range nx {
					if keep[e][j] {
						vs[nIn+j] = first[j]
					} else {
						vs[nIn+j] = types.NullValue
					}
				}
				vs[nIn+nx] = types.IntValue(int64(e))
			}
			for e := range groupings {
				emit(types.Row{Kind: row.Kind, Values: all[e*width : (e+1)*width : (e+1)*width]})
			}
		}, b.uid("expand"), weir.Name("Expand")), nil
	}
	return r
}
