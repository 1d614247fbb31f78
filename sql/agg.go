package sql

import (
	"math/big"
	"sort"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Aggregates keep their accumulators in the slots of one value slice (a
// types.Row in state): slot layout [group keys..., row count, per-aggregate
// slots...]. The row count says when a group is empty after retractions.

type aggKind uint8

const (
	aggCount aggKind = iota
	aggCountStar
	aggSum
	aggSum0
	aggMin
	aggMax
	aggAvg
)

// aggCall is one compiled aggregate call.
type aggCall struct {
	kind     aggKind
	name     string // as written, for EXPLAIN
	arg      evalFn
	argT     types.Type
	argCol   int // the input column when arg is a bare column read, else -1
	outT     types.Type
	distinct bool
	filter   evalFn
	// retract: the input may retract, so MIN/MAX and DISTINCT keep every
	// value with its count.
	retract bool
	slot    int
	// sum is SUM/AVG's accumulator arithmetic
	sumT types.Type
	toS  func(types.Value) types.Value
	cmp  func(a, b types.Value) int
}

func (a *aggCall) slots() int {
	n := 1
	switch a.kind {
	case aggSum, aggSum0, aggAvg:
		n = 2 // sum, count of non-null values
		if a.distinct {
			n++ // and the multiset of distinct values first
		}
	}
	return n
}

// sumSlot is where SUM/AVG's sum is (after the multiset when DISTINCT).
func (a *aggCall) sumSlot() int {
	if a.distinct {
		return a.slot + 1
	}
	return a.slot
}

// compileAgg compiles an aggregate call's argument and result type.
func compileAgg(c *parser.Call, ec *exprCompiler, retract bool) (*aggCall, error) {
	a := &aggCall{name: parser.ExprString(c), distinct: c.Distinct, retract: retract, argCol: -1}
	if c.Filter != nil {
		f, err := ec.compile(c.Filter)
		if err != nil {
			return nil, err
		}
		a.filter = f.eval
	}
	if c.Star || (c.Name == "COUNT" && len(c.Args) == 0) {
		if c.Name != "COUNT" {
			return nil, errAt(c, "%s(*) is not allowed", c.Name)
		}
		a.kind = aggCountStar
		a.outT = types.Type{Kind: types.BigInt, NotNull: true}
		return a, nil
	}
	if len(c.Args) != 1 {
		if c.Name == "COUNT" && len(c.Args) > 1 && !c.Distinct {
			return nil, errAt(c, "COUNT takes one argument or *")
		}
		if c.Name != "COUNT" {
			return nil, errAt(c, "%s takes one argument", c.Name)
		}
	}
	var arg cexpr
	var err error
	if c.Name == "COUNT" && len(c.Args) > 1 {
		// COUNT(DISTINCT a, b): count distinct rows of the arguments
		row := &parser.Call{Pos: c.Pos, Name: "ROW", Args: c.Args}
		arg, err = ec.compile(row)
	} else {
		arg, err = ec.compile(c.Args[0])
	}
	if err != nil {
		return nil, err
	}
	a.arg, a.argT, a.argCol = arg.eval, arg.t, arg.col
	switch c.Name {
	case "COUNT":
		a.kind = aggCount
		a.outT = types.Type{Kind: types.BigInt, NotNull: true}
	case "SUM", "SUM0", "AVG":
		if !arg.t.IsNumeric() {
			return nil, errAt(c, "%s needs a numeric argument, not %s", c.Name, arg.t)
		}
		a.kind = map[string]aggKind{"SUM": aggSum, "SUM0": aggSum0, "AVG": aggAvg}[c.Name]
		t := arg.t
		t.NotNull, t.TimeAttr = false, 0
		switch {
		case t.IsInteger():
			// Flink: SUM(INT) is INT (wrapping on overflow), AVG(INT) is INT
			// (truncated); the sum accumulates as BIGINT.
			a.sumT = types.BigIntType
			a.outT = t
		case t.Kind == types.Decimal:
			a.sumT = types.DecimalType(38, t.Scale)
			a.outT = a.sumT
			if a.kind == aggAvg {
				a.outT = types.DecimalType(38, max(t.Scale, 6))
			}
		default:
			a.sumT = types.DoubleType
			a.outT = types.DoubleType
		}
		if a.kind == aggSum0 {
			a.outT.NotNull = true
		}
		if a.toS, err = castFn(arg.t, a.sumT); err != nil {
			return nil, errAt(c, "%v", err)
		}
	case "MIN", "MAX":
		a.kind = aggMin
		if c.Name == "MAX" {
			a.kind = aggMax
		}
		a.outT = arg.t.Nullable()
		a.outT.TimeAttr = 0
		a.cmp = comparator(arg.t, arg.t)
		if a.cmp == nil {
			return nil, errAt(c, "%s of %s is not supported", c.Name, arg.t)
		}
	default:
		return nil, errAt(c, "aggregate function %s is not supported yet", c.Name)
	}
	if a.distinct && a.cmp == nil {
		a.cmp = comparator(arg.t, arg.t)
		if a.cmp == nil {
			return nil, errAt(c, "DISTINCT on %s is not supported", arg.t)
		}
	}
	return a, nil
}

// aggLayout is the accumulator layout of an aggregation.
type aggLayout struct {
	nkeys int
	calls []*aggCall
	size  int
}

func newAggLayout(nkeys int, calls []*aggCall) *aggLayout {
	l := &aggLayout{nkeys: nkeys, calls: calls}
	n := nkeys + 1
	for _, c := range calls {
		c.slot = n
		n += c.slots()
	}
	l.size = n
	return l
}

func (l *aggLayout) create(keys []types.Value) []types.Value {
	acc := make([]types.Value, l.size)
	copy(acc, keys)
	for _, c := range l.calls {
		switch c.kind {
		case aggMin, aggMax:
			if !c.retract {
				acc[c.slot] = types.NullValue
			}
		}
	}
	return acc
}

func (l *aggLayout) count(acc []types.Value) int64 { return acc[l.nkeys].I }

// accumulate adds (sign 1) or retracts (sign -1) one input row.
func (l *aggLayout) accumulate(acc []types.Value, in []types.Value, sign int64) {
	acc[l.nkeys].I += sign
	for _, c := range l.calls {
		if c.filter != nil {
			if v := c.filter(in); v.Null || !v.Bool() {
				continue
			}
		}
		if c.kind == aggCountStar {
			acc[c.slot].I += sign
			continue
		}
		v := c.arg(in)
		if v.Null {
			continue
		}
		if c.distinct {
			// a multiset of values; the aggregate sees a value when its
			// count goes 0 -> 1 (add) or 1 -> 0 (retract)
			var first bool
			acc[c.slot], first = multisetAdd(acc[c.slot], v, sign, c.cmp)
			if !first {
				continue
			}
			if c.kind == aggCount {
				continue // counted by the multiset's size
			}
		}
		switch c.kind {
		case aggCount:
			acc[c.slot].I += sign
		case aggSum, aggSum0, aggAvg:
			s := c.toS(v)
			ss := c.sumSlot()
			acc[ss] = addNum(acc[ss], s, c.sumT, sign)
			acc[ss+1].I += sign
		case aggMin, aggMax:
			if c.retract || c.distinct {
				if !c.distinct {
					acc[c.slot], _ = multisetAdd(acc[c.slot], v, sign, c.cmp)
				}
				continue
			}
			cur := acc[c.slot]
			if cur.Null || (c.kind == aggMin && c.cmp(v, cur) < 0) || (c.kind == aggMax && c.cmp(v, cur) > 0) {
				acc[c.slot] = v
			}
		}
	}
}

// merge folds src into dst (session windows merging).
func (l *aggLayout) merge(dst, src []types.Value) {
	dst[l.nkeys].I += src[l.nkeys].I
	for _, c := range l.calls {
		if c.distinct || ((c.kind == aggMin || c.kind == aggMax) && c.retract) {
			for _, e := range pairs(src[c.slot]) {
				dst[c.slot], _ = multisetAdd(dst[c.slot], e[0], e[1].I, c.cmp)
			}
			if c.distinct && (c.kind == aggSum || c.kind == aggSum0 || c.kind == aggAvg) {
				// recompute the sum of the merged distinct values
				var sum types.Value
				ps := pairs(dst[c.slot])
				for _, p := range ps {
					sum = addNum(sum, c.toS(p[0]), c.sumT, 1)
				}
				dst[c.slot+1], dst[c.slot+2] = sum, types.IntValue(int64(len(ps)))
			}
			continue
		}
		switch c.kind {
		case aggCount, aggCountStar:
			dst[c.slot].I += src[c.slot].I
		case aggSum, aggSum0, aggAvg:
			dst[c.slot] = addNum(dst[c.slot], src[c.slot], c.sumT, 1)
			dst[c.slot+1].I += src[c.slot+1].I
		case aggMin, aggMax:
			v, cur := src[c.slot], dst[c.slot]
			if !v.Null && (cur.Null || (c.kind == aggMin && c.cmp(v, cur) < 0) || (c.kind == aggMax && c.cmp(v, cur) > 0)) {
				dst[c.slot] = v
			}
		}
	}
}

// result computes aggregate i's value.
func (l *aggLayout) result(acc []types.Value, c *aggCall) types.Value {
	if c.distinct {
		// read the multiset in place: a copy per result made COUNT(DISTINCT)
		// of a group with many values quadratic (Nexmark q15, q16)
		l := acc[c.slot].List()
		switch c.kind {
		case aggCount:
			return types.IntValue(int64(len(l) / 2))
		case aggMin, aggMax:
			if len(l) == 0 {
				return types.NullValue
			}
			if c.kind == aggMin {
				return l[0]
			}
			return l[len(l)-2]
		}
		return sumResult(c, acc[c.slot+1], acc[c.slot+2].I)
	}
	switch c.kind {
	case aggCount, aggCountStar:
		return types.IntValue(acc[c.slot].I)
	case aggSum, aggSum0, aggAvg:
		return sumResult(c, acc[c.slot], acc[c.slot+1].I)
	case aggMin, aggMax:
		if !c.retract {
			return acc[c.slot]
		}
		l := acc[c.slot].List()
		if len(l) == 0 {
			return types.NullValue
		}
		if c.kind == aggMin {
			return l[0]
		}
		return l[len(l)-2]
	}
	return types.NullValue
}

func sumResult(c *aggCall, sum types.Value, n int64) types.Value {
	if n == 0 {
		if c.kind == aggSum0 {
			return zeroOf(c.outT)
		}
		return types.NullValue
	}
	if c.kind != aggAvg {
		if c.sumT.Kind == types.Decimal && !c.sumT.BigDecimal() {
			return sum
		}
		return sum
	}
	switch c.sumT.Kind {
	case types.BigInt:
		return types.IntValue(sum.I / n)
	case types.Double:
		return types.FloatValue(sum.Float() / float64(n))
	}
	// decimal average with outT's scale, HALF_UP
	u := decBig(sum, c.sumT)
	u = rescale(u, c.sumT.Scale, c.outT.Scale+1)
	u.Quo(u, big.NewInt(n))
	u = rescale(u, c.outT.Scale+1, c.outT.Scale)
	return decValue(u, c.outT)
}

func zeroOf(t types.Type) types.Value {
	if t.BigDecimal() {
		return types.BigDecimalValue(new(big.Int))
	}
	return types.Value{}
}

// addNum adds sign*b to a, both of type t (BIGINT, DOUBLE or DECIMAL).
func addNum(a, b types.Value, t types.Type, sign int64) types.Value {
	switch t.Kind {
	case types.BigInt:
		return types.IntValue(a.I + sign*b.I)
	case types.Double:
		return types.FloatValue(a.Float() + float64(sign)*b.Float())
	}
	x, y := decBig(a, t), decBig(b, t)
	if sign < 0 {
		x.Sub(x, y)
	} else {
		x.Add(x, y)
	}
	return types.BigDecimalValue(x)
}

// A multiset is a Value whose X holds [v0, n0, v1, n1, ...] sorted by v:
// the values of a DISTINCT aggregate, or of a retracting MIN/MAX, with
// their counts. It fits types.Row's encoding, so it lives in state.

func pairs(v types.Value) [][2]types.Value {
	l := v.List()
	out := make([][2]types.Value, 0, len(l)/2)
	for i := 0; i+1 < len(l); i += 2 {
		out = append(out, [2]types.Value{l[i], l[i+1]})
	}
	return out
}

// multisetAdd adds n (negative: removes) copies of x; first reports
// whether x appeared (0 -> n) or disappeared (-> 0). It changes the list
// in place, as the accumulator row holding it is changed in place (state
// snapshots encode it; a copy per change made COUNT(DISTINCT) of a group
// with many values allocate its whole list per row: Nexmark q15, q16).
func multisetAdd(set types.Value, x types.Value, n int64, cmp func(a, b types.Value) int) (types.Value, bool) {
	l := set.List()
	k := len(l) / 2
	i := sort.Search(k, func(i int) bool { return cmp(l[2*i], x) >= 0 })
	if i < k && cmp(l[2*i], x) == 0 {
		c := l[2*i+1].I + n
		if c <= 0 {
			copy(l[2*i:], l[2*i+2:])
			l[len(l)-2], l[len(l)-1] = types.Value{}, types.Value{}
			return types.ListValue(l[:len(l)-2]), true
		}
		l[2*i+1] = types.IntValue(c)
		return types.ListValue(l), false
	}
	if n <= 0 {
		return set, false // retracting a value that is not there
	}
	l = append(l, types.Value{}, types.Value{})
	copy(l[2*i+2:], l[2*i:len(l)-2])
	l[2*i], l[2*i+1] = x, types.IntValue(n)
	return types.ListValue(l), true
}
