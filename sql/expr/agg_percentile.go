package expr

import (
	"math"
	"slices"
	"sort"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// PERCENTILE(x, percentage [, frequency]), as Flink 1.20's
// PercentileAggFunction: the exact percentile of the non-NULL values of x
// (numeric, taken as DOUBLE), interpolated linearly between the two
// nearest values: with n values sorted, percentage p is at the 1-based
// position p*(n-1)+1. A percentage is a constant in [0, 1]; an ARRAY of
// them gives an ARRAY of the percentiles (NULL for an empty array). The
// frequency, an integer, counts the row's x that many times; a row whose
// frequency is NULL or not positive is skipped, when added and when
// retracted. The result is NULL while the values' total count is not
// positive.
//
// The accumulator is one slot (after the multiset of distinct values when
// DISTINCT): the values with their counts, [v0, n0, v1, n1, ...] sorted
// by v, as Flink's map of value to count. As Flink's, a count may go
// negative (a value retracted more often than added) and is dropped at 0.
// With a frequency, the argument is the pair (x, frequency).
//
// Where weir differs: the percentage must be a constant (Flink takes the
// first row's value of an expression); DISTINCT with a frequency is
// refused; a NaN value is skipped (Flink counts it, after every number),
// and -0.0 is 0.0.

const aggPercentile AggKind = 140

// percentile is a PERCENTILE call's constant arguments.
type percentile struct {
	pcts  []float64
	order []int // the indexes of pcts by ascending percentage
	array bool  // the percentage is an ARRAY: so is the result
	freq  bool  // the argument is the pair (x, frequency)
}

func init() { AggregateNames["PERCENTILE"] = true }

// compilePercentile compiles PERCENTILE; ok is false for other names.
func compilePercentile(a *AggCall, c *parser.Call, ec *Compiler) (*AggCall, bool, error) {
	if c.Name != "PERCENTILE" {
		return nil, false, nil
	}
	if c.Star || len(c.Args) < 2 || len(c.Args) > 3 || c.Nulls != "" {
		return nil, true, ErrAt(c, "PERCENTILE takes an expression, a percentage and optionally a frequency: PERCENTILE(expr, percentage[, frequency])")
	}
	xs, err := ec.compileAll(c.Args...)
	if err != nil {
		return nil, true, err
	}
	x, pc := xs[0], xs[1]
	if !x.Type.IsNumeric() && x.Type.Kind != types.Null {
		return nil, true, ErrAt(c.Args[0], "PERCENTILE needs a numeric expression, not %s", x.Type)
	}
	pl := &percentile{}
	if !pc.Const {
		return nil, true, ErrAt(c.Args[1], "PERCENTILE's percentage must be a constant (or an ARRAY of constants)")
	}
	pv := pc.Eval(nil)
	switch {
	case pc.Type.IsNumeric():
		f, err := pctValue(pv, pc.Type, c.Args[1])
		if err != nil {
			return nil, true, err
		}
		pl.pcts = []float64{f}
	case pc.Type.Kind == types.Array && pc.Type.Elem != nil && pc.Type.Elem.IsNumeric():
		if pv.Null {
			return nil, true, ErrAt(c.Args[1], "PERCENTILE's percentage must not be NULL")
		}
		pl.array = true
		for _, e := range pv.List() {
			f, err := pctValue(e, *pc.Type.Elem, c.Args[1])
			if err != nil {
				return nil, true, err
			}
			pl.pcts = append(pl.pcts, f)
		}
	default:
		return nil, true, ErrAt(c.Args[1], "PERCENTILE's percentage must be a number in [0.0, 1.0] or an ARRAY of them, not %s", pc.Type)
	}
	pl.order = make([]int, len(pl.pcts))
	for i := range pl.order {
		pl.order[i] = i
	}
	sort.SliceStable(pl.order, func(i, j int) bool { return pl.pcts[pl.order[i]] < pl.pcts[pl.order[j]] })
	if a.toS, err = CastFn(x.Type, types.DoubleType); err != nil {
		return nil, true, ErrAt(c, "%v", err)
	}
	a.Kind, a.Arg, a.ArgT, a.ArgCol = aggPercentile, x.Eval, x.Type, x.Col
	a.pctl = pl
	a.OutT = types.DoubleType
	if pl.array {
		a.OutT = types.ArrayOf(types.DoubleType)
	}
	if len(xs) == 3 {
		f := xs[2]
		if !f.Type.IsInteger() && f.Type.Kind != types.Null {
			return nil, true, ErrAt(c.Args[2], "PERCENTILE's frequency must be an integer, not %s", f.Type)
		}
		if a.Distinct {
			return nil, true, ErrAt(c, "PERCENTILE with DISTINCT and a frequency is not supported")
		}
		pl.freq = true
		a.respectNulls = true // the pair is never NULL; its parts may be
		xe, fe := x.Eval, f.Eval
		a.Arg, a.ArgCol = func(r []types.Value) types.Value {
			return types.ListValue([]types.Value{xe(r), fe(r)})
		}, -1
		return a, true, nil
	}
	if a.Distinct {
		if a.cmp = Comparator(x.Type, x.Type); a.cmp == nil {
			return nil, true, ErrAt(c, "DISTINCT on %s is not supported", x.Type)
		}
	}
	return a, true, nil
}

// pctValue is a percentage's value, checked as Flink checks it.
func pctValue(v types.Value, t types.Type, at parser.Expr) (float64, error) {
	if v.Null {
		return 0, ErrAt(at, "PERCENTILE's percentage must not be NULL")
	}
	to, err := CastFn(t, types.DoubleType)
	if err != nil {
		return 0, ErrAt(at, "%v", err)
	}
	f := to(v).Float()
	if !(f >= 0 && f <= 1) {
		return 0, ErrAt(at, "Percentage of PERCENTILE should be between [0.0, 1.0], but was '%v'.", f)
	}
	return f, nil
}

// percentileSlot is where the values are (after the multiset of distinct
// values when DISTINCT).
func (a *AggCall) percentileSlot() int {
	if a.Distinct {
		return a.slot + 1
	}
	return a.slot
}

func (a *AggCall) percentileSlots() int {
	if a.Distinct {
		return 2
	}
	return 1
}

// accumulatePercentile adds (sign 1) or retracts (sign -1) the value v,
// or the pair (x, frequency).
func (a *AggCall) accumulatePercentile(acc []types.Value, v types.Value, sign int64) {
	n := sign
	if a.pctl.freq {
		p := v.List()
		v = p[0]
		if p[1].Null || p[1].I <= 0 {
			return
		}
		n *= p[1].I
	}
	if v.Null {
		return
	}
	s := a.percentileSlot()
	acc[s] = countAdd(acc[s], a.toS(v).Float(), n)
}

// mergePercentile folds src's values into dst's.
func (a *AggCall) mergePercentile(dst, src []types.Value) {
	if a.Distinct {
		for _, e := range pairs(src[a.slot]) {
			var first bool
			if dst[a.slot], first = multisetAdd(dst[a.slot], e[0], e[1].I, a.cmp); first {
				a.accumulatePercentile(dst, e[0], 1)
			}
		}
		return
	}
	s := a.slot
	l := src[s].List()
	for i := 0; i+1 < len(l); i += 2 {
		dst[s] = countAdd(dst[s], l[i].Float(), l[i+1].I)
	}
}

// resultPercentile is the percentile (or the ARRAY of them), walking the
// sorted values once for all the percentages, as Flink's getValue.
func (a *AggCall) resultPercentile(acc []types.Value) types.Value {
	l := acc[a.percentileSlot()].List()
	var total int64
	for i := 1; i < len(l); i += 2 {
		total += l[i].I
	}
	pl := a.pctl
	if total <= 0 || len(pl.pcts) == 0 {
		return types.NullValue
	}
	out := make([]types.Value, len(pl.pcts))
	k := len(l) / 2
	j, pre := 0, l[1].I
	for _, i := range pl.order {
		pos := pl.pcts[i]*float64(total-1) + 1
		lower, higher := math.Floor(pos), math.Ceil(pos)
		for float64(pre) < lower && j+1 < k {
			j++
			pre += l[2*j+1].I
		}
		if float64(pre) >= higher || j+1 >= k {
			out[i] = l[2*j]
			continue
		}
		out[i] = types.FloatValue((higher-pos)*l[2*j].Float() + (pos-lower)*l[2*j+2].Float())
	}
	if !pl.array {
		return out[0]
	}
	return types.ListValue(out)
}

// countAdd adds n to x's count in the sorted [v0, n0, v1, n1, ...] of
// set, in place, dropping a count that reaches 0 (one may go negative, as
// in Flink's map of counts).
func countAdd(set types.Value, x float64, n int64) types.Value {
	if x == 0 {
		x = 0 // -0.0 counts as 0.0
	}
	l := set.List()
	k := len(l) / 2
	i := sort.Search(k, func(i int) bool { return l[2*i].Float() >= x })
	if i < k && l[2*i].Float() == x {
		if c := l[2*i+1].I + n; c != 0 {
			l[2*i+1] = types.IntValue(c)
			return types.ListValue(l)
		}
		return types.ListValue(slices.Delete(l, 2*i, 2*i+2))
	}
	if n == 0 || x != x {
		return set // NaN has no place in the order
	}
	l = slices.Insert(l, 2*i, types.FloatValue(x), types.IntValue(n))
	return types.ListValue(l)
}
