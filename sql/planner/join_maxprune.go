package planner

import (
	"strings"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The window-maximum prune (Nexmark q7): a regular join of a table's rows
// with the per-window MAX of one of their columns,
//
//	SELECT ... FROM t B JOIN (
//	  SELECT MAX(price) AS maxprice, window_end AS e
//	  FROM TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL 's'))
//	  GROUP BY window_start, window_end) B1
//	ON B.price = B1.maxprice
//	WHERE B.ts BETWEEN B1.e - INTERVAL 'd' AND B1.e
//
// is planned as Flink plans it, a regular join on price (window_end is not
// a time attribute, so the BETWEEN is a filter, not an interval join),
// which keeps every row of t in the join's state. Here a filter before the
// join's left input drops the rows that provably can never pass the join
// and the WHERE, so the join keeps a handful of rows per window instead of
// all of them; the rows it outputs are the same:
//
// A left row b (price p, time t) can only pass with a MAX row of a window
// whose end E has t <= E <= t + d (the BETWEEN), and only if that window's
// MAX equals p. The filter tracks, per window, the largest price of the
// rows it has seen that the window aggregation has certainly counted; if
// that is above p for every such window, every such window's MAX is above
// p, so b can never match one of them, whenever either side arrives (a MAX
// row already in the join's state included): b is dropped. A row that
// might match passes, and the join works as before.
//
// "Certainly counted": the aggregation drops a row as late when its
// window's end-1 is at or below the aggregation's watermark (weir's window
// operator, as Flink's), and then a larger late price is not in the MAX.
// The filter runs in the scan's task, chained to it (the left input is
// Calcs over the scan, with no exchange), so the watermark it sees before
// a row is the last one the scan emitted before the row; the aggregation
// receives that row after that same watermark on the scan's channel, and
// its own watermark is the minimum over its channels, so it is never
// higher. A row whose window's end-1 is above the filter's watermark is
// therefore counted by the aggregation; only those raise the tracked
// maximum. Rows with a NULL price or time, or a time off the millisecond
// grid, always pass.
//
// The filter's per-window maxima are a hint, not state: after a restore
// they start empty and the filter passes more rows (the join's state is
// checkpointed as before), so results do not depend on them.

// maxPruneSpec is what planJoin needs to add the filter: the left columns
// read and the windows' geometry.
type maxPruneSpec struct {
	priceCol, timeCol string // the left input's columns (unqualified)
	size, d           time.Duration
}

// noteJoinWhere records the WHERE of a select over a join, for planJoin.
func (p *planner) noteJoinWhere(s *parser.Select) {
	j, ok := s.From.(*parser.Join)
	if !ok || s.Where == nil {
		return
	}
	if p.joinWhere == nil {
		p.joinWhere = map[*parser.Join]parser.Expr{}
	}
	p.joinWhere[j] = s.Where
}

// matchMaxPrune recognizes the query shape above in the syntax tree of an
// inner join and the WHERE over it (nil if none).
func (p *planner) matchMaxPrune(j *parser.Join) (*maxPruneSpec, bool) {
	if p.cfg.DisableMaxPrune || j.Kind != parser.InnerJoin || len(j.Using) > 0 {
		return nil, false
	}
	lref, ok := j.Left.(*parser.TableRef)
	if !ok || lref.AsOf != nil {
		return nil, false
	}
	sub, ok := j.Right.(*parser.SubqueryTable)
	if !ok || sub.Alias == "" {
		return nil, false
	}
	sel, ok := sub.Query.(*parser.Select)
	if !ok || sel.Where != nil || sel.Having != nil || sel.Distinct || len(sel.OrderBy) > 0 || sel.Limit != nil {
		return nil, false
	}
	tf, ok := sel.From.(*parser.TableFunc)
	if !ok || !strings.EqualFold(tf.Name, "TUMBLE") || len(tf.Args) != 3 {
		return nil, false
	}
	ta, ok := tf.Args[0].(*parser.TableArg)
	if !ok {
		return nil, false
	}
	rref, ok := ta.Table.(*parser.TableRef)
	if !ok || rref.AsOf != nil || p.s.cat.qualify(rref.Name) != p.s.cat.qualify(lref.Name) || !p.deterministicTable(lref.Name) {
		return nil, false
	}
	desc, ok := tf.Args[1].(*parser.Descriptor)
	if !ok || len(desc.Cols) != 1 {
		return nil, false
	}
	sizeLit, ok := tf.Args[2].(*parser.IntervalLit)
	if !ok {
		return nil, false
	}
	size, err := intervalArg(sizeLit, "size")
	if err != nil {
		return nil, false
	}
	// grouped by the window alone: one MAX per window over all its rows
	if len(sel.GroupBy) == 0 {
		return nil, false
	}
	for _, g := range sel.GroupBy {
		id, ok := g.(*parser.Ident)
		if !ok || len(id.Parts) != 1 || (!strings.EqualFold(id.Parts[0], "window_start") && !strings.EqualFold(id.Parts[0], "window_end")) {
			return nil, false
		}
	}
	var maxAlias, maxCol, endAlias string
	for _, it := range sel.Items {
		switch x := it.Expr.(type) {
		case *parser.Call:
			if x.Name == "MAX" && len(x.Args) == 1 && x.Filter == nil && x.Over == nil && !x.Star && it.Alias != "" {
				if id, ok := x.Args[0].(*parser.Ident); ok && len(id.Parts) == 1 && maxAlias == "" {
					maxAlias, maxCol = it.Alias, id.Parts[0]
				}
			}
		case *parser.Ident:
			if len(x.Parts) == 1 && strings.EqualFold(x.Parts[0], "window_end") && endAlias == "" {
				endAlias = it.Alias
				if endAlias == "" {
					endAlias = "window_end"
				}
			}
		}
	}
	if maxAlias == "" || endAlias == "" {
		return nil, false
	}
	la := lref.Alias
	if la == "" {
		la = lastPart(lref.Name)
	}
	is := func(e parser.Expr, qual, col string) bool {
		id, ok := e.(*parser.Ident)
		return ok && len(id.Parts) == 2 && strings.EqualFold(id.Parts[0], qual) && strings.EqualFold(id.Parts[1], col)
	}
	conds := splitAnd(j.On)
	if w := p.joinWhere[j]; w != nil {
		conds = append(conds, splitAnd(w)...)
	}
	eq, between := false, false
	var d time.Duration
	for _, c := range conds {
		switch x := c.(type) {
		case *parser.Binary:
			if x.Op == "=" && (is(x.L, la, maxCol) && is(x.R, sub.Alias, maxAlias) || is(x.R, la, maxCol) && is(x.L, sub.Alias, maxAlias)) {
				eq = true
			}
		case *parser.Between:
			if x.Not || !is(x.X, la, desc.Cols[0]) || !is(x.Hi, sub.Alias, endAlias) {
				continue
			}
			lo, ok := x.Lo.(*parser.Binary)
			if !ok || lo.Op != "-" || !is(lo.L, sub.Alias, endAlias) {
				continue
			}
			iv, ok := lo.R.(*parser.IntervalLit)
			if !ok {
				continue
			}
			ms, months, err := expr.IntervalValue(iv)
			if err != nil || months || ms < 0 {
				continue
			}
			between, d = true, time.Duration(ms)*time.Millisecond
		}
	}
	if !eq || !between {
		return nil, false
	}
	return &maxPruneSpec{priceCol: maxCol, timeCol: desc.Cols[0], size: size, d: d}, true
}

// deterministicTable reports whether a table name's rows are the same each
// time it is read: a table, or a view whose definition calls no function
// whose value changes between evaluations. Both the join and the window
// aggregation read it; the argument above needs them to see the same rows.
func (p *planner) deterministicTable(name string) bool {
	if len(p.ctes) > 0 {
		return false
	}
	v := p.s.cat.view(name)
	if v == nil {
		return true
	}
	sel, ok := v.ddl.Query.(*parser.Select)
	if !ok {
		return false
	}
	if _, ok := sel.From.(*parser.TableRef); !ok || sel.GroupBy != nil || sel.Having != nil || sel.Distinct || sel.Limit != nil {
		return false
	}
	det := true
	check := func(e parser.Expr) {
		walkExpr(e, func(x parser.Expr) bool {
			switch x := x.(type) {
			case *parser.Call:
				switch strings.ToUpper(x.Name) {
				case "RAND", "RAND_INTEGER", "UUID", "NOW", "PROCTIME", "CURRENT_TIMESTAMP", "CURRENT_DATE",
					"CURRENT_TIME", "LOCALTIME", "LOCALTIMESTAMP", "CURRENT_ROW_TIMESTAMP", "UNIX_TIMESTAMP":
					det = false
				}
				if x.Over != nil {
					det = false
				}
			case *parser.Ident:
				if len(x.Parts) == 1 {
					switch strings.ToUpper(x.Parts[0]) {
					case "CURRENT_TIMESTAMP", "CURRENT_DATE", "CURRENT_TIME", "LOCALTIME", "LOCALTIMESTAMP":
						det = false
					}
				}
			case *parser.Subquery:
				det = false
			}
			return det
		})
	}
	for _, it := range sel.Items {
		if it.Expr != nil {
			check(it.Expr)
		}
	}
	if sel.Where != nil {
		check(sel.Where)
	}
	return det
}

// overScan reports whether r is Calcs over a table scan that assigns
// watermarks, so that a filter over r runs chained to the scan.
func overScan(r *rel) bool {
	r = r.canonical()
	for r.calc != nil {
		r = r.calc.input.canonical()
	}
	return strings.HasPrefix(r.op, "TableSourceScan(") && strings.Contains(r.op, "watermark=[") && len(r.inputs) == 0
}

// maxPruneCols resolves spec's columns on the join's left input: the
// price column (an integer) and the time column (the left input's
// event-time attribute), with the windows' geometry checked; ok is false
// when the filter does not apply.
func maxPruneCols(spec *maxPruneSpec, left *rel) (pc, tc int, ok bool) {
	if spec == nil || left.mode != types.InsertOnly || !overScan(left) {
		return 0, 0, false
	}
	pc, tc = -1, -1
	for i, c := range left.sc.Cols {
		if strings.EqualFold(c.Name, spec.priceCol) {
			if pc >= 0 {
				return 0, 0, false
			}
			pc = i
		}
		if strings.EqualFold(c.Name, spec.timeCol) {
			if tc >= 0 {
				return 0, 0, false
			}
			tc = i
		}
	}
	if pc < 0 || tc < 0 || !left.sc.Cols[pc].Type.IsInteger() || left.sc.Cols[tc].Type.TimeAttr != types.RowtimeAttr {
		return 0, 0, false
	}
	size, d := spec.size.Milliseconds(), spec.d.Microseconds()
	if size <= 0 || d/1000/size > maxPruneWindows {
		return 0, 0, false
	}
	return pc, tc, true
}

// maxPruneFilter returns the filter to put after the join's left input
// (nil if maxPruneCols does not apply). maxPruneBelowCalc is preferred: it
// runs the same test before the left Calc builds its rows.
func maxPruneFilter(spec *maxPruneSpec, left *rel) func(b *builder, s *weir.Stream[types.Row]) *weir.Stream[types.Row] {
	pc, tc, ok := maxPruneCols(spec, left)
	if !ok {
		return nil
	}
	size, d := spec.size.Milliseconds(), spec.d.Microseconds()
	return func(b *builder, s *weir.Stream[types.Row]) *weir.Stream[types.Row] {
		return weir.FilterWatermarkWith(s, func() func(types.Row, int64, int64) bool {
			f := &maxPrune{size: size, d: d}
			return func(row types.Row, ts, wm int64) bool {
				return f.keep(row.Values[pc], row.Values[tc], ts, wm)
			}
		}, b.uid("join-max-prune"), weir.Name("MaxPrune"))
	}
}

// maxPruneBelowCalc returns a replacement for the join's left input, when
// that is one Calc over a projecting scan (q7's bid view over the Nexmark
// source): the same Calc over the filter over the scan. The filter reads
// the price and time with the Calc's own expressions on the scan's row, and
// drops first what the Calc's WHERE drops (so those rows never raise a
// window's maximum, as they are not in the aggregation either); the Calc
// then builds a row only for the few bids that pass, instead of a row per
// bid that the filter drops (nearly all of them in q7). The filter stays
// chained to the scan (no exchange between them), and it sees the
// watermarks and rows the scan emits in the order it emits them, as after
// the Calc (a Calc emits no watermark of its own), so the argument above
// holds unchanged. nil: not that shape (maxPruneFilter then applies after
// the Calc).
func maxPruneBelowCalc(cfg Config, spec *maxPruneSpec, left *rel) *rel {
	pc, tc, ok := maxPruneCols(spec, left)
	if !ok || cfg.DisableMaxPruneBelowCalc {
		return nil
	}
	lc := left.canonical()
	c := lc.calc
	if c == nil || len(c.exprs) != len(left.sc.Cols) || len(lc.sc.Cols) != len(left.sc.Cols) {
		return nil
	}
	scan := c.input.canonical()
	if scan.push == nil || scan.calc != nil || len(scan.inputs) != 0 {
		return nil
	}
	pe, te, filter := c.exprs[pc], c.exprs[tc], c.filter
	if !pe.Type.IsInteger() || pe.Deps == nil || pe.Deps.Unknown || te.Deps == nil || te.Deps.Unknown {
		return nil
	}
	size, d := spec.size.Milliseconds(), spec.d.Microseconds()
	pruned := &rel{op: "MaxPrune", sc: scan.sc, mode: scan.mode, inputs: []*rel{scan},
		traits: traits{push: scan.push}, bounded: scan.bounded, updater: scan.updater}
	pruned.build = func(b *builder) (*weir.Stream[types.Row], error) {
		// the Calc over pruned registered the leaves of its filter and
		// expressions (pe and te among them) before building its input
		in, err := b.stream(scan)
		if err != nil {
			return nil, err
		}
		var where expr.FilterFn
		if filter != nil {
			where = expr.FilterOf(*filter)
		}
		price, tm := pe.Eval, te.Eval
		return weir.FilterWatermarkWith(in, func() func(types.Row, int64, int64) bool {
			f := &maxPrune{size: size, d: d}
			return func(row types.Row, ts, wm int64) bool {
				if where != nil && !where(row.Values) {
					return false // the Calc drops it too
				}
				return f.keep(price(row.Values), tm(row.Values), ts, wm)
			}
		}, b.uid("join-max-prune"), weir.Name("MaxPrune")), nil
	}
	names := make([]string, len(lc.sc.Cols))
	for i, col := range lc.sc.Cols {
		names[i] = col.Name
	}
	out := calcRel(pruned, filter, &projection{names: names, exprs: c.exprs}, lc.op)
	out.sc = left.sc
	return out
}

// maxPruneWindows bounds the windows a row is checked against.
const maxPruneWindows = 8

// maxPrune is the filter of one subtask.
type maxPrune struct {
	size int64 // the window size, ms
	d    int64 // the BETWEEN's interval, µs
	// wins are the tracked windows by end (ms), ascending.
	wins []pruneWin
}

type pruneWin struct{ end, max int64 }

// keep is the filter of a row with price pv and time tv: ts is the row's
// event time and wm the watermark before it, in ms.
func (f *maxPrune) keep(pv, tv types.Value, ts, wm int64) bool {
	if pv.Null || tv.Null || tv.I%1000 != 0 {
		return true
	}
	p, t := pv.I, tv.I
	// forget the windows the aggregation has fired: a late row of theirs
	// passes
	n := 0
	for n < len(f.wins) && f.wins[n].end-1 <= wm {
		n++
	}
	if n > 0 {
		f.wins = append(f.wins[:0], f.wins[n:]...)
	}
	// the windows the row could match: ends E (ms) with t <= E*1000 <= t+d
	keep := false
	tms := t / 1000
	for e := ceilDiv(tms, f.size) * f.size; e*1000 <= t+f.d; e += f.size {
		if m, ok := f.lookup(e); !ok || p >= m {
			keep = true
			break
		}
	}
	// the window the aggregation puts the row in, if it has certainly
	// counted it
	if end := expr.FloorDiv(ts, f.size)*f.size + f.size; end-1 > wm {
		f.raise(end, p)
	}
	return keep
}

func (f *maxPrune) lookup(end int64) (int64, bool) {
	for _, w := range f.wins {
		if w.end == end {
			return w.max, true
		}
	}
	return 0, false
}

func (f *maxPrune) raise(end, p int64) {
	i := 0
	for i < len(f.wins) && f.wins[i].end < end {
		i++
	}
	if i < len(f.wins) && f.wins[i].end == end {
		if p > f.wins[i].max {
			f.wins[i].max = p
		}
		return
	}
	f.wins = append(f.wins, pruneWin{})
	copy(f.wins[i+1:], f.wins[i:])
	f.wins[i] = pruneWin{end: end, max: p}
}

func ceilDiv(a, b int64) int64 { return -expr.FloorDiv(-a, b) }
