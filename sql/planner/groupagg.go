package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// planAggregate plans a SELECT with GROUP BY, aggregates, HAVING or
// DISTINCT: a window aggregation when it groups by a window table
// function's window_start and window_end or by a legacy group window
// (TUMBLE(ts, ...)), else a retracting group aggregation.
func (p *planner) planAggregate(s *parser.Select, from *rel) (*rel, error) {
	groupBy := s.GroupBy
	var distinctNames []string // SELECT DISTINCT: each key's alias ("" if none)
	if s.Distinct {
		if len(groupBy) > 0 || hasAggregateItems(s.Items, p.s.cat.functions()) {
			return nil, parser.Errorf(s.Pos, "SELECT DISTINCT with GROUP BY or aggregates is not supported yet")
		}
		// SELECT DISTINCT a, b == SELECT a, b ... GROUP BY a, b
		for _, it := range s.Items {
			if it.Star {
				for _, c := range from.sc.Cols {
					groupBy = append(groupBy, &parser.Ident{Pos: it.Pos, Parts: []string{c.Name}})
					distinctNames = append(distinctNames, "")
				}
				continue
			}
			groupBy = append(groupBy, it.Expr)
			distinctNames = append(distinctNames, it.Alias)
		}
	}
	ec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: from.sc, What: "GROUP BY"}

	// the window: a legacy group window call among the GROUP BY items, or
	// window_start/window_end of a window TVF
	var win *windowSpec
	var legacy *parser.Call
	var keys []parser.Expr
	tvfStart, tvfEnd := false, false
	for _, g := range groupBy {
		if c, ok := g.(*parser.Call); ok && (c.Name == "TUMBLE" || c.Name == "HOP" || c.Name == "SESSION" || c.Name == "CUMULATE") {
			if legacy != nil {
				return nil, expr.ErrAt(g, "only one group window is allowed")
			}
			w, err := legacyWindow(c, ec)
			if err != nil {
				return nil, err
			}
			w.input = from
			win, legacy = w, c
			continue
		}
		if from.win != nil {
			if id, ok := g.(*parser.Ident); ok {
				idx, rest, err := ec.Resolve(id)
				if err == nil && len(rest) == 0 {
					switch idx {
					case from.win.startCol:
						tvfStart = true
						continue
					case from.win.endCol:
						tvfEnd = true
						continue
					}
				}
			}
		}
		keys = append(keys, g)
	}
	// GROUPING SETS, ROLLUP, CUBE: the distinct keys and the sets over
	// them (grouping_sets.go)
	keys, gsets, err := groupingSetsOf(keys)
	if err != nil {
		return nil, err
	}
	if from.win != nil && (tvfStart || tvfEnd) {
		if !(tvfStart && tvfEnd) {
			return nil, parser.Errorf(s.Pos, "a window aggregation must group by both window_start and window_end")
		}
		win = from.win
	}
	// GROUP BY the window_start and window_end of a window operator's
	// output (through projections): a window aggregation too
	// (window_attached.go)
	var attached *attachedWindow
	if win == nil {
		attached = attachedWindowKeys(keys, ec, from)
	}
	// for a window aggregation, the group keys and aggregate arguments are
	// compiled against the window's input (the TVF's own columns are
	// computed by the window operator)
	aggScope := from
	fullWin := win
	if win != nil {
		if win.input.mode != types.InsertOnly {
			return nil, parser.Errorf(s.Pos, "window aggregation over an updating input (%s) is not supported yet", win.input.updater)
		}
		// an input row of the columns the aggregation reads (prune.go)
		selects := []parser.Expr{s.Having}
		for _, it := range s.Items {
			selects = append(selects, it.Expr)
		}
		win = narrowWindowInput(win, keys, selects, p.s.cat.functions())
		aggScope = win.input
	}
	kec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: aggScope.sc, What: "GROUP BY"}
	keyExprs := make([]expr.Expr, len(keys))
	for i, k := range keys {
		ce, err := kec.Compile(k)
		if err != nil {
			if win != nil && from.win != nil {
				return nil, expr.ErrAt(k, "%v (a window aggregation groups by window_start, window_end and columns of the window's input)", err)
			}
			return nil, err
		}
		keyExprs[i] = ce
	}
	keyText := make([]string, len(keys))
	for i, k := range keys {
		keyText[i] = parser.ExprString(k)
	}
	// the keys as written, before an Expand makes them its columns
	userKeys := keyExprs
	var gsetsText string
	if gsets != nil {
		if attached != nil {
			return nil, parser.Errorf(s.Pos, "GROUPING SETS, ROLLUP and CUBE over a window operator's output are not supported yet")
		}
		var exp *rel
		exp, keyExprs = gsets.expand(aggScope, keyExprs, keyText)
		gsetsText = exp.op
		if win != nil {
			w := *win
			w.input = exp
			win = &w
		}
		aggScope = exp
		keys = append(slices.Clip(keys), &parser.Ident{Pos: s.Pos, Parts: []string{"$e"}})
		keyText = append(keyText, "$e")
	}
	// aggregate calls, in order of appearance, deduplicated
	var calls []*expr.AggCall
	var callText []string
	var callASTs []*parser.Call // as written, for the split of distinct aggregates
	callIdx := map[string]int{}
	collect := func(e parser.Expr) error {
		var err error
		walkExpr(e, func(x parser.Expr) bool {
			c, ok := x.(*parser.Call)
			if !ok || c.Over != nil || !expr.IsAggregate(c.Name, p.s.cat.functions()) || err != nil {
				return err == nil
			}
			key := parser.ExprString(c)
			if _, seen := callIdx[key]; seen {
				return false
			}
			aec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: aggScope.sc, What: "an aggregate's argument"}
			var a *expr.AggCall
			a, err = expr.CompileAgg(c, aec, aggScope.mode != types.InsertOnly)
			if err != nil {
				return false
			}
			callIdx[key] = len(calls)
			calls = append(calls, a)
			callASTs = append(callASTs, c)
			callText = append(callText, key)
			return false
		})
		return err
	}
	for _, it := range s.Items {
		if it.Expr != nil {
			if err := collect(it.Expr); err != nil {
				return nil, err
			}
		}
	}
	if s.Having != nil {
		if err := collect(s.Having); err != nil {
			return nil, err
		}
	}
	layout := expr.NewAggLayout(len(keys), calls)

	// the aggregation's output: keys, aggregates (and window columns)
	out := &expr.Scope{}
	for i, k := range keys {
		out.Cols = append(out.Cols, expr.Column{Name: derivedName(k, i), Type: keyExprs[i].Type})
	}
	for i, a := range calls {
		out.Cols = append(out.Cols, expr.Column{Name: fmt.Sprintf("$agg%d", i), Type: a.OutT})
	}
	var agg *rel
	// table.optimizer.distinct-agg.split.enabled (distinct_split.go)
	var split *rel
	if win == nil && attached == nil && gsets == nil {
		var err error
		if split, err = p.splitDistinctAgg(s.Pos, from, keyExprs, keyText, callASTs, calls, out); err != nil {
			return nil, err
		}
	}
	if split != nil {
		agg = split
	} else if win != nil {
		if win.kind == "SESSION" {
			if err := layout.MergeErr(); err != nil {
				return nil, parser.Errorf(s.Pos, "%v", err)
			}
		}
		ts := win.timeType
		ts.TimeAttr, ts.NotNull = 0, true
		wt := ts
		wt.TimeAttr = types.RowtimeAttr
		if win.proctime {
			wt.TimeAttr = types.ProctimeAttr // as Flink: a processing-time window's time stays processing time
		}
		ms, me := winMarks(win.proctime)
		out.Cols = append(out.Cols, expr.Column{Name: "window_start", Type: ts, Win: ms}, expr.Column{Name: "window_end", Type: ts, Win: me}, expr.Column{Name: "window_time", Type: wt})
		op := fmt.Sprintf("WindowAggregate(groupBy=[%s], window=[%s], select=[%s])", strings.Join(keyText, ", "), win, strings.Join(callText, ", "))
		agg = windowAggRel(win, keyExprs, layout, out, op)
		// the same aggregation of the same input is planned once (reuse.go)
		agg = p.reuseRel(fmt.Sprintf("%s|%p|%s|%v|%s|%s", op, fullWin.input.canonical(), win.offset, win.proctime, scopeDigest(fullWin.input.sc), gsetsText), agg)
	} else if attached != nil {
		agg = attachedWindowAggRel(from, keyExprs, attached, layout, out,
			fmt.Sprintf("WindowAggregate(groupBy=[%s], window=[%s], select=[%s])", strings.Join(keyText, ", "), attached.String(keyText), strings.Join(callText, ", ")))
	} else {
		mb, err := p.s.miniBatch(s.Pos)
		if err != nil {
			return nil, err
		}
		text := fmt.Sprintf("GroupAggregate(groupBy=[%s], select=[%s])", strings.Join(keyText, ", "), strings.Join(callText, ", "))
		if mb > 0 {
			text = fmt.Sprintf("GroupAggregate(groupBy=[%s], select=[%s], miniBatch=[size=%d])", strings.Join(keyText, ", "), strings.Join(callText, ", "), mb)
		}
		two := p.twoPhase(aggScope, layout, mb)
		if two {
			if mb <= 0 {
				mb = 1024
			}
			text = fmt.Sprintf("GlobalGroupAggregate(groupBy=[%s], select=[%s], local=[LocalGroupAggregate], miniBatch=[size=%d])", strings.Join(keyText, ", "), strings.Join(callText, ", "), mb)
		}
		agg = groupAggRel(aggScope, keyExprs, layout, out, text, mb, two)
	}

	// the select list and HAVING over the aggregation's output
	nk := len(keys)
	var subst func(e parser.Expr) (expr.Expr, bool, error)
	// keyOf is the key that e is (-1: none), for GROUPING's arguments
	keyOf := func(e parser.Expr) int {
		x, ok, err := subst(e)
		if !ok || err != nil || x.Col < 0 || x.Col >= len(userKeys) {
			return -1
		}
		return x.Col
	}
	subst = func(e parser.Expr) (expr.Expr, bool, error) {
		if c, ok := e.(*parser.Call); ok {
			if c.Over == nil && isGroupingCall(c.Name) && p.s.cat.functions()[c.Name] == nil {
				x, err := groupingFn(c, gsets, nk-1, keyOf)
				return x, err == nil, err
			}
			if c.Over == nil && expr.IsAggregate(c.Name, p.s.cat.functions()) {
				i := callIdx[parser.ExprString(c)]
				return expr.ColRef(nk+i, out.Cols[nk+i].Type), true, nil
			}
			if expr.WindowPropNames[c.Name] {
				if legacy == nil || !strings.HasPrefix(c.Name, legacy.Name+"_") {
					return expr.Expr{}, false, expr.ErrAt(c, "%s needs a matching GROUP BY %s(...)", c.Name, strings.Split(c.Name, "_")[0])
				}
				base := nk + len(calls)
				switch {
				case strings.HasSuffix(c.Name, "_START"):
					return expr.ColRef(base, out.Cols[base].Type), true, nil
				case strings.HasSuffix(c.Name, "_END"):
					return expr.ColRef(base+1, out.Cols[base+1].Type), true, nil
				case strings.HasSuffix(c.Name, "_ROWTIME"):
					if win.proctime {
						return expr.Expr{}, false, expr.ErrAt(c, "%s: a proctime window cannot provide a rowtime attribute", c.Name)
					}
					return expr.ColRef(base+2, out.Cols[base+2].Type), true, nil
				}
				// _PROCTIME: a processing-time attribute, as Flink's window
				// property: a processing-time window's own (its
				// window_time), else PROCTIME() of the result row
				if win.proctime {
					return expr.ColRef(base+2, out.Cols[base+2].Type), true, nil
				}
				x, err := (&expr.Compiler{Funcs: p.s.cat.functions(), Scope: out}).Compile(&parser.Call{Pos: c.Pos, Name: "PROCTIME"})
				return x, err == nil, err
			}
		}
		text := parser.ExprString(e)
		for i, k := range keyText {
			if k == text {
				return expr.ColRef(i, out.Cols[i].Type), true, nil
			}
		}
		if id, ok := e.(*parser.Ident); ok {
			// a column of the input that is a group key under another spelling
			if idx, rest, err := ec.Resolve(id); err == nil && len(rest) == 0 {
				if win != nil && from.win != nil {
					base := nk + len(calls)
					switch idx {
					case from.win.startCol:
						return expr.ColRef(base, out.Cols[base].Type), true, nil
					case from.win.endCol:
						return expr.ColRef(base+1, out.Cols[base+1].Type), true, nil
					case from.win.timeCol:
						return expr.ColRef(base+2, out.Cols[base+2].Type), true, nil
					}
				}
				for i, k := range userKeys {
					if k.Col >= 0 && win == nil && k.Col == idx {
						return expr.ColRef(i, out.Cols[i].Type), true, nil
					}
					if k.Col >= 0 && win != nil && aggScope.sc.Cols[k.Col].Name == from.sc.Cols[idx].Name && win.narrowCol(inputIdx(from, idx)) == k.Col {
						return expr.ColRef(i, out.Cols[i].Type), true, nil
					}
				}
				return expr.Expr{}, false, expr.ErrAt(e, "expression '%s' is not being grouped", text)
			}
		}
		return expr.Expr{}, false, nil
	}
	pec := &expr.Compiler{Funcs: p.s.cat.functions(), Scope: out, Subst: subst, What: "SELECT"}
	var having *expr.Expr
	if s.Having != nil {
		pec.What = "HAVING"
		h, err := pec.Compile(s.Having)
		if err != nil {
			return nil, err
		}
		if h.Type.Kind != types.Boolean {
			return nil, expr.ErrAt(s.Having, "HAVING needs a BOOLEAN condition, not %s", h.Type)
		}
		having = &h
		pec.What = "SELECT"
	}
	items := s.Items
	if s.Distinct {
		// the keys, in order
		items = nil
		for i, k := range keys {
			name := out.Cols[i].Name
			if i < len(distinctNames) && distinctNames[i] != "" {
				name = distinctNames[i] // SELECT DISTINCT v AS w
			}
			items = append(items, parser.SelectItem{Expr: k, Alias: name})
		}
	}
	pr, err := expandSelect(items, pec)
	if err != nil {
		return nil, err
	}
	desc := "Calc(select=[" + strings.Join(pr.names, ", ") + "]"
	if having != nil {
		desc += ", where=[" + parser.ExprString(s.Having) + "]"
	}
	return calcRel(agg, having, pr, desc+")"), nil
}

func hasAggregateItems(items []parser.SelectItem, funcs map[string]expr.Function) bool {
	for _, it := range items {
		if it.Expr != nil && hasAggregate(it.Expr, funcs) {
			return true
		}
	}
	return false
}

// groupAggRel is a retracting group aggregation: a keyed process function
// that keeps the accumulators of each group in weir state and emits, per
// input row, the change of the group's result (+I for a new group,
// -U/+U for an update, -D when the group empties), as Flink's
// GroupAggFunction does without mini-batches. With miniBatch, a batch's
// rows per key make one change (miniBatchAggFn); with twoPhase, a local
// phase before the shuffle folds them into partials that it merges.
func groupAggRel(in *rel, keys []expr.Expr, layout *expr.AggLayout, out *expr.Scope, op string, miniBatch int, twoPhase bool) *rel {
	keyEvals := evals(keys)
	nk := len(keyEvals)
	r := &rel{op: op, sc: out, mode: types.All, inputs: []*rel{in}, updater: op, bounded: in.bounded}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		// it keeps accumulators, and a mini-batch its rows until the
		// batch ends: nothing of a row after that (lend.go's slabs)
		b.copies(in)
		key := func(row types.Row) string {
			if nk == 0 {
				return ""
			}
			var buf [4]types.Value
			vs := buf[:0]
			for _, f := range keyEvals {
				vs = append(vs, f(row.Values))
			}
			return types.Key(vs)
		}
		uid := "group-agg"
		if twoPhase {
			// the local phase before the shuffle: a partial accumulator
			// per group and batch, whose first nk values are the keys.
			// Chained to its input, it keeps nothing of a row once it
			// has folded it (its keys are copied, its values read), so
			// the input's rows may be lent (lend.go)
			b.borrow(in)
			s = weir.FlatMapFlushWith(s, func() (func(types.Row, func(types.Row)), func(func(types.Row))) {
				return localAggFn(layout, keyEvals)
			}, b.uid("local-agg"), weir.Name("LocalGroupAggregate"))
			key = func(row types.Row) string { return types.Key(row.Values[:nk]) }
			uid = "global-agg"
		}
		ks := weir.KeyBy(s, key)
		// rows lent to a chained sink (or a chained operator that keeps
		// nothing of them) reuse a ring (lend.go): the process operator
		// sends its output on whenever a batch is full, even within one
		// call (a mini-batch's end), so a slot is written again only after
		// the sink has had its row
		rm := b.rowMaker(r, layout.NKeys+len(layout.Calls))
		ub := b.needUB(r)
		grows := !twoPhase && in.mode == types.InsertOnly && countsEveryRow(layout)
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			fn := groupAggFn{layout: layout, keys: keyEvals, rows: rm, ub: ub, grows: grows, storeDistinct: b.storesDistinct(layout), opts: b.stateOpts()}
			if miniBatch > 0 {
				return &miniBatchAggFn{groupAggFn: fn, size: miniBatch, merge: twoPhase}
			}
			return &fn
		}, b.uid(uid)), nil
	}
	return r
}

type groupAggFn struct {
	layout *expr.AggLayout
	keys   []expr.EvalFn
	// acc is each group's accumulator, packed (groupagg_state.go)
	acc *weir.ValueState[string, packedAcc]
	// scratch holds an unpacked accumulator during a call; keyBuf a new
	// group's keys (Create copies them)
	scratch, keyBuf []types.Value
	// rows makes the output rows (lent from a ring where they may be)
	rows rowMaker
	// before holds a group's results before a change (results): compared
	// with the results after, and made a row only for a -U or -D sent
	before []types.Value
	// grows: every input row changes its group's result (an insert-only
	// input and an unfiltered COUNT(*) in the results): where the -U rows
	// are not read either, the results before a change are not needed
	grows bool
	// ub: an update emits its -U (ub.go); else +U alone
	ub *bool
	// storeDistinct: the DISTINCT sets are in map state (distinct, nil
	// on the heap: groupagg_distinct.go), the accumulators hold their
	// sizes
	storeDistinct bool
	distinct      *distinctState
	// restored: on the heap, the same map state, which holds entries only
	// when restored from a savepoint taken on Pebble (internalize)
	restored *distinctState
	// opts: the state's TTL ('table.exec.state.ttl', builder.stateOpts)
	opts []weir.StateOption
}

func (f *groupAggFn) Open(rc *weir.RuntimeContext[string]) error {
	f.acc = weir.NewValueState[packedAcc](rc, "acc", f.opts...)
	switch {
	case f.storeDistinct:
		f.distinct = newDistinctState(rc, f.layout, f.opts...)
	case len(f.layout.DistinctUnits()) > 0:
		f.restored = newDistinctState(rc, f.layout, f.opts...)
	}
	return nil
}

// expired clears what is left of a group whose accumulator is gone, when
// the state has a TTL: its DISTINCT entries, which expire one by one, so
// some may outlive the accumulator (the group starts over).
func (f *groupAggFn) expired() {
	if len(f.opts) == 0 {
		return
	}
	if f.distinct != nil {
		f.distinct.m.Clear()
	}
	if f.restored != nil {
		f.restored.m.Clear()
	}
}

// create makes a new group's accumulator for its first row in (not yet
// accumulated).
func (f *groupAggFn) create(in []types.Value) []types.Value {
	f.keyBuf = f.keyBuf[:0]
	for _, k := range f.keys {
		f.keyBuf = append(f.keyBuf, k(in))
	}
	return f.layout.Create(f.keyBuf)
}

func (f *groupAggFn) output(acc []types.Value) []types.Value {
	l := f.layout
	vs := f.rows.next()
	copy(vs, acc[:l.NKeys])
	for i, c := range l.Calls {
		vs[l.NKeys+i] = l.Result(acc, c)
	}
	return vs
}

// results returns acc's aggregate results in f.before (no keys): a
// group's result before a change, which is only compared with the one
// after unless a -U or -D carries it (a row from f.rows, beforeRow). An
// output row per group and change went unused where the -U rows are not
// read (a sink that drops them, mini-batch's unchanged groups), and its
// key copy into a ring of output rows too large for the cache was a
// cache miss (Nexmark q16: 18 columns, a change per channel and batch).
func (f *groupAggFn) results(acc []types.Value) []types.Value {
	l := f.layout
	f.before = f.before[:0]
	for _, c := range l.Calls {
		f.before = append(f.before, l.Result(acc, c))
	}
	return f.before
}

// countsEveryRow reports whether the results of layout include an
// unfiltered COUNT(*), which an inserted row always changes.
func countsEveryRow(layout *expr.AggLayout) bool {
	for _, c := range layout.Calls {
		if c.Kind == expr.AggCountStar && c.Filter == nil {
			return true
		}
	}
	return false
}

// needBefore reports whether a change of an existing group needs its
// results before (results): for the -U row, or to tell whether the
// result changed at all.
func (f *groupAggFn) needBefore() bool { return !f.grows || f.ub == nil || *f.ub }

// beforeRow is the output row of the group of acc with the results
// before (from results).
func (f *groupAggFn) beforeRow(acc, before []types.Value) []types.Value {
	vs := f.rows.next()
	n := copy(vs, acc[:f.layout.NKeys])
	copy(vs[n:], before)
	return vs
}

func (f *groupAggFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	st, ok := f.acc.Value()
	sign := int64(1)
	if in.Kind.IsRetraction() {
		sign = -1
		if !ok {
			// a retraction of a group never seen (state expired, or an
			// input that starts mid-changelog): nothing to take back
			return nil
		}
	}
	var prev []types.Value
	var acc []types.Value
	if ok {
		// (written out here and in EndBatch, not a method: the heap's
		// path is as it was, measured)
		acc, f.scratch = st.unpack(f.scratch)
		if f.distinct != nil {
			f.layout.Externalize(acc, f.distinct)
		} else if f.restored != nil && f.layout.SizesOnly(acc) {
			acc = f.restored.internalize(f.layout, acc)
		}
		if f.needBefore() {
			prev = f.results(acc)
		}
	} else {
		f.expired()
		acc = f.create(in.Values)
	}
	if f.distinct != nil {
		f.layout.AccumulateWith(acc, in.Values, sign, f.distinct)
	} else {
		f.layout.Accumulate(acc, in.Values, sign)
	}
	f.settle(ctx, st, ok, prev, acc, !ok)
	return nil
}

// settle keeps the group's new accumulator acc in st, its state before
// (acc nil: the group was not touched; owned: acc is not f.scratch), and
// emits its change from prev, the results before (results; had: the
// group existed before; nil for an existing group where !needBefore: the
// result changed, and no -U is sent): -D when the group empties, +I for
// a new one, -U/+U for a changed result, nothing for an unchanged one (as
// Flink).
func (f *groupAggFn) settle(ctx *weir.KeyedContext[string, types.Row], st packedAcc, had bool, prev, acc []types.Value, owned bool) {
	switch {
	case acc == nil:
	case f.layout.Count(acc) <= 0:
		if had {
			ctx.Emit(types.Row{Kind: types.Delete, Values: f.beforeRow(acc, prev)})
		}
		f.acc.Clear()
		if f.distinct != nil && f.layout.HoldsDistinct(acc) {
			// values left by retractions of rows never added: the heap
			// drops them with the accumulator
			f.distinct.m.Clear()
		}
	default:
		f.acc.Update(st.store(acc, owned))
		next := f.output(acc)
		switch {
		case !had:
			ctx.Emit(types.Row{Kind: types.Insert, Values: next})
		case prev == nil && !f.needBefore():
			ctx.Emit(types.Row{Kind: types.UpdateAfter, Values: next})
		case types.EqualValues(prev, next[f.layout.NKeys:]):
		default:
			if f.ub == nil || *f.ub {
				ctx.Emit(types.Row{Kind: types.UpdateBefore, Values: f.beforeRow(acc, prev)})
			}
			ctx.Emit(types.Row{Kind: types.UpdateAfter, Values: next})
		}
	}
}

// miniBatchAggFn is groupAggFn over mini-batches (Flink's
// table.exec.mini-batch): the rows of an input batch (at most size) are
// buffered per key, and at the batch's end each key's rows are folded into
// its accumulator at once, emitting one change per key — one -U/+U pair
// where the row-at-a-time function emits one per row. The buffer is empty
// at every checkpoint barrier (EndBatch runs before it).
type miniBatchAggFn struct {
	groupAggFn
	size int
	// merge: the rows are a local phase's partial accumulators, merged
	// (the global phase of a two-phase aggregation)
	merge   bool
	index   map[string]int // key -> pending index
	pending []pendingKey
	n       int // rows buffered
}

type pendingKey struct {
	ref  weir.KeyRef[string]
	ts   time.Time
	rows []types.Row
}

// ProcessElement keeps in with its key's rows of the batch.
func (f *miniBatchAggFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	if f.index == nil {
		f.index = map[string]int{}
	}
	k := ctx.Key()
	i, ok := f.index[k]
	if !ok {
		i = len(f.pending)
		f.index[k] = i
		if i < cap(f.pending) {
			f.pending = f.pending[:i+1]
			f.pending[i].ref = ctx.KeyRef()
		} else {
			f.pending = append(f.pending, pendingKey{ref: ctx.KeyRef()})
		}
	}
	p := &f.pending[i]
	p.ts = ctx.Timestamp()
	p.rows = append(p.rows, in)
	if f.n++; f.n >= f.size {
		return f.EndBatch(ctx)
	}
	return nil
}

// EndBatch folds each key's buffered rows into its accumulator and emits
// the key's change.
func (f *miniBatchAggFn) EndBatch(ctx *weir.KeyedContext[string, types.Row]) error {
	for i := range f.pending {
		p := &f.pending[i]
		ctx.SetKey(p.ref, p.ts)
		st, ok := f.acc.Value()
		var prev, acc []types.Value
		if ok {
			acc, f.scratch = st.unpack(f.scratch)
			if f.distinct != nil {
				f.layout.Externalize(acc, f.distinct)
			} else if f.restored != nil && f.layout.SizesOnly(acc) {
				acc = f.restored.internalize(f.layout, acc)
			}
			if f.needBefore() {
				prev = f.results(acc)
			}
		} else {
			f.expired()
		}
		acc = f.fold(acc, p.rows)
		clear(p.rows)
		p.rows = p.rows[:0]
		f.settle(ctx, st, ok, prev, acc, !ok)
	}
	f.pending = f.pending[:0]
	clear(f.index)
	f.n = 0
	return nil
}

// fold adds a key's rows to its accumulator (nil: a new group), or merges
// its partials into it.
func (f *miniBatchAggFn) fold(acc []types.Value, rows []types.Row) []types.Value {
	l := f.layout
	for _, in := range rows {
		switch {
		case f.merge && acc == nil:
			acc = append([]types.Value(nil), in.Values...)
			if f.distinct != nil {
				l.Externalize(acc, f.distinct)
			}
		case f.merge && f.distinct != nil:
			l.MergeWith(acc, in.Values, f.distinct)
		case f.merge:
			l.Merge(acc, in.Values)
		case in.Kind.IsRetraction() && acc == nil:
			// a retraction of a group never seen
		default:
			if acc == nil {
				acc = f.create(in.Values)
			}
			sign := int64(1)
			if in.Kind.IsRetraction() {
				sign = -1
			}
			if f.distinct != nil {
				l.AccumulateWith(acc, in.Values, sign, f.distinct)
			} else {
				l.Accumulate(acc, in.Values, sign)
			}
		}
	}
	return acc
}

// Two-phase (local-global) group aggregation, Flink's
// table.optimizer.agg-phase-strategy TWO_PHASE (or AUTO, its default,
// with mini-batch on): before the shuffle, each subtask folds the rows of
// an input batch per group into partial accumulators (the local phase, a
// FlatMap flushed at the batch's end); the shuffle carries one partial per
// group and batch, and the global phase merges them into the group's state
// (AggLayout.Merge), emitting one change per group and batch. A hot key's
// rows are then counted where they arrive, not all on one subtask. Planned
// for insert-only inputs whose aggregates all merge.

// twoPhase reports whether an aggregation of in with layout runs in two
// phases.
func (p *planner) twoPhase(in *rel, layout *expr.AggLayout, miniBatch int) bool {
	strategy := "AUTO"
	if v, ok := p.s.sets["table.optimizer.agg-phase-strategy"]; ok {
		strategy = strings.ToUpper(v)
	}
	switch {
	case strategy == "ONE_PHASE", miniBatch <= 0 && strategy != "TWO_PHASE":
		return false
	case in.mode != types.InsertOnly, layout.MergeErr() != nil:
		return false
	}
	if strategy == "AUTO" {
		// a DISTINCT aggregate's partials are multisets of values, whose
		// merge costs more than it saves (Flink splits them instead:
		// table.optimizer.distinct-agg.split.enabled, distinct_split.go)
		for _, c := range layout.Calls {
			if c.Distinct {
				return false
			}
		}
	}
	return true
}

// localAggFn is the local phase: partial accumulators per group key for
// one input batch. A row of a group already seen costs no allocation: the
// key is built in scratch space and looked up without a string.
func localAggFn(layout *expr.AggLayout, keys []expr.EvalFn) (func(types.Row, func(types.Row)), func(func(types.Row))) {
	index := map[string]int{}
	var accs [][]types.Value
	kv := make([]types.Value, len(keys))
	var kb []byte
	fn := func(in types.Row, _ func(types.Row)) {
		for i, k := range keys {
			kv[i] = k(in.Values)
		}
		kb = types.AppendKey(kb[:0], kv)
		i, ok := index[string(kb)]
		if !ok {
			i = len(accs)
			index[string(kb)] = i
			accs = append(accs, layout.Create(kv)) // Create copies the keys
		}
		layout.Accumulate(accs[i], in.Values, 1)
	}
	flush := func(emit func(types.Row)) {
		for _, acc := range accs {
			emit(types.Row{Kind: types.Insert, Values: acc})
		}
		accs = accs[:0]
		clear(index)
	}
	return fn, flush
}
