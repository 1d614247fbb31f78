package expr

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The collection functions of Flink 1.19/1.20 (ELEMENT, ARRAY_*, MAP_*),
// as its runtime's ArrayXxxFunction and MapXxxFunction classes compute
// them. An array is a []Value, a map a []Value of key, value, key, value...
// in insertion order (as MAP[...] builds it), so a map's keys, values and
// entries come out in that order (Flink: "no order guaranteed").
//
// Elements compare as Value.Equal does: deep, NULL equal to NULL, which is
// what Flink's element equality (its hash sets of elements) gives: a NULL
// needle finds a NULL element, ARRAY_DISTINCT keeps one NULL.

// collectionFuncs names the functions of this file.
var collectionFuncs = map[string]bool{
	"ELEMENT": true, "ARRAY_APPEND": true, "ARRAY_PREPEND": true, "ARRAY_CONTAINS": true,
	"ARRAY_DISTINCT": true, "ARRAY_POSITION": true, "ARRAY_REMOVE": true, "ARRAY_REVERSE": true,
	"ARRAY_SLICE": true, "ARRAY_SORT": true, "ARRAY_UNION": true, "ARRAY_CONCAT": true,
	"ARRAY_EXCEPT": true, "ARRAY_INTERSECT": true, "ARRAY_MAX": true, "ARRAY_MIN": true,
	"ARRAY_JOIN": true, "MAP_KEYS": true, "MAP_VALUES": true, "MAP_ENTRIES": true,
	"MAP_UNION": true, "MAP_FROM_ARRAYS": true,
}

// overOnlyFuncs are the OVER functions that are no aggregates: called
// without OVER, they are an error (agg_lag.go, planner/over_lag.go).
var overOnlyFuncs = map[string]bool{"LAG": true, "LEAD": true, "CUME_DIST": true, "PERCENT_RANK": true, "NTILE": true}

func init() {
	// listed for SHOW FUNCTIONS and IsBuiltin here, not in ScalarFunctions'
	// literal, so that this file stays apart from funcs.go
	for name := range collectionFuncs {
		ScalarFunctions = append(ScalarFunctions, name)
	}
	slices.Sort(ScalarFunctions[len(ScalarFunctions)-len(collectionFuncs):])
}

// collectionCall compiles a function of collectionFuncs; xs are its
// compiled arguments.
func (c *Compiler) collectionCall(e *parser.Call, xs []Expr) (Expr, error) {
	if overOnlyFuncs[e.Name] {
		return Expr{}, ErrAt(e, "%s needs an OVER window: %s(...) OVER (PARTITION BY ... ORDER BY ...)", e.Name, e.Name)
	}
	switch e.Name {
	case "ELEMENT", "ARRAY_DISTINCT", "ARRAY_REVERSE", "ARRAY_MAX", "ARRAY_MIN":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		a := xs[0]
		if err := wantArray(e, 0, a); err != nil {
			return Expr{}, err
		}
		elem := elemOf(a.Type)
		switch e.Name {
		case "ELEMENT":
			return arrayFn1(a, elem.Nullable(), false, func(l []types.Value) types.Value {
				switch len(l) {
				case 0:
					return types.NullValue
				case 1:
					return l[0]
				}
				panic(runtimeError("ELEMENT: the array has more than one element"))
			}), nil
		case "ARRAY_DISTINCT":
			return arrayFn1(a, a.Type, true, func(l []types.Value) types.Value {
				return types.ListValue(appendDistinct(make([]types.Value, 0, len(l)), l))
			}), nil
		case "ARRAY_REVERSE":
			return arrayFn1(a, a.Type, true, func(l []types.Value) types.Value {
				out := make([]types.Value, len(l))
				for i, v := range l {
					out[len(l)-1-i] = v
				}
				return types.ListValue(out)
			}), nil
		}
		// ARRAY_MAX, ARRAY_MIN: the greatest (least) non-NULL element,
		// NULL when there is none
		cmp := Comparator(elem, elem)
		if cmp == nil {
			return Expr{}, ErrAt(e, "%s: the elements of %s do not compare", e.Name, a.Type)
		}
		sign := 1
		if e.Name == "ARRAY_MIN" {
			sign = -1
		}
		return arrayFn1(a, elem.Nullable(), false, func(l []types.Value) types.Value {
			best := types.NullValue
			for _, v := range l {
				if !v.Null && (best.Null || sign*cmp(v, best) > 0) {
					best = v
				}
			}
			return best
		}), nil

	case "ARRAY_APPEND", "ARRAY_PREPEND":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		if err := wantArray(e, 0, xs[0]); err != nil {
			return Expr{}, err
		}
		et, ok := CommonType([]types.Type{elemOf(xs[0].Type), xs[1].Type})
		if !ok {
			return Expr{}, ErrAt(e.Args[1], "%s: cannot add a %s to an array of %s", e.Name, xs[1].Type, elemOf(xs[0].Type))
		}
		a, err := castArray(xs[0], et, e.Args[0])
		if err != nil {
			return Expr{}, err
		}
		x, err := Cast(xs[1], et, e.Args[1])
		if err != nil {
			return Expr{}, err
		}
		t := types.ArrayOf(et)
		t.NotNull = a.Type.NotNull
		f, g, prepend := a.Eval, x.Eval, e.Name == "ARRAY_PREPEND"
		return Expr{Type: t, Const: a.Const && x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
			av := f(r)
			if av.Null {
				return av
			}
			l := av.List()
			out := make([]types.Value, 0, len(l)+1)
			if prepend {
				out = append(out, g(r))
			}
			out = append(out, l...)
			if !prepend {
				out = append(out, g(r))
			}
			return types.ListValue(out)
		}}, nil

	case "ARRAY_CONTAINS", "ARRAY_POSITION", "ARRAY_REMOVE":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		a := xs[0]
		if err := wantArray(e, 0, a); err != nil {
			return Expr{}, err
		}
		elem := elemOf(a.Type)
		// the needle is cast to the element type, as Flink casts it
		if _, ok := CommonType([]types.Type{elem, xs[1].Type}); !ok {
			return Expr{}, ErrAt(e.Args[1], "%s: cannot look for a %s in an array of %s", e.Name, xs[1].Type, elem)
		}
		x, err := Cast(xs[1], elem.Nullable(), e.Args[1])
		if err != nil {
			return Expr{}, err
		}
		f, g := a.Eval, x.Eval
		konst := a.Const && x.Const
		switch e.Name {
		case "ARRAY_CONTAINS":
			// a NULL needle finds a NULL element
			return Expr{Type: types.Type{Kind: types.Boolean, NotNull: a.Type.NotNull}, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
				av := f(r)
				if av.Null {
					return av
				}
				return types.BoolValue(indexOf(av.List(), g(r)) >= 0)
			}}, nil
		case "ARRAY_POSITION":
			// 1-based, 0 when absent, NULL when either argument is
			return Expr{Type: types.Type{Kind: types.Int, NotNull: a.Type.NotNull && x.Type.NotNull}, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
				av := f(r)
				if av.Null {
					return av
				}
				n := g(r)
				if n.Null {
					return n
				}
				return types.IntValue(int64(indexOf(av.List(), n) + 1))
			}}, nil
		}
		// ARRAY_REMOVE: every element equal to the needle (a NULL needle
		// removes the NULL elements)
		return Expr{Type: a.Type, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
			av := f(r)
			if av.Null {
				return av
			}
			n, l := g(r), av.List()
			out := make([]types.Value, 0, len(l))
			for _, v := range l {
				if !v.Equal(n) {
					out = append(out, v)
				}
			}
			return types.ListValue(out)
		}}, nil

	case "ARRAY_SLICE":
		if err := wantArgs(e, xs, 2, 3); err != nil {
			return Expr{}, err
		}
		a := xs[0]
		if err := wantArray(e, 0, a); err != nil {
			return Expr{}, err
		}
		for i := 1; i < len(xs); i++ {
			if !xs[i].Type.IsInteger() && xs[i].Type.Kind != types.Null {
				return Expr{}, ErrAt(e.Args[i], "ARRAY_SLICE's offsets are integers, not %s", xs[i].Type)
			}
		}
		f, from := a.Eval, xs[1].Eval
		to := EvalFn(nil)
		if len(xs) == 3 {
			to = xs[2].Eval
		}
		t := a.Type
		t.NotNull = allNotNull(xs)
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			av, s := f(r), from(r)
			if av.Null || s.Null {
				return types.NullValue
			}
			l := av.List()
			end := int64(len(l))
			if to != nil {
				ev := to(r)
				if ev.Null {
					return types.NullValue
				}
				end = ev.I
			}
			return types.ListValue(arraySlice(l, s.I, end))
		}}, nil

	case "ARRAY_SORT":
		if err := wantArgs(e, xs, 1, 3); err != nil {
			return Expr{}, err
		}
		a := xs[0]
		if err := wantArray(e, 0, a); err != nil {
			return Expr{}, err
		}
		for i := 1; i < len(xs); i++ {
			if xs[i].Type.Kind != types.Boolean && xs[i].Type.Kind != types.Null {
				return Expr{}, ErrAt(e.Args[i], "ARRAY_SORT's order arguments are BOOLEAN, not %s", xs[i].Type)
			}
		}
		elem := elemOf(a.Type)
		cmp := Comparator(elem, elem)
		if cmp == nil {
			return Expr{}, ErrAt(e, "ARRAY_SORT: the elements of %s do not compare", a.Type)
		}
		f := a.Eval
		var asc, nullsFirst EvalFn
		if len(xs) > 1 {
			asc, nullsFirst = xs[1].Eval, xs[1].Eval // Flink: NULLs go where the order puts the least
		}
		if len(xs) > 2 {
			nullsFirst = xs[2].Eval
		}
		t := a.Type
		t.NotNull = allNotNull(xs)
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			av := f(r)
			if av.Null {
				return av
			}
			up, nf := true, true
			if asc != nil {
				u, n := asc(r), nullsFirst(r)
				if u.Null || n.Null {
					return types.NullValue
				}
				up, nf = u.Bool(), n.Bool()
			}
			out := slices.Clone(av.List())
			slices.SortStableFunc(out, func(x, y types.Value) int {
				if x.Null || y.Null {
					if x.Null == y.Null {
						return 0
					}
					c := -1 // the NULL first
					if y.Null {
						c = 1
					}
					if !nf {
						c = -c
					}
					return c
				}
				if up {
					return cmp(x, y)
				}
				return -cmp(x, y)
			})
			return types.ListValue(out)
		}}, nil

	case "ARRAY_CONCAT", "ARRAY_UNION", "ARRAY_EXCEPT", "ARRAY_INTERSECT":
		lo, hi := 2, 2
		if e.Name == "ARRAY_CONCAT" {
			lo, hi = 1, 1<<16
		}
		if err := wantArgs(e, xs, lo, hi); err != nil {
			return Expr{}, err
		}
		arrs, t, err := commonArrays(e, xs)
		if err != nil {
			return Expr{}, err
		}
		konst := allKonst(arrs)
		if e.Name == "ARRAY_CONCAT" {
			fs := make([]EvalFn, len(arrs))
			for i, x := range arrs {
				fs[i] = x.Eval
			}
			t.NotNull = allNotNull(arrs)
			return Expr{Type: t, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
				var out []types.Value
				for _, f := range fs {
					v := f(r)
					if v.Null {
						return v
					}
					out = append(out, v.List()...)
				}
				if out == nil {
					out = []types.Value{}
				}
				return types.ListValue(out)
			}}, nil
		}
		f, g := arrs[0].Eval, arrs[1].Eval
		op := e.Name
		t.NotNull = allNotNull(arrs)
		if op == "ARRAY_EXCEPT" {
			t.NotNull = arrs[0].Type.NotNull // a NULL second array excepts nothing
		}
		return Expr{Type: t, Const: konst, Col: -1, Eval: func(r []types.Value) types.Value {
			av, bv := f(r), g(r)
			if av.Null || (bv.Null && op != "ARRAY_EXCEPT") {
				return types.NullValue
			}
			a, b := av.List(), bv.List()
			switch op {
			case "ARRAY_UNION":
				out := appendDistinct(make([]types.Value, 0, len(a)+len(b)), a)
				return types.ListValue(appendDistinct(out, b))
			case "ARRAY_INTERSECT":
				// the distinct elements of a that b has, in a's order
				out := make([]types.Value, 0, len(a))
				for _, v := range a {
					if indexOf(b, v) >= 0 && indexOf(out, v) < 0 {
						out = append(out, v)
					}
				}
				return types.ListValue(out)
			}
			// ARRAY_EXCEPT: the distinct elements of a that b has not, in
			// a's order; a NULL of a (if b has none) comes last, as
			// Flink's ArrayExceptFunction adds it after the others
			out := make([]types.Value, 0, len(a))
			null := false
			for _, v := range a {
				switch {
				case v.Null:
					null = true
				case indexOf(b, v) < 0 && indexOf(out, v) < 0:
					out = append(out, v)
				}
			}
			if null && indexOf(b, types.NullValue) < 0 {
				out = append(out, types.NullValue)
			}
			return types.ListValue(out)
		}}, nil

	case "ARRAY_JOIN":
		if err := wantArgs(e, xs, 2, 3); err != nil {
			return Expr{}, err
		}
		a := xs[0]
		if err := wantArray(e, 0, a); err != nil {
			return Expr{}, err
		}
		if et := elemOf(a.Type); !et.IsString() && et.Kind != types.Null {
			return Expr{}, ErrAt(e.Args[0], "ARRAY_JOIN needs an array of strings, not %s", a.Type)
		}
		if err := stringArgs(e, xs, 1, 2); err != nil {
			return Expr{}, err
		}
		f, sep := a.Eval, xs[1].Eval
		var repl EvalFn
		if len(xs) == 3 {
			repl = xs[2].Eval
		}
		return Expr{Type: types.Type{Kind: types.Varchar, Length: types.MaxLength, NotNull: allNotNull(xs)}, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			av, s := f(r), sep(r)
			if av.Null || s.Null {
				return types.NullValue
			}
			rv := types.NullValue
			if repl != nil {
				if rv = repl(r); rv.Null {
					return rv
				}
			}
			var b strings.Builder
			n := 0
			for _, v := range av.List() {
				if v.Null {
					if rv.Null {
						continue // skipped, as CONCAT_WS skips a NULL
					}
					v = rv
				}
				if n > 0 {
					b.WriteString(s.S)
				}
				b.WriteString(v.S)
				n++
			}
			return types.StringValue(b.String())
		}}, nil

	case "MAP_KEYS", "MAP_VALUES", "MAP_ENTRIES":
		if err := wantArgs(e, xs, 1, 1); err != nil {
			return Expr{}, err
		}
		m := xs[0]
		if m.Type.Kind != types.Map {
			return Expr{}, ErrAt(e.Args[0], "%s needs a map, not %s", e.Name, m.Type)
		}
		kt, vt := *m.Type.Key, *m.Type.Elem
		var t types.Type
		part := 0 // MAP_KEYS: the keys; 1: the values; 2: the entries
		switch e.Name {
		case "MAP_KEYS":
			t = types.ArrayOf(kt)
		case "MAP_VALUES":
			t, part = types.ArrayOf(vt), 1
		default:
			t, part = types.ArrayOf(types.RowOf(types.Field{Name: "key", Type: kt}, types.Field{Name: "value", Type: vt})), 2
		}
		t.NotNull = m.Type.NotNull
		f := m.Eval
		return Expr{Type: t, Const: m.Const, Col: -1, Eval: func(r []types.Value) types.Value {
			mv := f(r)
			if mv.Null {
				return mv
			}
			l := mv.List()
			out := make([]types.Value, 0, len(l)/2)
			for i := 0; i+1 < len(l); i += 2 {
				switch part {
				case 0, 1:
					out = append(out, l[i+part])
				default:
					out = append(out, types.ListValue([]types.Value{l[i], l[i+1]}))
				}
			}
			return types.ListValue(out)
		}}, nil

	case "MAP_UNION":
		if err := wantArgs(e, xs, 1, 1<<16); err != nil {
			return Expr{}, err
		}
		kts, vts := make([]types.Type, len(xs)), make([]types.Type, len(xs))
		for i, x := range xs {
			if x.Type.Kind != types.Map {
				return Expr{}, ErrAt(e.Args[i], "MAP_UNION needs maps, not %s", x.Type)
			}
			kts[i], vts[i] = *x.Type.Key, *x.Type.Elem
		}
		kt, ok1 := CommonType(kts)
		vt, ok2 := CommonType(vts)
		if !ok1 || !ok2 || !sameRepr(kts, kt) || !sameRepr(vts, vt) {
			return Expr{}, ErrAt(e, "MAP_UNION needs maps of one type")
		}
		t := types.MapOf(kt, vt)
		t.NotNull = allNotNull(xs)
		fs := make([]EvalFn, len(xs))
		for i, x := range xs {
			fs[i] = x.Eval
		}
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			var out []types.Value
			for _, f := range fs {
				mv := f(r)
				if mv.Null {
					return mv
				}
				out = mapPut(out, mv.List())
			}
			if out == nil {
				out = []types.Value{}
			}
			return types.ListValue(out)
		}}, nil

	case "MAP_FROM_ARRAYS":
		if err := wantArgs(e, xs, 2, 2); err != nil {
			return Expr{}, err
		}
		for i := range xs {
			if err := wantArray(e, i, xs[i]); err != nil {
				return Expr{}, err
			}
		}
		t := types.MapOf(elemOf(xs[0].Type), elemOf(xs[1].Type))
		t.NotNull = allNotNull(xs)
		f, g := xs[0].Eval, xs[1].Eval
		return Expr{Type: t, Const: allKonst(xs), Col: -1, Eval: func(r []types.Value) types.Value {
			kv, vv := f(r), g(r)
			if kv.Null || vv.Null {
				return types.NullValue
			}
			ks, vs := kv.List(), vv.List()
			if len(ks) != len(vs) {
				panic(runtimeError(fmt.Sprintf("MAP_FROM_ARRAYS: the keys array has %d elements and the values array %d: they must be of the same length", len(ks), len(vs))))
			}
			pairs := make([]types.Value, 0, 2*len(ks))
			for i := range ks {
				pairs = append(pairs, ks[i], vs[i])
			}
			return types.ListValue(mapPut(nil, pairs))
		}}, nil
	}
	return Expr{}, ErrAt(e, "no function named %s", e.Name)
}

// wantArray checks that argument i of e is an array.
func wantArray(e *parser.Call, i int, x Expr) error {
	if x.Type.Kind != types.Array {
		return ErrAt(e.Args[i], "%s needs an array, not %s", e.Name, x.Type)
	}
	return nil
}

// elemOf is an array type's element type.
func elemOf(t types.Type) types.Type {
	if t.Elem == nil {
		return types.Type{}
	}
	return *t.Elem
}

// arrayFn1 is fn of a non-NULL array's elements (l may be returned by fn
// only through a new list); a NULL array gives NULL. keepNotNull: the
// result is NOT NULL when the array is.
func arrayFn1(a Expr, t types.Type, keepNotNull bool, fn func(l []types.Value) types.Value) Expr {
	f := a.Eval
	t.NotNull = keepNotNull && a.Type.NotNull
	return Expr{Type: t, Const: a.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		return fn(v.List())
	}}
}

// indexOf is the index of the first element of l equal to v, or -1.
func indexOf(l []types.Value, v types.Value) int {
	for i := range l {
		if l[i].Equal(v) {
			return i
		}
	}
	return -1
}

// appendDistinct appends the elements of l that out has not (the first
// of equal ones).
func appendDistinct(out, l []types.Value) []types.Value {
	for _, v := range l {
		if indexOf(out, v) < 0 {
			out = append(out, v)
		}
	}
	return out
}

// mapPut puts the key, value pairs of kv into the map m (a key's later
// value replaces its earlier one, in the earlier one's place).
func mapPut(m, kv []types.Value) []types.Value {
	if m == nil {
		m = make([]types.Value, 0, len(kv))
	}
pairs:
	for i := 0; i+1 < len(kv); i += 2 {
		for j := 0; j+1 < len(m); j += 2 {
			if m[j].Equal(kv[i]) {
				m[j+1] = kv[i+1]
				continue pairs
			}
		}
		m = append(m, kv[i], kv[i+1])
	}
	return m
}

// arraySlice is Flink's ARRAY_SLICE of l from start to end (1-based,
// inclusive; negative counts from the end, 0 is the first element).
func arraySlice(l []types.Value, start, end int64) []types.Value {
	n := int64(len(l))
	if n == 0 {
		return l
	}
	if start < 0 {
		start += n + 1
	}
	if end < 0 {
		end += n + 1
	}
	start = max(1, start)
	if end == 0 {
		end = 1
	} else {
		end = min(end, n)
	}
	if end < start {
		return []types.Value{}
	}
	return slices.Clone(l[start-1 : end])
}

// commonArrays brings the array arguments to one array type, their
// elements' common type.
func commonArrays(e *parser.Call, xs []Expr) ([]Expr, types.Type, error) {
	ets := make([]types.Type, len(xs))
	for i, x := range xs {
		if err := wantArray(e, i, x); err != nil {
			return nil, types.Type{}, err
		}
		ets[i] = elemOf(x.Type)
	}
	et, ok := CommonType(ets)
	if !ok || !compatibleElems(ets, et) {
		return nil, types.Type{}, ErrAt(e, "%s needs arrays of a common element type", e.Name)
	}
	out := make([]Expr, len(xs))
	for i, x := range xs {
		c, err := castArray(x, et, e.Args[i])
		if err != nil {
			return nil, types.Type{}, err
		}
		out[i] = c
	}
	return out, types.ArrayOf(et), nil
}

// compatibleElems reports whether elements of ts can be brought to et:
// scalars are cast; composite elements must have et's representation.
func compatibleElems(ts []types.Type, et types.Type) bool {
	switch et.Kind {
	case types.Array, types.Map, types.Structured, types.Multiset:
		return sameRepr(ts, et)
	}
	return true
}

// sameRepr reports whether every type of ts holds its values as t does
// (no conversion is needed between them).
func sameRepr(ts []types.Type, t types.Type) bool {
	for _, x := range ts {
		if x.Kind == types.Null {
			continue
		}
		if x.Kind != t.Kind || (x.Kind == types.Decimal && (x.Scale != t.Scale || x.BigDecimal() != t.BigDecimal())) {
			return false
		}
		switch x.Kind {
		case types.Array, types.Multiset:
			if !sameRepr([]types.Type{elemOf(x)}, elemOf(t)) {
				return false
			}
		case types.Map:
			if !sameRepr([]types.Type{*x.Key}, *t.Key) || !sameRepr([]types.Type{*x.Elem}, *t.Elem) {
				return false
			}
		case types.Structured:
			if len(x.Fields) != len(t.Fields) {
				return false
			}
			for i := range x.Fields {
				if !sameRepr([]types.Type{x.Fields[i].Type}, t.Fields[i].Type) {
					return false
				}
			}
		}
	}
	return true
}

// castArray casts the array x to an array of et, element by element (CAST
// of a whole array does not convert its elements).
func castArray(x Expr, et types.Type, at parser.Expr) (Expr, error) {
	from := elemOf(x.Type)
	t := types.ArrayOf(et)
	t.NotNull = x.Type.NotNull
	if x.Type.Kind == types.Null {
		return Expr{Type: t.Nullable(), Const: x.Const, Col: -1, Eval: x.Eval}, nil
	}
	if sameRepr([]types.Type{from}, et) {
		x.Type, x.Col, x.whole = t, -1, nil
		return x, nil
	}
	fn, err := CastFn(from, et)
	if err != nil {
		return Expr{}, ErrAt(at, "%v", err)
	}
	f := x.Eval
	return Expr{Type: t, Const: x.Const, Col: -1, Eval: func(r []types.Value) types.Value {
		v := f(r)
		if v.Null {
			return v
		}
		l := v.List()
		out := make([]types.Value, len(l))
		for i, e := range l {
			out[i] = fn(e)
		}
		return types.ListValue(out)
	}}, nil
}

// formatMultiset prints a MULTISET as Flink does, as the map of each
// element to its count ({a=2, b=1}), the elements in the order they first
// appear in l.
func formatMultiset(l []types.Value, et types.Type) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, v := range l {
		if indexOf(l[:i], v) >= 0 {
			continue
		}
		n := 0
		for _, w := range l[i:] {
			if w.Equal(v) {
				n++
			}
		}
		if b.Len() > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s=%d", FormatValue(v, et), n)
	}
	b.WriteByte('}')
	return b.String()
}
