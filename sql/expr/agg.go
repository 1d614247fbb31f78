package expr

import (
	"fmt"
	"math/big"
	"math/bits"
	"sort"

	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Aggregates keep their accumulators in the slots of one value slice (a
// types.Row in state): slot layout [group keys..., row count, per-aggregate
// slots...]. The row count says when a group is empty after retractions.

// AggKind is the function of an aggregate call; the planner reads the
// kinds its specialised operators handle.
type AggKind uint8

// The aggregate functions.
const (
	AggCount AggKind = iota
	AggCountStar
	aggSum
	aggSum0
	AggMin
	AggMax
	aggAvg
	aggUser // a user-defined AggregateFunction
)

// AggCall is one compiled aggregate call.
type AggCall struct {
	Kind     AggKind
	Name     string // as written, for EXPLAIN
	Arg      EvalFn
	ArgT     types.Type
	ArgCol   int // the input column when arg is a bare column read, else -1
	OutT     types.Type
	Distinct bool
	Filter   EvalFn
	// filterKey is the filter as written; calls of a layout with the same
	// one share its evaluation per row (filterIdx, -1: not shared)
	filterKey string
	filterIdx int
	// retract: the input may retract, so MIN/MAX and DISTINCT keep every
	// value with its count.
	Retract bool
	slot    int
	// sum is SUM/AVG's accumulator arithmetic
	sumT types.Type
	toS  func(types.Value) types.Value
	cmp  func(a, b types.Value) int
	// a user-defined aggregate: its function, name, arguments and their
	// (parameter) types
	udf   *AggregateFunction
	uName string
	uArgs []EvalFn
	uTs   []types.Type
	// sep is LISTAGG's separator
	sep string
	// respectNulls: ARRAY_AGG and LAG keep NULL values (agg_collect.go)
	respectNulls bool
	// LAG's offset and constant default; lagPair: its argument is the
	// pair (value, default) (agg_lag.go)
	lagOffset  int
	lagDefault types.Value
	lagPair    bool
	// pctl is PERCENTILE's percentages (agg_percentile.go)
	pctl *percentile
	// hashed: a DISTINCT COUNT, SUM or AVG whose values compare by their
	// bits keeps them in a types.CountedSet (of strings if hashStrs), not
	// a sorted list
	hashed, hashStrs bool
	// group: the COUNT(DISTINCT) calls over the same column that share
	// one hash table with this one (nil: none)
	group    *distinctGroup
	groupIdx int // of this call's set in group
	// unit is the call's DISTINCT unit (DistinctUnits; -1: none): its
	// values may live in a DistinctStore
	unit int
}

func (a *AggCall) slots() int {
	if a.Kind >= aggFirst {
		return a.moreSlots()
	}
	if a.Kind == aggUser && a.Distinct {
		return 2 // the multiset of distinct argument rows, the accumulator
	}
	n := 1
	switch a.Kind {
	case aggSum, aggSum0, aggAvg:
		n = 2 // sum, count of non-null values
		if a.Distinct {
			n++ // and the multiset of distinct values first
		}
	}
	return n
}

// sumSlot is where SUM/AVG's sum is (after the multiset when DISTINCT).
func (a *AggCall) sumSlot() int {
	if a.Distinct {
		return a.slot + 1
	}
	return a.slot
}

// CompileAgg compiles an aggregate call's argument and result type.
func CompileAgg(c *parser.Call, ec *Compiler, retract bool) (*AggCall, error) {
	a := &AggCall{Name: parser.ExprString(c), Distinct: c.Distinct, Retract: retract, ArgCol: -1}
	if c.Filter != nil {
		f, err := ec.Compile(c.Filter)
		if err != nil {
			return nil, err
		}
		a.Filter, a.filterKey = f.Eval, parser.ExprString(c.Filter)
	}
	if f, ok := ec.Funcs[c.Name].(*AggregateFunction); ok {
		return compileUserAgg(a, c, ec, f)
	}
	if c.Star || (c.Name == "COUNT" && len(c.Args) == 0) {
		if c.Name != "COUNT" {
			return nil, ErrAt(c, "%s(*) is not allowed", c.Name)
		}
		a.Kind = AggCountStar
		a.OutT = types.Type{Kind: types.BigInt, NotNull: true}
		return a, nil
	}
	if m, ok, err := compileMoreAgg(a, c, ec); ok {
		return m, err
	}
	if len(c.Args) != 1 {
		if c.Name == "COUNT" && len(c.Args) > 1 && !c.Distinct {
			return nil, ErrAt(c, "COUNT takes one argument or *")
		}
		if c.Name != "COUNT" {
			return nil, ErrAt(c, "%s takes one argument", c.Name)
		}
	}
	var arg Expr
	var err error
	if c.Name == "COUNT" && len(c.Args) > 1 {
		// COUNT(DISTINCT a, b): count distinct rows of the arguments
		row := &parser.Call{Pos: c.Pos, Name: "ROW", Args: c.Args}
		arg, err = ec.Compile(row)
	} else {
		arg, err = ec.Compile(c.Args[0])
	}
	if err != nil {
		return nil, err
	}
	a.Arg, a.ArgT, a.ArgCol = arg.Eval, arg.Type, arg.Col
	switch c.Name {
	case "COUNT":
		a.Kind = AggCount
		a.OutT = types.Type{Kind: types.BigInt, NotNull: true}
	case "SUM", "SUM0", "AVG":
		if !arg.Type.IsNumeric() {
			return nil, ErrAt(c, "%s needs a numeric argument, not %s", c.Name, arg.Type)
		}
		a.Kind = map[string]AggKind{"SUM": aggSum, "SUM0": aggSum0, "AVG": aggAvg}[c.Name]
		t := arg.Type
		t.NotNull, t.TimeAttr = false, 0
		switch {
		case t.IsInteger():
			// Flink: SUM(INT) is INT (wrapping on overflow), AVG(INT) is INT
			// (truncated); the sum accumulates as BIGINT.
			a.sumT = types.BigIntType
			a.OutT = t
		case t.Kind == types.Decimal:
			a.sumT = types.DecimalType(38, t.Scale)
			a.OutT = a.sumT
			if a.Kind == aggAvg {
				a.OutT = types.DecimalType(38, max(t.Scale, 6))
			}
		default:
			a.sumT = types.DoubleType
			a.OutT = types.DoubleType
		}
		if a.Kind == aggSum0 {
			a.OutT.NotNull = true
		}
		if a.toS, err = CastFn(arg.Type, a.sumT); err != nil {
			return nil, ErrAt(c, "%v", err)
		}
	case "MIN", "MAX":
		a.Kind = AggMin
		if c.Name == "MAX" {
			a.Kind = AggMax
		}
		a.OutT = arg.Type.Nullable()
		a.OutT.TimeAttr = 0
		a.cmp = Comparator(arg.Type, arg.Type)
		if a.cmp == nil {
			return nil, ErrAt(c, "%s of %s is not supported", c.Name, arg.Type)
		}
	default:
		return nil, ErrAt(c, "aggregate function %s is not supported yet", c.Name)
	}
	if a.Distinct && a.cmp == nil {
		a.cmp = Comparator(arg.Type, arg.Type)
		if a.cmp == nil {
			return nil, ErrAt(c, "DISTINCT on %s is not supported", arg.Type)
		}
	}
	if a.Distinct && (a.Kind == AggCount || a.Kind == aggSum || a.Kind == aggSum0 || a.Kind == aggAvg) {
		a.hashed, a.hashStrs = bitsEqual(arg.Type)
	}
	return a, nil
}

// bitsEqual reports whether two values of t are equal exactly when their
// I (or, strs, their S) are: those a DISTINCT keeps in a hash set.
func bitsEqual(t types.Type) (ok, strs bool) {
	switch t.Kind {
	case types.Boolean, types.TinyInt, types.SmallInt, types.Int, types.BigInt,
		types.Date, types.Time, types.Timestamp, types.TimestampLTZ, types.Interval:
		return true, false
	case types.Decimal:
		return !t.BigDecimal(), false
	case types.Char, types.Varchar, types.Binary, types.Varbinary:
		return true, true
	}
	return false, false // floating point (-0 = 0), big decimals (two forms), composites
}

// filterState is the FILTERs shared by several calls of a layout
// (AggCall.filterIdx) evaluated for the row being accumulated, and those
// that held.
type filterState struct{ known, held uint64 }

// pass evaluates c's filter (once a row if shared).
func (fs *filterState) pass(c *AggCall, in []types.Value) bool {
	i := c.filterIdx
	if i >= 0 && fs.known&(1<<i) != 0 {
		return fs.held&(1<<i) != 0
	}
	v := c.Filter(in)
	ok := !v.Null && v.Bool()
	if i >= 0 {
		fs.known |= 1 << i
		if ok {
			fs.held |= 1 << i
		}
	}
	return ok
}

// A distinctGroup is the COUNT(DISTINCT x) calls of a layout over the
// same column x (under different FILTERs, or none): they keep their
// values in one types.CountedSets, a set each, so that a row costs one
// lookup for all of them (Nexmark q15/q16 count distinct bidders and
// auctions in all and in three price bands). Each call's slot holds its
// set's view, which encodes as that call's own list.
type distinctGroup struct {
	calls []*AggCall // calls[0] accumulates the row for all
	col   int
	strs  bool
	unit  int // DistinctUnits
}

// sets returns the group's sets in acc, made from the calls' lists if acc
// is new or was read from state.
func (g *distinctGroup) sets(acc []types.Value) *types.CountedSets {
	if v, ok := acc[g.calls[0].slot].X.(*types.CountedSetsView); ok {
		return v.Sets
	}
	lists := make([][]types.Value, len(g.calls))
	for i, c := range g.calls {
		lists[i] = acc[c.slot].List()
	}
	s := types.NewCountedSetsOf(g.strs, len(g.calls), lists)
	for i, c := range g.calls {
		acc[c.slot] = types.Value{I: int64(s.Len(i)), X: s.View(i)}
	}
	return s
}

// add adds n copies of v to the sets of mask, keeping the sizes in the
// calls' slots.
func (g *distinctGroup) add(acc []types.Value, v types.Value, mask uint64, n int64) {
	s := g.sets(acc)
	for changed := s.Add(v, mask, n); changed != 0; changed &= changed - 1 {
		i := bits.TrailingZeros64(changed)
		acc[g.calls[i].slot].I = int64(s.Len(i))
	}
}

func (g *distinctGroup) accumulate(acc, in []types.Value, sign int64, fs *filterState, ds DistinctStore) {
	v := in[g.col]
	if v.Null {
		return
	}
	var mask uint64
	for i, c := range g.calls {
		if c.Filter == nil || fs.pass(c, in) {
			mask |= 1 << i
		}
	}
	switch {
	case mask == 0:
	case ds != nil:
		g.addTo(ds, acc, v, mask, sign)
	default:
		g.add(acc, v, mask, sign)
	}
}

// distinctAdd adds n (negative: removes) copies of v to the multiset of
// distinct values (or, for a retracting MIN/MAX, of all values) in
// acc[c.slot]; first reports whether v appeared or disappeared.
func (c *AggCall) distinctAdd(acc []types.Value, v types.Value, n int64, ds DistinctStore) (first bool) {
	if ds != nil && c.unit >= 0 {
		return c.addTo(ds, acc, v, n)
	}
	if !c.hashed {
		acc[c.slot], first = multisetAdd(acc[c.slot], v, n, c.cmp)
		return first
	}
	if c.group != nil { // COUNT only: first is not used
		c.group.add(acc, v, 1<<c.groupIdx, n)
		return false
	}
	set, ok := acc[c.slot].X.(*types.CountedSet)
	if !ok { // a new accumulator, or one read from state (a sorted list)
		set = types.NewCountedSetOf(c.hashStrs, acc[c.slot].List())
		acc[c.slot] = types.Value{I: int64(set.Len()), X: set}
	}
	if !set.Add(v, n) {
		return false
	}
	acc[c.slot].I = int64(set.Len())
	return true
}

// eachCounted calls fn with each value of a multiset (either form) and
// its count.
func eachCounted(set types.Value, fn func(v types.Value, n int64)) {
	switch s := set.X.(type) {
	case *types.CountedSet:
		s.Each(fn)
		return
	case *types.CountedSetsView:
		s.Each(fn)
		return
	}
	l := set.List()
	for i := 0; i+1 < len(l); i += 2 {
		fn(l[i], l[i+1].I)
	}
}

// countedLen is the number of distinct values of a multiset (either form).
// A slot holding a hash set keeps its size in I (distinctAdd), so that a
// result does not reach into the set.
func countedLen(set types.Value) int {
	switch set.X.(type) {
	case *types.CountedSet, *types.CountedSetsView, nil:
		// nil: a set in a DistinctStore (its size), or an empty one
		return int(set.I)
	}
	return len(set.List()) / 2
}

// AggLayout is the accumulator layout of an aggregation.
type AggLayout struct {
	NKeys int
	Calls []*AggCall
	size  int
	// units are the hashed DISTINCT calls' sets as a DistinctStore keeps
	// them, unitCalls those calls (a unit's together, in the order of its
	// sets), unitFirst the index in unitCalls of each unit's first
	// (agg_distinct_store.go)
	units     []DistinctUnit
	unitCalls []*AggCall
	unitFirst []int
}

// NewAggLayout lays out the accumulator of nkeys group keys and calls,
// giving each call its slots.
func NewAggLayout(nkeys int, calls []*AggCall) *AggLayout {
	l := &AggLayout{NKeys: nkeys, Calls: calls}
	n := nkeys + 1
	filters := map[string]int{}
	for _, c := range calls {
		c.slot = n
		n += c.slots()
		// A filter written alike in several calls (Nexmark q15/q16: the
		// same price band for bids, bidders and auctions) is evaluated
		// once a row, as Flink projects each filter once.
		c.filterIdx = -1
		if c.Filter != nil && c.filterKey != "" {
			i, ok := filters[c.filterKey]
			if !ok && len(filters) < 64 {
				i, ok = len(filters), true
				filters[c.filterKey] = i
			}
			if ok {
				c.filterIdx = i
			}
		}
	}
	l.size = n
	groups := map[[2]int]*distinctGroup{}
	for _, c := range calls {
		c.group = nil
		if c.Kind != AggCount || !c.Distinct || !c.hashed || c.ArgCol < 0 {
			continue
		}
		k := [2]int{c.ArgCol, b2i(c.hashStrs)}
		g := groups[k]
		if g == nil {
			g = &distinctGroup{col: c.ArgCol, strs: c.hashStrs}
			groups[k] = g
		}
		if len(g.calls) < 64 {
			g.calls = append(g.calls, c)
		}
	}
	for _, g := range groups {
		if len(g.calls) > 1 {
			for i, c := range g.calls {
				c.group, c.groupIdx = g, i
			}
		}
	}
	l.numberUnits()
	return l
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// MergeErr says why the accumulators cannot be merged (session windows):
// a user-defined aggregate without Merge.
func (l *AggLayout) MergeErr() error {
	for _, c := range l.Calls {
		if c.Kind >= aggFirst {
			if err := c.mergeErr(); err != nil {
				return err
			}
		}
		if c.Kind == aggUser && c.Distinct {
			return fmt.Errorf("aggregate function %s with DISTINCT cannot aggregate a SESSION window", c.uName)
		}
		if c.Kind == aggUser && c.udf.Merge == nil {
			return fmt.Errorf("aggregate function %s cannot aggregate a SESSION window: it has no Merge (Flink's merge method)", c.uName)
		}
	}
	return nil
}

// Create returns a new accumulator holding the group's keys.
func (l *AggLayout) Create(keys []types.Value) []types.Value {
	acc := make([]types.Value, l.size)
	copy(acc, keys)
	for _, c := range l.Calls {
		switch c.Kind {
		case AggMin, AggMax:
			if !c.Retract {
				acc[c.slot] = types.NullValue
			}
		case aggUser:
			acc[c.userSlot()] = c.userCreate()
		}
	}
	return acc
}

// Count is the number of rows an accumulator holds (its group is empty
// at 0 after retractions).
func (l *AggLayout) Count(acc []types.Value) int64 { return acc[l.NKeys].I }

// Accumulate adds (sign 1) or retracts (sign -1) one input row.
func (l *AggLayout) Accumulate(acc []types.Value, in []types.Value, sign int64) {
	l.accumulate(acc, in, sign, nil)
}

// AccumulateWith is Accumulate with the values of the DISTINCT units in
// ds (DistinctStore): acc holds their sizes only.
func (l *AggLayout) AccumulateWith(acc []types.Value, in []types.Value, sign int64, ds DistinctStore) {
	l.accumulate(acc, in, sign, ds)
}

func (l *AggLayout) accumulate(acc []types.Value, in []types.Value, sign int64, ds DistinctStore) {
	acc[l.NKeys].I += sign
	var fs filterState
	for _, c := range l.Calls {
		if c.group != nil {
			if c.group.calls[0] == c {
				c.group.accumulate(acc, in, sign, &fs, ds)
			}
			continue // done by its group's first call
		}
		if c.Filter != nil && !fs.pass(c, in) {
			continue
		}
		if c.Kind == AggCountStar {
			acc[c.slot].I += sign
			continue
		}
		if c.Kind == aggUser {
			c.userAdd(acc, in, sign)
			continue
		}
		var v types.Value
		if c.ArgCol >= 0 {
			v = in[c.ArgCol] // a column read (what Arg does, without the call)
		} else {
			v = c.Arg(in)
		}
		if v.Null && !c.respectNulls {
			continue
		}
		if c.Distinct {
			// a multiset of values; the aggregate sees a value when its
			// count goes 0 -> 1 (add) or 1 -> 0 (retract)
			if !c.distinctAdd(acc, v, sign, ds) {
				continue
			}
			if c.Kind == AggCount {
				continue // counted by the multiset's size
			}
		}
		switch c.Kind {
		case AggCount:
			acc[c.slot].I += sign
		case aggFirst, aggLast, aggListAgg, aggVarPop, aggVarSamp, aggStddevPop, aggStddevSamp, aggJSONArray, aggJSONObject, aggCollect, aggArrayAgg, aggLag, aggPercentile:
			c.accumulateMore(acc, v, sign)
		case aggSum, aggSum0, aggAvg:
			s := c.toS(v)
			ss := c.sumSlot()
			acc[ss] = addNum(acc[ss], s, c.sumT, sign)
			acc[ss+1].I += sign
		case AggMin, AggMax:
			if c.Retract || c.Distinct {
				if !c.Distinct {
					acc[c.slot], _ = multisetAdd(acc[c.slot], v, sign, c.cmp)
				}
				continue
			}
			cur := acc[c.slot]
			if cur.Null || (c.Kind == AggMin && c.cmp(v, cur) < 0) || (c.Kind == AggMax && c.cmp(v, cur) > 0) {
				acc[c.slot] = v
			}
		}
	}
}

// Merge folds src into dst (session windows merging).
func (l *AggLayout) Merge(dst, src []types.Value) { l.merge(dst, src, nil) }

// MergeWith is Merge into a dst whose DISTINCT units' values are in ds
// (src's are its own, a local phase's partial).
func (l *AggLayout) MergeWith(dst, src []types.Value, ds DistinctStore) { l.merge(dst, src, ds) }

func (l *AggLayout) merge(dst, src []types.Value, ds DistinctStore) {
	dst[l.NKeys].I += src[l.NKeys].I
	for _, c := range l.Calls {
		if c.Kind == aggUser {
			dst[c.userSlot()] = c.userMerge(dst[c.userSlot()], src[c.userSlot()])
			continue
		}
		if c.Kind >= aggFirst {
			c.mergeMore(dst, src)
			continue
		}
		if ds != nil && c.unit >= 0 {
			c.mergeTo(ds, dst, src)
			continue
		}
		if c.Distinct || ((c.Kind == AggMin || c.Kind == AggMax) && c.Retract) {
			eachCounted(src[c.slot], func(v types.Value, n int64) { c.distinctAdd(dst, v, n, nil) })
			if c.Distinct && (c.Kind == aggSum || c.Kind == aggSum0 || c.Kind == aggAvg) {
				// recompute the sum of the merged distinct values
				var sum types.Value
				eachCounted(dst[c.slot], func(v types.Value, _ int64) { sum = addNum(sum, c.toS(v), c.sumT, 1) })
				dst[c.slot+1], dst[c.slot+2] = sum, types.IntValue(int64(countedLen(dst[c.slot])))
			}
			continue
		}
		switch c.Kind {
		case AggCount, AggCountStar:
			dst[c.slot].I += src[c.slot].I
		case aggSum, aggSum0, aggAvg:
			dst[c.slot] = addNum(dst[c.slot], src[c.slot], c.sumT, 1)
			dst[c.slot+1].I += src[c.slot+1].I
		case AggMin, AggMax:
			v, cur := src[c.slot], dst[c.slot]
			if !v.Null && (cur.Null || (c.Kind == AggMin && c.cmp(v, cur) < 0) || (c.Kind == AggMax && c.cmp(v, cur) > 0)) {
				dst[c.slot] = v
			}
		}
	}
}

// Result computes aggregate i's value.
func (l *AggLayout) Result(acc []types.Value, c *AggCall) types.Value {
	if c.Kind == aggUser {
		return c.userResult(acc[c.userSlot()])
	}
	if c.Kind >= aggFirst {
		return c.resultMore(acc)
	}
	if c.Distinct {
		// read the multiset in place: a copy per result made COUNT(DISTINCT)
		// of a group with many values quadratic (Nexmark q15, q16)
		switch c.Kind {
		case AggCount:
			return types.IntValue(int64(countedLen(acc[c.slot])))
		case AggMin, AggMax:
			l := acc[c.slot].List()
			if len(l) == 0 {
				return types.NullValue
			}
			if c.Kind == AggMin {
				return l[0]
			}
			return l[len(l)-2]
		}
		return sumResult(c, acc[c.slot+1], acc[c.slot+2].I)
	}
	switch c.Kind {
	case AggCount, AggCountStar:
		return types.IntValue(acc[c.slot].I)
	case aggSum, aggSum0, aggAvg:
		return sumResult(c, acc[c.slot], acc[c.slot+1].I)
	case AggMin, AggMax:
		if !c.Retract {
			return acc[c.slot]
		}
		l := acc[c.slot].List()
		if len(l) == 0 {
			return types.NullValue
		}
		if c.Kind == AggMin {
			return l[0]
		}
		return l[len(l)-2]
	}
	return types.NullValue
}

func sumResult(c *AggCall, sum types.Value, n int64) types.Value {
	if n == 0 {
		if c.Kind == aggSum0 {
			return zeroOf(c.OutT)
		}
		return types.NullValue
	}
	if c.Kind != aggAvg {
		if sh := wrapShift(c.OutT.Kind); sh != 0 {
			// SUM(INT) is an INT: the BIGINT sum wraps, as Flink's does
			return types.IntValue(sum.I << sh >> sh)
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
	u = rescale(u, c.sumT.Scale, c.OutT.Scale+1)
	u.Quo(u, big.NewInt(n))
	u = rescale(u, c.OutT.Scale+1, c.OutT.Scale)
	return decValue(u, c.OutT)
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
