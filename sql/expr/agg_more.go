package expr

import (
	"fmt"
	"math"
	"strings"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// FIRST_VALUE, LAST_VALUE, LISTAGG and the variances, as Flink has them.
//
// FIRST_VALUE and LAST_VALUE are the first and last non-NULL argument by
// arrival (Flink's FirstValueAggFunction, LastValueAggFunction); LISTAGG
// joins the non-NULL strings in arrival order with its separator (',' by
// default). Over an updating input they keep every value in arrival order
// and a retraction removes the value's earliest occurrence, as Flink's
// ...WithRetractAggFunction variants do.
//
// VAR_POP, VAR_SAMP (VARIANCE), STDDEV_POP, STDDEV_SAMP (STDDEV) are what
// Flink's planner rewrites them to (Calcite's AggregateReduceFunctionsRule):
// sums of x and x*x and a count, evaluated in the argument's type — so an
// integer argument gives an integer result with integer divisions, and
// the SAMP forms are NULL for fewer than two values. A DECIMAL argument is
// computed in DOUBLE and gives DOUBLE (Flink's result is a DECIMAL).

const (
	aggFirst AggKind = iota + 100
	aggLast
	aggListAgg
	aggVarPop
	aggVarSamp
	aggStddevPop
	aggStddevSamp
	aggJSONArray  // JSON_ARRAYAGG (json_agg.go)
	aggJSONObject // JSON_OBJECTAGG (json_agg.go)
)

var moreAggKinds = map[string]AggKind{
	"FIRST_VALUE": aggFirst, "LAST_VALUE": aggLast, "LISTAGG": aggListAgg,
	"VAR_POP": aggVarPop, "VAR_SAMP": aggVarSamp, "VARIANCE": aggVarSamp,
	"STDDEV_POP": aggStddevPop, "STDDEV_SAMP": aggStddevSamp, "STDDEV": aggStddevSamp,
}

func isVariance(k AggKind) bool { return k >= aggVarPop && k <= aggStddevSamp }

// compileMoreAgg compiles the aggregates of this file; ok is false for
// other names.
func compileMoreAgg(a *AggCall, c *parser.Call, ec *Compiler) (*AggCall, bool, error) {
	if m, ok, err := compileJSONAgg(a, c, ec); ok {
		return m, true, err
	}
	if m, ok, err := compileCollectAgg(a, c, ec); ok {
		return m, true, err // agg_collect.go
	}
	if m, ok, err := compilePercentile(a, c, ec); ok {
		return m, true, err // agg_percentile.go
	}
	kind, ok := moreAggKinds[c.Name]
	if !ok {
		return nil, false, nil
	}
	name := c.Name
	if c.Star {
		return nil, true, ErrAt(c, "%s(*) is not allowed", name)
	}
	hi := 1
	if kind == aggListAgg {
		hi = 2
	}
	if len(c.Args) < 1 || len(c.Args) > hi {
		if hi == 1 {
			return nil, true, ErrAt(c, "%s takes one argument", name)
		}
		return nil, true, ErrAt(c, "%s takes one or two arguments", name)
	}
	if c.Distinct && !isVariance(kind) {
		return nil, true, ErrAt(c, "DISTINCT is not allowed in %s", name)
	}
	arg, err := ec.Compile(c.Args[0])
	if err != nil {
		return nil, true, err
	}
	a.Kind, a.Arg, a.ArgT, a.ArgCol = kind, arg.Eval, arg.Type, arg.Col
	switch {
	case kind == aggFirst || kind == aggLast:
		a.OutT = arg.Type.Nullable()
		a.OutT.TimeAttr = 0
		a.cmp = Comparator(arg.Type, arg.Type)
		if a.cmp == nil && a.Retract {
			return nil, true, ErrAt(c, "%s of %s over an updating input is not supported", name, arg.Type)
		}
	case kind == aggListAgg:
		if !arg.Type.IsString() && arg.Type.Kind != types.Null {
			return nil, true, ErrAt(c.Args[0], "LISTAGG needs a string argument, not %s", arg.Type)
		}
		a.sep = ","
		if len(c.Args) == 2 {
			sep, err := ec.Compile(c.Args[1])
			if err != nil {
				return nil, true, err
			}
			if !sep.Const || !sep.Type.IsString() {
				return nil, true, ErrAt(c.Args[1], "LISTAGG's separator must be a string literal")
			}
			v := sep.Eval(nil)
			if v.Null {
				return nil, true, ErrAt(c.Args[1], "LISTAGG's separator must not be NULL")
			}
			a.sep = v.S
		}
		a.OutT = types.StringType
		a.cmp = Comparator(types.StringType, types.StringType)
	default:
		if !arg.Type.IsNumeric() {
			return nil, true, ErrAt(c, "%s needs a numeric argument, not %s", name, arg.Type)
		}
		t := arg.Type.Nullable()
		t.TimeAttr = 0
		a.OutT = t
		if t.IsInteger() {
			a.sumT = types.BigIntType
		} else {
			a.sumT = types.DoubleType
			a.OutT = types.DoubleType
			if t.Kind == types.Float {
				a.OutT = t
			}
		}
		if a.toS, err = CastFn(arg.Type, a.sumT); err != nil {
			return nil, true, ErrAt(c, "%v", err)
		}
		if c.Distinct {
			a.cmp = Comparator(arg.Type, arg.Type)
		}
	}
	return a, true, nil
}

// moreSlots is the number of accumulator slots of the kinds of this file.
func (a *AggCall) moreSlots() int {
	switch {
	case isJSONAgg(a.Kind):
		return 1 // the values' JSON texts (json_agg.go)
	case isCollectAgg(a.Kind):
		return a.collectSlots() // agg_collect.go
	case a.Kind == aggPercentile:
		return a.percentileSlots() // agg_percentile.go
	case isVariance(a.Kind):
		if a.Distinct {
			return 4 // the multiset of values, then sum, sum of squares, count
		}
		return 3
	case a.Retract:
		return 1 // the values in arrival order
	case a.Kind == aggListAgg:
		return 1 // the joined string, I = 1 once a value is in
	}
	return 2 // the value, and whether it is set
}

// varSlot is where a variance's sums are (after the multiset when DISTINCT).
func (a *AggCall) varSlot() int {
	if a.Distinct {
		return a.slot + 1
	}
	return a.slot
}

// accumulateMore adds (sign 1) or retracts (sign -1) the non-NULL v.
func (a *AggCall) accumulateMore(acc []types.Value, v types.Value, sign int64) {
	s := a.slot
	if isJSONAgg(a.Kind) {
		a.accumulateJSON(acc, v, sign)
		return
	}
	if isCollectAgg(a.Kind) {
		a.accumulateCollect(acc, v, sign)
		return
	}
	if a.Kind == aggPercentile {
		a.accumulatePercentile(acc, v, sign)
		return
	}
	if isVariance(a.Kind) {
		vs := a.varSlot()
		x := a.toS(v)
		if a.sumT.Kind == types.BigInt {
			acc[vs].I += sign * x.I
			acc[vs+1].I += sign * x.I * x.I
		} else {
			f := x.Float()
			acc[vs] = types.FloatValue(acc[vs].Float() + float64(sign)*f)
			acc[vs+1] = types.FloatValue(acc[vs+1].Float() + float64(sign)*f*f)
		}
		acc[vs+2].I += sign
		return
	}
	if a.Retract {
		l := acc[s].List()
		if sign > 0 {
			acc[s] = types.ListValue(append(l, v))
			return
		}
		for i := range l {
			if a.cmp(l[i], v) == 0 {
				copy(l[i:], l[i+1:])
				l[len(l)-1] = types.Value{}
				acc[s] = types.ListValue(l[:len(l)-1])
				return
			}
		}
		return // retracting a value that is not there
	}
	switch a.Kind {
	case aggFirst:
		if acc[s+1].I == 0 {
			acc[s], acc[s+1] = v, types.IntValue(1)
		}
	case aggLast:
		acc[s], acc[s+1] = v, types.IntValue(1)
	case aggListAgg:
		if acc[s].I == 0 {
			acc[s] = types.Value{I: 1, S: v.S}
		} else {
			acc[s].S += a.sep + v.S
		}
	}
}

// mergeMore folds src into dst (session windows: LISTAGG and the
// variances; MergeErr refuses FIRST_VALUE and LAST_VALUE).
func (a *AggCall) mergeMore(dst, src []types.Value) {
	s := a.slot
	if isJSONAgg(a.Kind) {
		a.mergeJSON(dst, src)
		return
	}
	if isCollectAgg(a.Kind) {
		a.mergeCollect(dst, src)
		return
	}
	if a.Kind == aggPercentile {
		a.mergePercentile(dst, src)
		return
	}
	if isVariance(a.Kind) {
		if a.Distinct {
			for _, e := range pairs(src[s]) {
				var first bool
				dst[s], first = multisetAdd(dst[s], e[0], e[1].I, a.cmp)
				if first {
					a.accumulateMore(dst, e[0], 1)
				}
			}
			return
		}
		if a.sumT.Kind == types.BigInt {
			dst[s].I += src[s].I
			dst[s+1].I += src[s+1].I
		} else {
			dst[s] = types.FloatValue(dst[s].Float() + src[s].Float())
			dst[s+1] = types.FloatValue(dst[s+1].Float() + src[s+1].Float())
		}
		dst[s+2].I += src[s+2].I
		return
	}
	if a.Kind == aggListAgg && a.Retract {
		dst[s] = types.ListValue(append(dst[s].List(), src[s].List()...))
		return
	}
	if a.Kind == aggListAgg && src[s].I != 0 {
		if dst[s].I == 0 {
			dst[s] = src[s]
		} else {
			dst[s].S += a.sep + src[s].S
		}
	}
}

// resultMore is the aggregate's value.
func (a *AggCall) resultMore(acc []types.Value) types.Value {
	s := a.slot
	if isJSONAgg(a.Kind) {
		return a.resultJSON(acc)
	}
	if isCollectAgg(a.Kind) {
		return a.resultCollect(acc)
	}
	if a.Kind == aggPercentile {
		return a.resultPercentile(acc)
	}
	if isVariance(a.Kind) {
		return a.variance(acc[a.varSlot()], acc[a.varSlot()+1], acc[a.varSlot()+2].I)
	}
	if a.Retract {
		l := acc[s].List()
		if len(l) == 0 {
			return types.NullValue
		}
		switch a.Kind {
		case aggFirst:
			return l[0]
		case aggLast:
			return l[len(l)-1]
		}
		parts := make([]string, len(l))
		for i, v := range l {
			parts[i] = v.S
		}
		return types.StringValue(strings.Join(parts, a.sep))
	}
	if a.Kind == aggListAgg {
		if acc[s].I == 0 {
			return types.NullValue
		}
		return types.StringValue(acc[s].S)
	}
	if acc[s+1].I == 0 {
		return types.NullValue
	}
	return acc[s]
}

// variance evaluates Calcite's rewrite of the variances in the argument's
// type: (sumsq - sum*sum/n) / n (or n-1), its square root for STDDEV.
func (a *AggCall) variance(sum, sumsq types.Value, n int64) types.Value {
	samp := a.Kind == aggVarSamp || a.Kind == aggStddevSamp
	if n == 0 || (samp && n == 1) {
		return types.NullValue
	}
	d := n
	if samp {
		d = n - 1
	}
	std := a.Kind == aggStddevPop || a.Kind == aggStddevSamp
	if a.sumT.Kind == types.BigInt {
		v := (sumsq.I - sum.I*sum.I/n) / d
		if std {
			v = int64(math.Sqrt(float64(v)))
		}
		if sh := wrapShift(a.OutT.Kind); sh != 0 {
			v = v << sh >> sh
		}
		return types.IntValue(v)
	}
	s, q := sum.Float(), sumsq.Float()
	v := (q - s*s/float64(n)) / float64(d)
	if std {
		v = math.Sqrt(v)
	}
	if a.OutT.Kind == types.Float {
		return types.FloatValue(float64(float32(v)))
	}
	return types.FloatValue(v)
}

func (a *AggCall) mergeErr() error {
	if a.Kind == aggFirst || a.Kind == aggLast {
		name := map[AggKind]string{aggFirst: "FIRST_VALUE", aggLast: "LAST_VALUE"}[a.Kind]
		return fmt.Errorf("%s cannot aggregate a SESSION window: merging two sessions' values has no arrival order", name)
	}
	return nil
}
