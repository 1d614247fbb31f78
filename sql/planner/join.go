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

// splitAnd returns the conjuncts of e.
func splitAnd(e parser.Expr) []parser.Expr {
	if b, ok := e.(*parser.Binary); ok && b.Op == "AND" {
		return append(splitAnd(b.L), splitAnd(b.R)...)
	}
	if e == nil {
		return nil
	}
	return []parser.Expr{e}
}

// sideOf reports which inputs of a join an expression reads: 1 left, 2
// right, 3 both, 0 none.
func sideOf(ce expr.Expr, e parser.Expr, ec *expr.Compiler, nleft int) int {
	side := 0
	walkExpr(e, func(x parser.Expr) bool {
		if id, ok := x.(*parser.Ident); ok {
			if idx, _, err := ec.Resolve(id); err == nil {
				if idx < nleft {
					side |= 1
				} else {
					side |= 2
				}
			}
			return false
		}
		return true
	})
	return side
}

func (p *planner) planJoin(j *parser.Join) (*rel, error) {
	if tf, ok := j.Right.(*parser.TableFunc); ok && tf.Lateral {
		return p.planCorrelate(j, tf)
	}
	if ref, ok := j.Right.(*parser.TableRef); ok && ref.AsOf != nil {
		if r, ok, err := p.planLookupJoin(j, ref); ok || err != nil {
			return r, err
		}
		return p.planTemporalJoin(j, ref)
	}
	left, err := p.planFrom(j.Left)
	if err != nil {
		return nil, err
	}
	right, err := p.planFrom(j.Right)
	if err != nil {
		return nil, err
	}
	if need := p.joinNeed[j]; need != nil {
		if _, maxPrune := p.matchMaxPrune(j); !maxPrune {
			left = pruneJoinInput(left, need)
		}
		right = pruneJoinInput(right, need)
	}
	nl := len(left.sc.Cols)
	sc := &expr.Scope{Cols: append(append([]expr.Column(nil), left.sc.Cols...), right.sc.Cols...)}
	kind := j.Kind
	// nullable sides of outer joins
	if kind == parser.LeftJoin || kind == parser.FullJoin {
		for i := nl; i < len(sc.Cols); i++ {
			sc.Cols[i].Type = sc.Cols[i].Type.Nullable()
		}
	}
	if kind == parser.RightJoin || kind == parser.FullJoin {
		for i := 0; i < nl; i++ {
			sc.Cols[i].Type = sc.Cols[i].Type.Nullable()
		}
	}
	// a join's output is not ordered by time: its time attributes become
	// plain timestamps (Flink does the same for regular joins)
	for i := range sc.Cols {
		sc.Cols[i].Type.TimeAttr = types.NoTimeAttr
	}
	cond := j.On
	if len(j.Using) > 0 {
		for _, c := range j.Using {
			eq := &parser.Binary{Pos: j.Pos, Op: "=", L: &parser.Ident{Pos: j.Pos, Parts: []string{left.sc.Cols[0].Qual, c}},
				R: &parser.Ident{Pos: j.Pos, Parts: []string{right.sc.Cols[0].Qual, c}}}
			if cond == nil {
				cond = eq
			} else {
				cond = &parser.Binary{Pos: j.Pos, Op: "AND", L: cond, R: eq}
			}
		}
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: sc, What: "a join condition"}
	lec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: left.sc, What: "a join condition"}
	rec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: right.sc, What: "a join condition"}
	var lkeys, rkeys []expr.Expr
	var keyText []string
	var keyCols [][2]int // the columns of bare column keys (else -1), for window joins
	var residual []parser.Expr
	for _, c := range splitAnd(cond) {
		if hasAggregate(c, p.s.cat.functions()) {
			return nil, expr.ErrAt(c, "aggregate functions are not allowed in a join condition")
		}
		b, ok := c.(*parser.Binary)
		if ok && b.Op == "=" {
			lc, errL := ec.Compile(b.L)
			rc, errR := ec.Compile(b.R)
			if errL != nil {
				return nil, errL
			}
			if errR != nil {
				return nil, errR
			}
			ls, rs := sideOf(lc, b.L, ec, nl), sideOf(rc, b.R, ec, nl)
			var le, re parser.Expr
			switch {
			case ls == 1 && rs == 2:
				le, re = b.L, b.R
			case ls == 2 && rs == 1:
				le, re = b.R, b.L
			}
			if le != nil {
				lk, err := lec.Compile(le)
				if err != nil {
					return nil, err
				}
				rk, err := rec.Compile(re)
				if err != nil {
					return nil, err
				}
				keyCols = append(keyCols, [2]int{lk.Col, rk.Col})
				t, ok := expr.CommonType([]types.Type{lk.Type, rk.Type})
				if !ok {
					return nil, expr.ErrAt(c, "cannot compare %s with %s", lk.Type, rk.Type)
				}
				if lk, err = expr.Cast(lk, t, le); err != nil {
					return nil, err
				}
				if rk, err = expr.Cast(rk, t, re); err != nil {
					return nil, err
				}
				lkeys, rkeys = append(lkeys, lk), append(rkeys, rk)
				keyText = append(keyText, parser.ExprString(c))
				continue
			}
		}
		residual = append(residual, c)
	}
	if left.mode == types.InsertOnly && right.mode == types.InsertOnly && kind != parser.CrossJoin {
		if endKey, ok := windowJoinBounds(left, right, keyCols); ok {
			res, text, err := compileConjunction(ec, residual)
			if err != nil {
				return nil, err
			}
			if startKey, ok := boundsOnlyKeys(lkeys, rkeys, endKey); ok {
				if spec, ok := matchWindowMax(p.cfg, kind, left, right, keyCols, startKey, endKey, residual, ec, nl); ok {
					return windowMaxJoinRel(left, windowJoinScope(sc, nl, kind), spec, len(right.sc.Cols), strings.Join(append(keyText, text...), " AND ")), nil
				}
			}
			return windowJoinRel(kind, left, right, windowJoinScope(sc, nl, kind), lkeys, rkeys, endKey, res, strings.Join(append(keyText, text...), " AND ")), nil
		}
		// other joins' rows are not ordered by the watermark: their window
		// columns are no longer window attributes (as in Flink)
		sc = withoutWindowMarks(sc, 0, len(sc.Cols))
		// an interval join: state bounded by the watermark, insert-only
		if lower, upper, rest, ok := intervalBounds(residual, ec, left, right); ok && (kind == parser.InnerJoin || len(rest) == 0) {
			res, text, err := compileConjunction(ec, rest)
			if err != nil {
				return nil, err
			}
			return intervalJoinRel(kind, left, right, sc, lkeys, rkeys, res, lower, upper,
				intervalOp(kind, lower, upper, strings.Join(append(keyText, text...), " AND "))), nil
		}
	}
	sc = withoutWindowMarks(sc, 0, len(sc.Cols))
	res, resText, err := compileConjunction(ec, residual)
	if err != nil {
		return nil, err
	}
	if cond == nil && kind != parser.CrossJoin {
		return nil, parser.Errorf(j.Pos, "a %s JOIN needs ON", kind)
	}
	mode := maxMode(left.mode, right.mode)
	updater := mergeUpdater(left, right)
	op := fmt.Sprintf("Join(joinType=[%s], where=[%s])", kind, strings.Join(append(keyText, resText...), " AND "))
	if kind == parser.LeftJoin || kind == parser.RightJoin || kind == parser.FullJoin {
		mode = types.All
		if updater == "" {
			updater = op
		}
	}
	if mode == types.Upsert {
		mode = types.All
	}
	r := &rel{op: op, sc: sc, mode: mode, inputs: []*rel{left, right}, updater: updater, bounded: allBounded(left, right)}
	leftOuter := kind == parser.LeftJoin || kind == parser.FullJoin
	rightOuter := kind == parser.RightJoin || kind == parser.FullJoin
	appendOnly := left.mode == types.InsertOnly && right.mode == types.InsertOnly && !leftOuter && !rightOuter
	// the window-maximum prune (join_maxprune.go): below the left Calc
	// when it can be (prunedLeft), else after it (prune)
	var prune func(*builder, *weir.Stream[types.Row]) *weir.Stream[types.Row]
	leftIn := left
	if spec, ok := p.matchMaxPrune(j); ok && appendOnly {
		if pl := maxPruneBelowCalc(p.cfg, spec, left); pl != nil {
			leftIn = pl
		} else {
			prune = maxPruneFilter(spec, left)
		}
	}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, rs, err := b.streams(leftIn, right)
		if err != nil {
			return nil, err
		}
		lk, rk := evals(lkeys), evals(rkeys)
		var resEval expr.EvalFn
		if res != nil {
			resEval = res.Eval
		}
		nr := len(right.sc.Cols)
		if appendOnly {
			// both sides append-only: weir's regular join operator
			if prune != nil {
				ls = prune(b, ls)
			}
			lks := weir.KeyBy(ls, func(row types.Row) string { return keyOf(lk, row.Values) })
			rks := weir.KeyBy(rs, func(row types.Row) string { return rightKeyOf(rk, row.Values) })
			// rows lent to a chained operator that keeps nothing of them
			// (a Calc, a two-phase aggregation's local phase) or to a
			// lending sink reuse a ring (lend.go); a pair the residual
			// condition refuses costs no allocation either way
			lend, rows := b.lendRows(r), ringRows(b.job)
			jopts := []weir.RetentionOption{b.uid("join")}
			if b.ttl > 0 {
				// 'table.exec.state.ttl': a row expires that long after
				// it arrived
				jopts = append(jopts, weir.StateRetention(b.ttl))
			}
			return weir.JoinWith(lks, rks, func() func(string, types.Row, types.Row) (types.Row, bool) {
				var ring *rowRing
				var scratch []types.Value
				return func(_ string, l, r types.Row) (types.Row, bool) {
					var vs []types.Value
					switch {
					case *lend:
						if ring == nil {
							ring = newRowRing(nl+nr, rows)
						}
						vs = ring.next()
					case resEval != nil:
						if scratch == nil {
							scratch = make([]types.Value, nl+nr)
						}
						vs = scratch
					default:
						vs = make([]types.Value, nl+nr)
					}
					copy(vs, l.Values)
					copy(vs[nl:], r.Values)
					if resEval != nil {
						if v := resEval(vs); v.Null || !v.Bool() {
							return types.Row{}, false
						}
						if !*lend {
							vs = slices.Clone(vs) // out of scratch
						}
					}
					return types.Row{Values: vs}, true
				}
			}, jopts...), nil
		}
		// a changelog join: both sides in one keyed process function; the
		// right side's rows are tagged in their kind's high bit
		ks := sidesKeyed(b, ls, rs, lk, rk, "join-tag")
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &joinFn{nl: nl, nr: nr, residual: resEval, outer: [2]bool{leftOuter, rightOuter}, opts: b.stateOpts()}
		}, b.uid("changelog-join")), nil
	}
	return r, nil
}

const rightTag types.RowKind = 0x40 // one of types.KindFlags: the rows' binary encoding keeps it

// streams builds the streams of two inputs.
func (b *builder) streams(l, r *rel) (ls, rs *weir.Stream[types.Row], err error) {
	if ls, err = b.stream(l); err != nil {
		return nil, nil, err
	}
	rs, err = b.stream(r)
	return ls, rs, err
}

// sidesKeyed is both sides of a changelog join in one keyed stream: the
// right side's rows tagged in their kind's high bit (rightTag), each side
// keyed by its key expressions.
func sidesKeyed(b *builder, ls, rs *weir.Stream[types.Row], lk, rk []expr.EvalFn, tagUID string) *weir.KeyedStream[string, types.Row] {
	tagged := weir.Map(rs, func(row types.Row) types.Row {
		row.Kind |= rightTag
		return row
	}, b.uid(tagUID))
	return weir.KeyBy(weir.Union(ls, tagged), func(row types.Row) string {
		if row.Kind&rightTag != 0 {
			return rightKeyOf(rk, row.Values)
		}
		return keyOf(lk, row.Values)
	})
}

func evals(cs []expr.Expr) []expr.EvalFn {
	out := make([]expr.EvalFn, len(cs))
	for i, c := range cs {
		out[i] = c.Eval
	}
	return out
}

func keyOf(fs []expr.EvalFn, vs []types.Value) string {
	if len(fs) == 0 {
		return ""
	}
	var buf [4]types.Value
	k := buf[:0]
	for _, f := range fs {
		v := f(vs)
		if v.Null {
			// NULL never equals: a key no other value has
			return nullKey
		}
		k = append(k, v)
	}
	return types.Key(k)
}

// partitionKeyOf is the key of a PARTITION BY (Top-N and deduplication,
// OVER, MATCH_RECOGNIZE): as a GROUP BY key, a NULL is a value equal to
// itself, so (NULL, 1) and (NULL, 2) are two partitions. (keyOf, a join
// key, gives every key with a NULL one key, since NULL matches nothing.)
func partitionKeyOf(fs []expr.EvalFn, vs []types.Value) string {
	if len(fs) == 0 {
		return ""
	}
	var buf [4]types.Value
	k := buf[:0]
	for _, f := range fs {
		k = append(k, f(vs))
	}
	return types.Key(k)
}

// nullKey is the key of a row whose key has a NULL. In a join such a row
// matches no row of the other side (NULL = x is not true), so the right
// side's NULL-keyed rows are keyed apart (rightKeyOf): the two sides'
// never meet.
const nullKey = "\x00null"

// rightKeyOf is keyOf for the right side of an equi-join.
func rightKeyOf(fs []expr.EvalFn, vs []types.Value) string {
	if k := keyOf(fs, vs); k != nullKey {
		return k
	}
	return nullKey + "-right"
}

// joinFn is a regular join over changelogs (inner, left, right, full), as
// Flink's streaming join: each side's rows are kept per join key with
// their multiplicity and the number of rows of the other side they match
// (for the null padding of outer joins). Output kinds are +I and -D.
type joinFn struct {
	nl, nr   int
	residual expr.EvalFn
	outer    [2]bool // left, right side preserved
	side     [2]*weir.MapState[string, string, types.Row]
	opts     []weir.StateOption // 'table.exec.state.ttl'
}

// A stored row's Values are the row's values followed by two counters:
// its multiplicity and its number of matches on the other side.

func (f *joinFn) Open(rc *weir.RuntimeContext[string]) error {
	f.side[0] = weir.NewMapState[string, types.Row](rc, "left", f.opts...)
	f.side[1] = weir.NewMapState[string, types.Row](rc, "right", f.opts...)
	return nil
}

func (f *joinFn) joined(s int, x, y []types.Value) []types.Value {
	if s == 1 {
		x, y = y, x
	}
	return joinedValues(f.nl, f.nr, x, y)
}

func (f *joinFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	s := 0
	kind := in.Kind
	if kind&rightTag != 0 {
		s, kind = 1, kind&^rightTag
	}
	o := 1 - s
	width := f.nl
	if s == 1 {
		width = f.nr
	}
	x := in.Values[:width]
	xkey := types.Key(x)
	mine, other := f.side[s], f.side[o]
	acc := !kind.IsRetraction()
	stored, have := mine.Get(xkey)
	if !acc && !have {
		return nil // retracting a row never seen
	}
	// the other side's rows this row matches
	type match struct {
		key string
		row types.Row
	}
	var matches []match
	nmatch := int64(0)
	for k, y := range other.All() {
		if f.residual != nil {
			if v := f.residual(f.joined(s, x, y.Values)); v.Null || !v.Bool() {
				continue
			}
		}
		matches = append(matches, match{k, y})
		nmatch += y.Values[len(y.Values)-2].I
	}
	emit := func(k types.RowKind, vs []types.Value) { ctx.Emit(types.Row{Kind: k, Values: vs}) }
	if acc {
		if len(matches) == 0 && f.outer[s] {
			emit(types.Insert, f.joined(s, x, nil))
		}
		for _, m := range matches {
			y := m.row.Values
			cnt, assoc := y[len(y)-2].I, y[len(y)-1].I
			if f.outer[o] && assoc == 0 {
				for range cnt {
					emit(types.Delete, f.joined(o, y, nil))
				}
			}
			for range cnt {
				emit(types.Insert, f.joined(s, x, y))
			}
			ny := append([]types.Value(nil), y...)
			ny[len(ny)-1].I++
			other.Put(m.key, types.Row{Values: ny})
		}
		if have {
			vs := append([]types.Value(nil), stored.Values...)
			vs[len(vs)-2].I++
			mine.Put(xkey, types.Row{Values: vs})
		} else {
			vs := make([]types.Value, width+2)
			copy(vs, x)
			vs[width], vs[width+1] = types.IntValue(1), types.IntValue(nmatch)
			mine.Put(xkey, types.Row{Values: vs})
		}
		return nil
	}
	if len(matches) == 0 && f.outer[s] {
		emit(types.Delete, f.joined(s, x, nil))
	}
	for _, m := range matches {
		y := m.row.Values
		cnt, assoc := y[len(y)-2].I, y[len(y)-1].I
		for range cnt {
			emit(types.Delete, f.joined(s, x, y))
		}
		ny := append([]types.Value(nil), y...)
		ny[len(ny)-1].I--
		other.Put(m.key, types.Row{Values: ny})
		if f.outer[o] && assoc == 1 {
			for range cnt {
				emit(types.Insert, f.joined(o, y, nil))
			}
		}
	}
	c := stored.Values[len(stored.Values)-2].I
	if c <= 1 {
		mine.Remove(xkey)
	} else {
		vs := append([]types.Value(nil), stored.Values...)
		vs[len(vs)-2].I--
		mine.Put(xkey, types.Row{Values: vs})
	}
	return nil
}

// compileConjunction compiles a join's residual conditions into one AND
// (nil when there are none), with their SQL text for EXPLAIN.
func compileConjunction(ec *expr.Compiler, conds []parser.Expr) (*expr.Expr, []string, error) {
	var res *expr.Expr
	var text []string
	for _, c := range conds {
		ce, err := ec.Compile(c)
		if err != nil {
			return nil, nil, err
		}
		if ce.Type.Kind != types.Boolean {
			return nil, nil, expr.ErrAt(c, "a join condition must be BOOLEAN, not %s", ce.Type)
		}
		if res == nil {
			res = &ce
		} else {
			x := expr.Logic("AND", *res, ce)
			res = &x
		}
		text = append(text, parser.ExprString(c))
	}
	return res, text, nil
}

// joinedValues is a joined row's values: nl of l, then nr of r, a nil side
// (the unmatched side of an outer join) padded with NULLs.
func joinedValues(nl, nr int, l, r []types.Value) []types.Value {
	vs := make([]types.Value, nl+nr)
	if l == nil {
		for i := 0; i < nl; i++ {
			vs[i] = types.NullValue
		}
	} else {
		copy(vs[:nl], l)
	}
	if r == nil {
		for i := nl; i < nl+nr; i++ {
			vs[i] = types.NullValue
		}
	} else {
		copy(vs[nl:], r)
	}
	return vs
}
