package planner

import (
	"fmt"
	"github.com/weirstream/weir/internal/keygroup"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The split of distinct aggregates: Flink's
// table.optimizer.distinct-agg.split.enabled (SplitAggregateRule). A
// group aggregation with a DISTINCT call keeps each group's distinct
// values on one subtask: a hot group (Nexmark q15/q16 count the distinct
// bidders and auctions of a day) is one subtask's work. With the option
// on, it becomes two aggregations:
//
//	SELECT day, COUNT(DISTINCT user_id) FROM T GROUP BY day
//
// is planned as
//
//	SELECT day, SUM0(cnt) FROM (
//	  SELECT day, COUNT(DISTINCT user_id) AS cnt FROM T
//	  GROUP BY day, MOD(HASH_CODE(user_id), 1024))
//	GROUP BY day
//
// The inner (partial) aggregation spreads a day over the buckets
// (table.optimizer.distinct-agg.split.bucket-num, 1024 as Flink): a value
// always falls in the same bucket, so the distinct values of the buckets
// are disjoint and their counts add up. The outer (final) aggregation
// combines the partials: SUM0 of COUNTs, SUM of SUMs, SUM0 of SUM0s, MIN
// of MINs, MAX of MAXs, and AVG as SUM0 of the partial sums over SUM0 of
// the partial counts. The inner aggregation updates its partials (-U/+U),
// so the outer one retracts them.
//
// As Flink's rule, a DISTINCT call and a MIN or MAX call bucket by the
// hash of their argument (MIN and MAX so that a retracting MIN/MAX is
// spread too); the other calls (COUNT(*), non-distinct COUNT, SUM, AVG)
// need no bucket of their own. When the calls bucket by more than one
// argument, each input row is expanded into one row per grouping (an
// Expand, Flink's $e): the bucket columns the grouping does not use are
// NULL, $e numbers the grouping, and each call counts only its grouping's
// rows (its FILTER is ANDed with $e = n). The split applies when every
// call is one of those functions; any other leaves the plan unchanged, as
// Flink's rule does not match a user-defined aggregate either. Flink also
// splits FIRST_VALUE, LAST_VALUE, LISTAGG and SINGLE_VALUE (the final
// FIRST_VALUE is the first partial to arrive, which over parallel
// subtasks need not be the first row's; LISTAGG's order follows the
// buckets); weir does not, so that the split does not change a result. Window aggregations are not
// split (Flink splits those of event-time window TVFs).
//
// Where weir differs from Flink: the inner aggregation's group includes
// $e (Flink relies on the filters alone); a bucket is a hash of weir's
// value encoding (floating point zeros made one, as weir's DISTINCT
// compares them), not Java's hashCode; an argument whose values weir's
// DISTINCT compares other than by that encoding (floating point inside a
// ROW or ARRAY, MAP, MULTISET) leaves the plan unchanged; the partial
// sum of AVG is accumulated as AVG's own sum type (BIGINT for integers),
// so it cannot overflow where AVG would not. With mini-batch, Flink runs
// both aggregations in two phases (and fuses the partial's global phase
// with the final's local one: IncrementalGroupAggregate); weir runs the
// inner one in two phases under the same rule as any aggregation (an
// insert-only input, and agg-phase-strategy TWO_PHASE, since AUTO keeps
// DISTINCT calls in one phase), and the outer one, whose input updates,
// in one phase with mini-batch.

const (
	distinctSplitEnabled = "table.optimizer.distinct-agg.split.enabled"
	distinctSplitBuckets = "table.optimizer.distinct-agg.split.bucket-num"
)

// distinctSplit is the number of buckets of the split of distinct
// aggregates, 0 when it is off.
func (s *Session) distinctSplit(pos parser.Pos) (int, error) {
	on, ok := s.sets[distinctSplitEnabled]
	if !ok || strings.EqualFold(on, "false") {
		return 0, nil
	}
	if !strings.EqualFold(on, "true") {
		return 0, parser.Errorf(pos, "'%s' = '%s': want true or false", distinctSplitEnabled, on)
	}
	n := 1024
	if v, ok := s.sets[distinctSplitBuckets]; ok {
		var err error
		if n, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || n <= 0 {
			return 0, parser.Errorf(pos, "'%s' = '%s': want a positive number of buckets", distinctSplitBuckets, v)
		}
	}
	return n, nil
}

// splitDistinctAgg plans the group aggregation of from by keys (keyText
// as written) computing calls (asts as written, calls compiled against
// from) into out, split into a partial and a final aggregation, or
// returns nil when the split is off or does not apply.
func (p *planner) splitDistinctAgg(pos parser.Pos, from *rel, keys []expr.Expr, keyText []string, asts []*parser.Call, calls []*expr.AggCall, out *expr.Scope) (*rel, error) {
	nb, err := p.s.distinctSplit(pos)
	if err != nil || nb == 0 || len(asts) != len(calls) {
		return nil, err
	}
	distinct := false
	for _, c := range calls {
		if c.SplitName() == "" {
			return nil, nil // Flink: every call must split
		}
		distinct = distinct || c.Distinct
	}
	if !distinct {
		return nil, nil
	}
	mb, err := p.s.miniBatch(pos)
	if err != nil {
		return nil, err
	}
	funcs := p.s.cat.functions()
	nk, nIn := len(keys), len(from.sc.Cols)

	// the hash fields: the arguments that DISTINCT, MIN and MAX calls
	// bucket by (not a group key: its bucket would add nothing)
	type hashField struct {
		text string
		arg  expr.EvalFn
		t    types.Type
	}
	var hf []hashField
	field := make([]int, len(calls)) // the call's hash field, -1: none
	for i, c := range calls {
		field[i] = -1
		name := c.SplitName()
		if !c.Distinct && name != "MIN" && name != "MAX" || name == "COUNT(*)" {
			continue
		}
		text := argText(asts[i])
		if slices.Contains(keyText, text) {
			continue
		}
		if !bucketable(c.ArgT) {
			return nil, nil
		}
		j := slices.IndexFunc(hf, func(h hashField) bool { return h.text == text })
		if j < 0 {
			j = len(hf)
			hf = append(hf, hashField{text: text, arg: c.Arg, t: c.ArgT})
		}
		field[i] = j
	}
	if len(hf) == 0 {
		return nil, nil // all distinct arguments are group keys
	}
	// the groupings (by hash field, -1: the keys alone), in the order of
	// the calls; more than one hash field needs an Expand
	var groupings []int
	for _, j := range field {
		if !slices.Contains(groupings, j) {
			groupings = append(groupings, j)
		}
	}
	expand := len(hf) > 1
	bucketT := types.Type{Kind: types.Int}
	bucketText := make([]string, len(hf))
	buckets := make([]expr.EvalFn, len(hf))
	for j, h := range hf {
		bucketText[j] = fmt.Sprintf("MOD(HASH_CODE(%s), %d)", h.text, nb)
		buckets[j] = bucketFn(h.arg, h.t, nb)
	}

	// the partial aggregation's input and group keys
	in := from
	innerKeys := slices.Clone(keys)
	innerKeyText := slices.Clone(keyText)
	innerSc := &expr.Scope{}
	for i := range keys {
		innerSc.Cols = append(innerSc.Cols, out.Cols[i])
	}
	eCol := -1
	if !expand {
		innerKeys = append(innerKeys, expr.Expr{Type: bucketT, Col: -1, Eval: buckets[0]})
		innerKeyText = append(innerKeyText, bucketText[0])
		innerSc.Cols = append(innerSc.Cols, expr.Column{Name: fmt.Sprintf("$f%d", nIn), Type: bucketT})
	} else {
		in = splitExpandRel(from, groupings, buckets, bucketT, bucketText)
		for j := range hf {
			name := in.sc.Cols[nIn+j].Name
			innerKeys = append(innerKeys, expr.ColRef(nIn+j, bucketT))
			innerKeyText = append(innerKeyText, name)
			innerSc.Cols = append(innerSc.Cols, expr.Column{Name: name, Type: bucketT})
		}
		eCol = nIn + len(hf)
		innerKeys = append(innerKeys, expr.ColRef(eCol, in.sc.Cols[eCol].Type))
		innerKeyText = append(innerKeyText, "$e")
		innerSc.Cols = append(innerSc.Cols, in.sc.Cols[eCol])
	}

	// the partial calls: each call as written (AVG as SUM0 and COUNT), its
	// FILTER ANDed with its grouping's $e when expanded
	eRef := &parser.Ident{Pos: pos, Parts: []string{"$e"}}
	iec := &expr.Compiler{Funcs: funcs, Scope: in.sc, What: "an aggregate's argument", Subst: func(e parser.Expr) (expr.Expr, bool, error) {
		if e == parser.Expr(eRef) {
			return expr.ColRef(eCol, in.sc.Cols[eCol].Type), true, nil
		}
		return expr.Expr{}, false, nil
	}}
	var partials []*expr.AggCall
	var partialText []string
	first := make([]int, len(calls)) // the call's first partial
	for i, c := range calls {
		a := asts[i]
		filter := a.Filter
		if expand {
			e := slices.Index(groupings, field[i])
			var eq parser.Expr = &parser.Binary{Pos: a.Pos, Op: "=", L: eRef, R: &parser.Literal{Pos: a.Pos, Kind: parser.NumberLit, Text: strconv.Itoa(e)}}
			if filter != nil {
				eq = &parser.Binary{Pos: a.Pos, Op: "AND", L: filter, R: eq}
			}
			filter = eq
		}
		var pcs []*parser.Call
		if c.SplitName() == "AVG" {
			sum := &parser.Call{Pos: a.Pos, Name: "SUM0", Args: []parser.Expr{&parser.Cast{Pos: a.Pos, X: a.Args[0], Type: c.SumType()}}, Distinct: a.Distinct, Filter: filter}
			cnt := &parser.Call{Pos: a.Pos, Name: "COUNT", Args: a.Args, Distinct: a.Distinct, Filter: filter}
			pcs = []*parser.Call{sum, cnt}
		} else {
			pc := *a
			pc.Filter = filter
			pcs = []*parser.Call{&pc}
		}
		first[i] = len(partials)
		for _, pc := range pcs {
			pa, err := expr.CompileAgg(pc, iec, in.mode != types.InsertOnly)
			if err != nil {
				return nil, err
			}
			partialText = append(partialText, fmt.Sprintf("%s AS $p%d", parser.ExprString(pc), len(partials)))
			partials = append(partials, pa)
		}
	}
	nik := len(innerKeys)
	for k, pa := range partials {
		innerSc.Cols = append(innerSc.Cols, expr.Column{Name: fmt.Sprintf("$p%d", k), Type: pa.OutT})
	}
	innerLayout := expr.NewAggLayout(nik, partials)
	inner := splitAggRel(p, in, innerKeys, innerKeyText, innerLayout, innerSc, partialText, "PARTIAL", mb)

	// the final calls over the partials
	pRefs := make([]*parser.Ident, len(partials))
	for k := range partials {
		pRefs[k] = &parser.Ident{Pos: pos, Parts: []string{fmt.Sprintf("$p%d", k)}}
	}
	fec := &expr.Compiler{Funcs: funcs, Scope: innerSc, What: "an aggregate's argument", Subst: func(e parser.Expr) (expr.Expr, bool, error) {
		if id, ok := e.(*parser.Ident); ok {
			if k := slices.Index(pRefs, id); k >= 0 {
				return expr.ColRef(nik+k, partials[k].OutT), true, nil
			}
		}
		return expr.Expr{}, false, nil
	}}
	var finals []*expr.AggCall
	var finalText []string
	outerSc := &expr.Scope{Cols: slices.Clone(out.Cols[:nk])}
	hasAvg := false
	for i, c := range calls {
		name := c.SplitName()
		fn := map[string]string{"COUNT": "SUM0", "COUNT(*)": "SUM0", "SUM": "SUM", "SUM0": "SUM0", "MIN": "MIN", "MAX": "MAX", "AVG": "SUM0"}[name]
		n := 1
		if name == "AVG" {
			n, hasAvg = 2, true
		}
		for k := first[i]; k < first[i]+n; k++ {
			fc := &parser.Call{Pos: asts[i].Pos, Name: fn, Args: []parser.Expr{pRefs[k]}}
			fa, err := expr.CompileAgg(fc, fec, true)
			if err != nil {
				return nil, err
			}
			if name != "AVG" && fa.OutT.String() != c.OutT.String() {
				return nil, nil // not the call's type: leave it unsplit
			}
			finalText = append(finalText, parser.ExprString(fc))
			finals = append(finals, fa)
			outerSc.Cols = append(outerSc.Cols, expr.Column{Name: fmt.Sprintf("$f%d", len(outerSc.Cols)), Type: fa.OutT})
		}
	}
	keyRefs := make([]expr.Expr, nk)
	for i := range keys {
		keyRefs[i] = expr.ColRef(i, keys[i].Type)
	}
	outerLayout := expr.NewAggLayout(nk, finals)
	if !hasAvg {
		outerSc = out
	}
	outer := splitAggRel(p, inner, keyRefs, keyText, outerLayout, outerSc, finalText, "FINAL", mb)
	if !hasAvg {
		return outer, nil
	}
	// AVG: the final sum over the final count, as AVG computes it
	pr := &projection{}
	for i := range keys {
		pr.names = append(pr.names, out.Cols[i].Name)
		pr.exprs = append(pr.exprs, expr.ColRef(i, out.Cols[i].Type))
	}
	col := nk
	var desc []string
	for i, c := range calls {
		pr.names = append(pr.names, out.Cols[nk+i].Name)
		if c.SplitName() != "AVG" {
			pr.exprs = append(pr.exprs, expr.ColRef(col, out.Cols[nk+i].Type))
			desc = append(desc, outerSc.Cols[col].Name)
			col++
			continue
		}
		s, n, avg := col, col+1, c
		pr.exprs = append(pr.exprs, expr.Expr{Type: c.OutT, Col: -1, Eval: func(r []types.Value) types.Value {
			return avg.AvgResult(r[s], r[n].I)
		}})
		desc = append(desc, fmt.Sprintf("IF(=(%s, 0), null, /(%s, %s))", outerSc.Cols[n].Name, outerSc.Cols[s].Name, outerSc.Cols[n].Name))
		col += 2
	}
	return calcRel(outer, nil, pr, "Calc(select=["+strings.Join(append(slices.Clone(keyText), desc...), ", ")+"])"), nil
}

// splitAggRel is the partial or final group aggregation of a split,
// mini-batched and in two phases as any group aggregation would be.
func splitAggRel(p *planner, in *rel, keys []expr.Expr, keyText []string, layout *expr.AggLayout, out *expr.Scope, callText []string, kind string, mb int) *rel {
	two := p.twoPhase(in, layout, mb)
	head := fmt.Sprintf("groupBy=[%s], partialFinalType=[%s], select=[%s]", strings.Join(keyText, ", "), kind, strings.Join(callText, ", "))
	text := "GroupAggregate(" + head + ")"
	switch {
	case two:
		if mb <= 0 {
			mb = 1024
		}
		text = fmt.Sprintf("GlobalGroupAggregate(%s, local=[LocalGroupAggregate], miniBatch=[size=%d])", head, mb)
	case mb > 0:
		text = fmt.Sprintf("GroupAggregate(%s, miniBatch=[size=%d])", head, mb)
	}
	return groupAggRel(in, keys, layout, out, text, mb, two)
}

// argText is the argument of an aggregate call as written (COUNT(DISTINCT
// a, b) counts ROW(a, b)).
func argText(c *parser.Call) string {
	if len(c.Args) == 1 {
		return parser.ExprString(c.Args[0])
	}
	return parser.ExprString(&parser.Call{Pos: c.Pos, Name: "ROW", Args: c.Args})
}

// splitExpandRel is the split's Expand: each row of from once per
// grouping (a hash field's index, -1: none), with the bucket columns (the
// grouping's bucket, NULL for the others) and $e, the grouping's number.
func splitExpandRel(from *rel, groupings []int, buckets []expr.EvalFn, bucketT types.Type, bucketText []string) *rel {
	nIn := len(from.sc.Cols)
	cols := make([]expr.Column, len(buckets))
	var proj []string
	for j := range buckets {
		cols[j] = expr.Column{Name: fmt.Sprintf("$f%d", nIn+j), Type: bucketT}
		proj = append(proj, bucketText[j]+" AS "+cols[j].Name)
	}
	sets := make([][]int, len(groupings))
	var text []string
	for e, j := range groupings {
		if j < 0 {
			text = append(text, "{}")
			continue
		}
		sets[e] = []int{j}
		text = append(text, "{"+cols[j].Name+"}")
	}
	op := fmt.Sprintf("Expand(buckets=[%s], groupings=[%s])", strings.Join(proj, ", "), strings.Join(text, ", "))
	return expandRel(from, cols, buckets, sets, op)
}

// bucketable reports whether values of t that weir's DISTINCT, MIN and
// MAX take as equal always have the same bucket: those whose value
// encoding (types.Key) is equal exactly when they are, and floating point
// numbers (bucketFn makes their zeros one). Composites holding floating
// point, and MAP and MULTISET (whose equality may not follow the order of
// their entries), are not.
func bucketable(t types.Type) bool {
	switch t.Kind {
	case types.Map, types.Multiset:
		return false
	case types.Float, types.Double:
		return true
	}
	return noFloats(t)
}

func noFloats(t types.Type) bool {
	switch t.Kind {
	case types.Float, types.Double, types.Map, types.Multiset:
		return false
	case types.Array:
		return t.Elem != nil && noFloats(*t.Elem)
	case types.Structured:
		for _, f := range t.Fields {
			if !noFloats(f.Type) {
				return false
			}
		}
	}
	return true
}

// bucketFn is MOD(HASH_CODE(arg), n) for the split: a bucket in [0, n)
// from a hash of the value (NULL for NULL), the same for equal values on
// every subtask and in every run (it is part of the partial
// aggregation's key in state).
func bucketFn(arg expr.EvalFn, t types.Type, n int) expr.EvalFn {
	un := uint64(n)
	switch {
	case t.Kind == types.Float || t.Kind == types.Double:
		return func(r []types.Value) types.Value {
			v := arg(r)
			if v.Null {
				return types.NullValue
			}
			f := v.Float()
			switch {
			case f == 0:
				f = 0 // -0 is 0
			case f != f:
				f = math.NaN()
			}
			return types.IntValue(int64(keygroup.Mix64(math.Float64bits(f)) % un))
		}
	case t.BigDecimal(), t.Kind == types.Array, t.Kind == types.Structured:
		// two forms of a big decimal, composites: their encoding
		return func(r []types.Value) types.Value {
			v := arg(r)
			if v.Null {
				return types.NullValue
			}
			return types.IntValue(int64(keygroup.Mix64(strHash(types.Key([]types.Value{v}))) % un))
		}
	}
	return func(r []types.Value) types.Value {
		v := arg(r)
		if v.Null {
			return types.NullValue
		}
		return types.IntValue(int64(keygroup.Mix64(uint64(v.I)^strHash(v.S)) % un))
	}
}

// strHash is FNV-1a.
func strHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
