package planner

import (
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Window joins, as Flink runs them: two window table functions joined on
// window_start and window_end (and any equi-keys). Every row of a window
// waits in keyed state until the watermark passes the window's end; the
// window is then joined once (inner or outer), emitted insert-only and
// its state freed. A row whose window has already ended is late and
// dropped, as Flink's WindowJoin drops it.

// Window columns carry a mark through projections so that the planner
// recognizes them after a subquery's SELECT (see column.win).
const (
	winStartCol = 1
	winEndCol   = 2
	// winProctime is or-ed into the mark of a processing-time window's
	// columns: their rows are not ordered by the watermark, so no event-time
	// window operator downstream may use them (window aggregations over
	// window aggregations, window_attached.go).
	winProctime = 4
)

// winMarks returns the start and end marks of a window's columns.
func winMarks(proctime bool) (start, end uint8) {
	if proctime {
		return winStartCol | winProctime, winEndCol | winProctime
	}
	return winStartCol, winEndCol
}

// windowJoinBounds reports whether the equi-keys of a join equate the
// window_start and the window_end columns of both inputs, and returns the
// index of the window_end equality among the keys (whose value ends the window).
func windowJoinBounds(left, right *rel, keyCols [][2]int) (endKey int, ok bool) {
	start, end := false, false
	endKey = -1
	for i, kc := range keyCols {
		lc, rc := kc[0], kc[1]
		if lc < 0 || rc < 0 || lc >= len(left.sc.Cols) || rc >= len(right.sc.Cols) {
			continue
		}
		lw, rw := left.sc.Cols[lc].Win&^winProctime, right.sc.Cols[rc].Win&^winProctime
		switch {
		case lw == winStartCol && rw == winStartCol:
			start = true
		case lw == winEndCol && rw == winEndCol:
			end, endKey = true, i
		}
	}
	return endKey, start && end
}

// withoutWindowMarks returns sc with the window marks of columns [from,
// to) cleared (sc itself when there are none).
func withoutWindowMarks(sc *expr.Scope, from, to int) *expr.Scope {
	var out *expr.Scope
	for i := from; i < to; i++ {
		if sc.Cols[i].Win != 0 {
			if out == nil {
				out = &expr.Scope{Cols: append([]expr.Column(nil), sc.Cols...)}
			}
			out.Cols[i].Win = 0
		}
	}
	if out == nil {
		return sc
	}
	return out
}

// windowJoinScope is a window join's output: the window columns stay
// window attributes (a window aggregation or join over the result can use
// them, window_attached.go) except on the side an outer join pads with
// NULLs, as Flink's window properties of a window join.
func windowJoinScope(sc *expr.Scope, nl int, kind parser.JoinKind) *expr.Scope {
	if kind == parser.RightJoin || kind == parser.FullJoin {
		sc = withoutWindowMarks(sc, 0, nl)
	}
	if kind == parser.LeftJoin || kind == parser.FullJoin {
		sc = withoutWindowMarks(sc, nl, len(sc.Cols))
	}
	return sc
}

func windowJoinRel(kind parser.JoinKind, left, right *rel, sc *expr.Scope, lkeys, rkeys []expr.Expr, endKey int, res *expr.Expr, where string) *rel {
	op := fmt.Sprintf("WindowJoin(joinType=[%s], where=[%s])", kind, where)
	r := &rel{op: op, sc: sc, mode: types.InsertOnly, inputs: []*rel{left, right}, bounded: allBounded(left, right)}
	nl, nr := len(left.sc.Cols), len(right.sc.Cols)
	outer := [2]bool{kind == parser.LeftJoin || kind == parser.FullJoin, kind == parser.RightJoin || kind == parser.FullJoin}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		ls, err := b.stream(left)
		if err != nil {
			return nil, err
		}
		rs, err := b.stream(right)
		if err != nil {
			return nil, err
		}
		lk, rk := evals(lkeys), evals(rkeys)
		lend, rend := lkeys[endKey].Eval, rkeys[endKey].Eval
		tagged := weir.Map(rs, func(row types.Row) types.Row {
			row.Kind |= rightTag
			return row
		}, b.uid("window-join-tag"))
		var resEval expr.EvalFn
		if res != nil {
			resEval = res.Eval
		}
		if startKey, ok := boundsOnlyKeys(lkeys, rkeys, endKey); ok {
			// keyed by the window's bounds as integers: no key encoding
			// per row (Nexmark q5's join of the counts with their maximum)
			ls0, ls1 := lkeys[startKey].Eval, lkeys[endKey].Eval
			rs0, rs1 := rkeys[startKey].Eval, rkeys[endKey].Eval
			ks := weir.KeyBy(weir.Union(ls, tagged), func(row types.Row) winBounds {
				if row.Kind&rightTag != 0 {
					return winBounds{rs0(row.Values).I, rs1(row.Values).I}
				}
				return winBounds{ls0(row.Values).I, ls1(row.Values).I}
			})
			return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[winBounds, types.Row, types.Row] {
				return &windowJoinFn[winBounds]{nl: nl, nr: nr, outer: outer, residual: resEval, end: [2]expr.EvalFn{lend, rend}}
			}, b.uid("window-join")), nil
		}
		ks := weir.KeyBy(weir.Union(ls, tagged), func(row types.Row) string {
			if row.Kind&rightTag != 0 {
				return rightKeyOf(rk, row.Values)
			}
			return keyOf(lk, row.Values)
		})
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
			return &windowJoinFn[string]{nl: nl, nr: nr, outer: outer, residual: resEval, end: [2]expr.EvalFn{lend, rend}}
		}, b.uid("window-join")), nil
	}
	return r
}

// winBounds is the key of a window join whose only equi-keys are the
// windows' bounds, both NOT NULL: window_start and window_end in µs.
type winBounds struct{ Start, End int64 }

// boundsOnlyKeys reports whether a window join's keys are window_start
// and window_end alone, of NOT NULL timestamps on both sides (the window
// TVFs' columns), and returns the index of the start key.
func boundsOnlyKeys(lkeys, rkeys []expr.Expr, endKey int) (startKey int, ok bool) {
	if len(lkeys) != 2 || len(rkeys) != 2 {
		return 0, false
	}
	for i := range lkeys {
		for _, t := range []types.Type{lkeys[i].Type, rkeys[i].Type} {
			if !t.NotNull || (t.Kind != types.Timestamp && t.Kind != types.TimestampLTZ) {
				return 0, false
			}
		}
	}
	return 1 - endKey, true
}

// windowJoinFn buffers both sides of one key (the window's bounds are part
// of the key) until the watermark passes the window's end.
type windowJoinFn[K comparable] struct {
	nl, nr   int
	outer    [2]bool
	residual expr.EvalFn
	end      [2]expr.EvalFn
	side     [2]*weir.ListState[K, types.Row]
}

func (f *windowJoinFn[K]) Open(rc *weir.RuntimeContext[K]) error {
	f.side[0] = weir.NewListState[types.Row](rc, "left")
	f.side[1] = weir.NewListState[types.Row](rc, "right")
	return nil
}

func (f *windowJoinFn[K]) ProcessElement(ctx *weir.KeyedContext[K, types.Row], in types.Row) error {
	s := 0
	if in.Kind&rightTag != 0 {
		s = 1
		in.Kind &^= rightTag
	}
	end := f.end[s](in.Values)
	if end.Null {
		return nil // a NULL window_end matches nothing and never fires
	}
	// the window fires at its last millisecond, as a window aggregation
	fire := time.UnixMilli(end.I/1000 - 1)
	if wm := ctx.Watermark(); !wm.IsZero() && wm.UnixMicro() > -1<<62 && !wm.Before(fire) {
		return nil // late: the window has been joined already
	}
	f.side[s].Add(in)
	ctx.RegisterEventTimeTimer(fire)
	return nil
}

func (f *windowJoinFn[K]) OnTimer(ctx *weir.KeyedContext[K, types.Row], _ time.Time) error {
	ls, rs := f.side[0].Get(), f.side[1].Get()
	f.side[0].Clear()
	f.side[1].Clear()
	rmatched := make([]bool, len(rs))
	// the residual condition reads a scratch row: only matches allocate
	var scratch []types.Value
	for _, l := range ls {
		matched := false
		for j, r := range rs {
			if f.residual != nil {
				if scratch == nil {
					scratch = make([]types.Value, f.nl+f.nr)
				}
				copy(scratch, l.Values[:f.nl])
				copy(scratch[f.nl:], r.Values[:f.nr])
				if v := f.residual(scratch); v.Null || !v.Bool() {
					continue
				}
			}
			matched, rmatched[j] = true, true
			ctx.Emit(types.Row{Values: f.concat(l.Values, r.Values)})
		}
		if !matched && f.outer[0] {
			ctx.Emit(types.Row{Values: f.concat(l.Values, nil)})
		}
	}
	if f.outer[1] {
		for j, r := range rs {
			if !rmatched[j] {
				ctx.Emit(types.Row{Values: f.concat(nil, r.Values)})
			}
		}
	}
	return nil
}

func (f *windowJoinFn[K]) concat(l, r []types.Value) []types.Value {
	return joinedValues(f.nl, f.nr, l, r)
}
