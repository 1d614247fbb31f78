package planner

import (
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// The window-maximum join. Nexmark q5 joins a window aggregation's rows
// (the bid count per auction and window) with the MAX of the same column
// per window, computed from the same rows:
//
//	SELECT A.auction, A.num FROM (
//	  SELECT auction, COUNT(*) AS num, window_start AS s, window_end AS e
//	  FROM TABLE(HOP(...)) GROUP BY auction, window_start, window_end) A
//	JOIN (
//	  SELECT MAX(num) AS maxn, s, e FROM (<the same aggregation>) GROUP BY s, e) M
//	ON A.s = M.s AND A.e = M.e AND A.num >= M.maxn
//
// As planned by Flink (and by weir without this rule), every count crosses
// the network twice (to the MAX's window aggregation and to the window
// join), the join keeps every count of a window in state until the window
// ends, and then compares each with the maximum. Since the right side is
// one row per window whose maxn is the largest num of the left side's own
// rows in that window, "num >= maxn" holds exactly for the rows at the
// maximum: one keyed operator over the left side alone gives the same rows
// while keeping, per window, the largest num and the rows that have it
// (what the hand-written q5 does). Flink has no such rule; it is the
// argument above, checked shape by shape (matchWindowMax):
//
//   - an inner window join whose only equi-keys are the two sides'
//     window_start and window_end, and whose only other condition is
//     L.x >= R.m (or R.m <= L.x), x an integer column;
//   - the left side is, through Calcs that only copy columns (no filter,
//     no expression), an event-time window aggregation's output A: its rows
//     are emitted when the watermark passes their window's end, before that
//     watermark, so no operator after it sees one late;
//   - the right side is, through such Calcs, a window aggregation over
//     window attributes (window_attached.go) grouped by exactly the window's
//     start and end, computing MAX of one column and nothing else, with no
//     FILTER, over such Calcs of the same A, and the MAX's column, the
//     group keys and the join keys are the same columns of A as the left
//     side's x and bounds; every column of the right side is one of the
//     window's start, end and maximum.
//
// A NULL x never matches (NULL >= m is not TRUE), and MAX ignores NULLs;
// a window whose xs are all NULL has a NULL maximum and no row. The
// operator is keyed by the window's bounds as the window join is, keeps its
// state in weir's keyed state (checkpointed), and emits a window's rows by
// an event-time timer at the window's last millisecond, as the join does.

// windowMaxSpec is a matched window-maximum join: the left side's columns
// (the compared value and the window's bounds) and, for each column of the
// right side, what it is (rightStart, rightEnd or rightMax).
type windowMaxSpec struct {
	x, start, end int
	right         []int
	maxText       string
}

const (
	rightStart = iota
	rightEnd
	rightMax
)

// copiedCol follows column i of r down through Calcs that only copy
// columns (no filter, bare column reads) and returns the rel that computes
// it and its index there.
func copiedCol(r *rel, i int) (*rel, int) {
	for {
		r = r.canonical()
		c := r.calc
		if c == nil || c.filter != nil || i < 0 || i >= len(c.exprs) || c.exprs[i].Col < 0 {
			return r, i
		}
		i = c.exprs[i].Col
		r = c.input
	}
}

// matchWindowMax reports whether an inner window join is a window-maximum
// join (see above). keyCols are the join's equi-key columns (left, right;
// -1 when a key is not a bare column), startKey and endKey the keys that
// equate the windows' bounds, residual the other conjuncts and ec their
// compiler over the joined scope (nl left columns).
func matchWindowMax(cfg Config, kind parser.JoinKind, left, right *rel, keyCols [][2]int, startKey, endKey int, residual []parser.Expr, ec *expr.Compiler, nl int) (*windowMaxSpec, bool) {
	if cfg.DisableWindowMaxJoin || kind != parser.InnerJoin || len(keyCols) != 2 || len(residual) != 1 {
		return nil, false
	}
	cmp, ok := residual[0].(*parser.Binary)
	if !ok || (cmp.Op != ">=" && cmp.Op != "<=") {
		return nil, false
	}
	lc, err1 := ec.Compile(cmp.L)
	rc, err2 := ec.Compile(cmp.R)
	if err1 != nil || err2 != nil || lc.Col < 0 || rc.Col < 0 {
		return nil, false
	}
	x, m := lc.Col, rc.Col // x >= m
	if cmp.Op == "<=" {
		x, m = m, x
	}
	if x >= nl || m < nl {
		return nil, false
	}
	m -= nl
	// the left side: columns of one event-time window aggregation
	a, ax := copiedCol(left, x)
	a2, as := copiedCol(left, keyCols[startKey][0])
	a3, ae := copiedCol(left, keyCols[endKey][0])
	if !a.winAgg || a2 != a || a3 != a || ax >= len(a.sc.Cols) || as >= len(a.sc.Cols) || ae >= len(a.sc.Cols) ||
		a.sc.Cols[as].Win != winStartCol || a.sc.Cols[ae].Win != winEndCol || !a.sc.Cols[ax].Type.IsInteger() {
		return nil, false
	}
	// the right side: MAX of the same column of the same aggregation, per
	// window
	agg, am := copiedCol(right, m)
	info := agg.attachedAgg
	if info == nil || info.layout.NKeys != 2 || len(info.layout.Calls) != 1 || am != 2 {
		return nil, false
	}
	call := info.layout.Calls[0]
	if call.Kind != expr.AggMax || call.Filter != nil || call.Distinct || call.Retract || !call.ArgT.IsInteger() {
		return nil, false
	}
	if b, bx := copiedCol(info.in, call.ArgCol); b != a || bx != ax {
		return nil, false
	}
	startCol, endCol := info.keys[info.aw.startKey].Col, info.keys[info.aw.endKey].Col
	if b, bs := copiedCol(info.in, startCol); b != a || bs != as {
		return nil, false
	}
	if b, be := copiedCol(info.in, endCol); b != a || be != ae {
		return nil, false
	}
	if r, rs := copiedCol(right, keyCols[startKey][1]); r != agg || rs != info.aw.startKey {
		return nil, false
	}
	if r, re := copiedCol(right, keyCols[endKey][1]); r != agg || re != info.aw.endKey {
		return nil, false
	}
	spec := &windowMaxSpec{x: x, start: keyCols[startKey][0], end: keyCols[endKey][0], maxText: call.Name}
	for i := range right.sc.Cols {
		r, c := copiedCol(right, i)
		if r != agg {
			return nil, false
		}
		switch c {
		case info.aw.startKey:
			spec.right = append(spec.right, rightStart)
		case info.aw.endKey:
			spec.right = append(spec.right, rightEnd)
		case 2:
			spec.right = append(spec.right, rightMax)
		default:
			return nil, false
		}
	}
	return spec, true
}

// windowMaxJoinRel is a matched window-maximum join: a keyed process
// function over the left side alone, keyed by the window's bounds.
func windowMaxJoinRel(left *rel, sc *expr.Scope, spec *windowMaxSpec, nr int, where string) *rel {
	op := fmt.Sprintf("WindowMaxJoin(joinType=[INNER], where=[%s], max=[%s of the left input per window])", where, spec.maxText)
	r := &rel{op: op, sc: sc, mode: types.InsertOnly, inputs: []*rel{left}, bounded: left.bounded}
	nl := len(left.sc.Cols)
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(left)
		if err != nil {
			return nil, err
		}
		start, end := spec.start, spec.end
		ks := weir.KeyBy(s, func(row types.Row) winBounds {
			return winBounds{row.Values[start].I, row.Values[end].I}
		})
		return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[winBounds, types.Row, types.Row] {
			return &windowMaxFn{nl: nl, nr: nr, x: spec.x, right: spec.right}
		}, b.uid("window-max-join")), nil
	}
	return r
}

// WindowTop is the state of one window of a window-maximum join: the
// largest value so far and the rows that have it (exported for the state
// codec).
type WindowTop struct {
	Max  int64
	Rows []types.Row
}

type windowMaxFn struct {
	nl, nr int
	x      int
	right  []int
	top    *weir.ValueState[winBounds, WindowTop]
}

func (f *windowMaxFn) Open(rc *weir.RuntimeContext[winBounds]) error {
	f.top = weir.NewValueState[WindowTop](rc, "top")
	return nil
}

func (f *windowMaxFn) ProcessElement(ctx *weir.KeyedContext[winBounds, types.Row], in types.Row) error {
	k := ctx.Key()
	// the window fires at its last millisecond, as the window join
	fire := time.UnixMilli(k.End/1000 - 1)
	if wm := ctx.Watermark(); !wm.IsZero() && wm.UnixMicro() > -1<<62 && !wm.Before(fire) {
		return nil // late: the window has been joined already
	}
	v := in.Values[f.x]
	if v.Null {
		return nil // NULL >= maxn is never TRUE
	}
	t, ok := f.top.Value()
	switch {
	case !ok:
		ctx.RegisterEventTimeTimer(fire)
		t = WindowTop{Max: v.I, Rows: []types.Row{in}}
	case v.I > t.Max:
		// a new slice: a snapshot taken before may still read the old one
		t = WindowTop{Max: v.I, Rows: []types.Row{in}}
	case v.I == t.Max:
		t.Rows = append(t.Rows, in)
	default:
		return nil
	}
	f.top.Update(t)
	return nil
}

func (f *windowMaxFn) OnTimer(ctx *weir.KeyedContext[winBounds, types.Row], _ time.Time) error {
	t, ok := f.top.Value()
	if !ok {
		return nil
	}
	f.top.Clear()
	k := ctx.Key()
	rv := make([]types.Value, f.nr)
	for i, w := range f.right {
		switch w {
		case rightStart:
			rv[i] = types.IntValue(k.Start)
		case rightEnd:
			rv[i] = types.IntValue(k.End)
		case rightMax:
			rv[i] = types.IntValue(t.Max)
		}
	}
	for _, l := range t.Rows {
		ctx.Emit(types.Row{Values: joinedValues(f.nl, f.nr, l.Values, rv)})
	}
	return nil
}
