package planner

import (
	"fmt"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// windowSpec is a window table function (or a legacy group window): its
// kind and sizes, its input and the time attribute it windows by.
type windowSpec struct {
	kind             string // TUMBLE, HOP, CUMULATE, SESSION
	size, slide, gap time.Duration
	offset           time.Duration
	input            *rel
	tsCol            int // the time attribute's index in input
	// tsName is the time attribute's name when the input is narrowed
	// (prune.go), which may leave a processing-time attribute out (tsCol
	// -1)
	tsName           string
	timeType         types.Type
	startCol, endCol int // window_start/window_end/window_time in the TVF's output
	timeCol          int
	ninput           int
	// proctime: the windows are over processing time (window_proctime.go)
	proctime bool
	// narrow maps the columns of the window's input, as the query sees
	// them, to the narrower input row of an aggregation (prune.go); nil
	// when the input is not narrowed.
	narrow []int
}

func (w *windowSpec) String() string {
	col := w.tsName
	if col == "" {
		col = w.input.sc.Cols[w.tsCol].Name
	}
	switch w.kind {
	case "TUMBLE":
		return fmt.Sprintf("TUMBLE(time_col=[%s], size=[%s])", col, w.size)
	case "HOP":
		return fmt.Sprintf("HOP(time_col=[%s], size=[%s], slide=[%s])", col, w.size, w.slide)
	case "CUMULATE":
		return fmt.Sprintf("CUMULATE(time_col=[%s], max_size=[%s], step=[%s])", col, w.size, w.slide)
	}
	return fmt.Sprintf("SESSION(time_col=[%s], gap=[%s])", col, w.gap)
}

// inputCol maps a column of the TVF's output to its input column (-1 for
// the window columns).
func (w *windowSpec) inputCol(idx int) int {
	if idx < w.ninput {
		return idx
	}
	return -1
}

// inputIdx maps column idx of an aggregation's FROM to the window's
// input: through the window table function's columns, or itself (a legacy
// group window's input is the FROM).
func inputIdx(from *rel, idx int) int {
	if from.win == nil {
		return idx
	}
	return from.win.inputCol(idx)
}

// narrowCol maps a column of the window's input (as the query sees it) to
// the aggregation's input row (prune.go); -1 stays -1.
func (w *windowSpec) narrowCol(idx int) int {
	if idx < 0 || w.narrow == nil {
		return idx
	}
	return w.narrow[idx]
}

func (w *windowSpec) windows() weir.Windows {
	var ws weir.Windows
	switch w.kind {
	case "TUMBLE":
		ws = weir.Tumbling(w.size)
	case "HOP":
		ws = weir.Hopping(w.size, w.slide)
	default:
		ws = weir.Session(w.gap)
	}
	if w.offset != 0 {
		ws = ws.WithOffset(w.offset)
	}
	return ws
}

func intervalArg(e parser.Expr, what string) (time.Duration, error) {
	iv, ok := e.(*parser.IntervalLit)
	if !ok {
		return 0, expr.ErrAt(e, "%s must be an INTERVAL literal", what)
	}
	ms, months, err := expr.IntervalValue(iv)
	if err != nil {
		return 0, err
	}
	if months || ms <= 0 {
		return 0, expr.ErrAt(e, "%s must be a positive day-time interval", what)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// timeAttr resolves the column a window is on and checks that it is an
// event-time attribute.
func timeAttr(e parser.Expr, sc *expr.Scope, name string) (int, error) {
	var id *parser.Ident
	switch x := e.(type) {
	case *parser.Ident:
		id = x
	case *parser.Descriptor:
		if len(x.Cols) != 1 {
			return 0, expr.ErrAt(e, "DESCRIPTOR of a window takes one column")
		}
		id = &parser.Ident{Pos: x.Pos, Parts: []string{x.Cols[0]}}
	default:
		return 0, expr.ErrAt(e, "the time column of %s must be a column", name)
	}
	ec := &expr.Compiler{Scope: sc}
	idx, rest, err := ec.Resolve(id)
	if err != nil {
		return 0, err
	}
	if len(rest) > 0 {
		return 0, expr.ErrAt(e, "the time column of %s must be a column", name)
	}
	t := sc.Cols[idx].Type
	if t.TimeAttr == types.ProctimeAttr {
		return 0, expr.ErrAt(e, "processing-time windows are not supported yet; '%s' is PROCTIME()", sc.Cols[idx].Name)
	}
	if t.TimeAttr != types.RowtimeAttr {
		return 0, expr.ErrAt(e, "the time column '%s' of %s is not a time attribute (declare a WATERMARK for it)", sc.Cols[idx].Name, name)
	}
	return idx, nil
}

// planWindowTVF plans TABLE(TUMBLE|HOP|CUMULATE|SESSION(TABLE t,
// DESCRIPTOR(ts), ...)).
func (p *planner) planWindowTVF(tf *parser.TableFunc) (*rel, error) {
	params := map[string][]string{
		"TUMBLE":   {"DATA", "TIMECOL", "SIZE", "OFFSET"},
		"HOP":      {"DATA", "TIMECOL", "SLIDE", "SIZE", "OFFSET"},
		"CUMULATE": {"DATA", "TIMECOL", "STEP", "SIZE", "OFFSET"},
		"SESSION":  {"DATA", "TIMECOL", "GAP"},
	}[tf.Name]
	if params == nil {
		return nil, parser.Errorf(tf.Pos, "unknown table function %s (TUMBLE, HOP, CUMULATE and SESSION are supported)", tf.Name)
	}
	args := map[string]parser.Expr{}
	for i, a := range tf.Args {
		if na, ok := a.(*parser.NamedArg); ok {
			args[na.Name] = na.X
			continue
		}
		if i >= len(params) {
			return nil, expr.ErrAt(a, "%s takes at most %d arguments", tf.Name, len(params))
		}
		args[params[i]] = a
	}
	for _, req := range params {
		// OFFSET is optional; TIMECOL is checked once DATA is planned
		if args[req] == nil && req != "OFFSET" && req != "TIMECOL" {
			return nil, parser.Errorf(tf.Pos, "%s needs its %s argument", tf.Name, req)
		}
	}
	data, ok := args["DATA"].(*parser.TableArg)
	if !ok {
		return nil, parser.Errorf(tf.Pos, "the first argument of %s must be TABLE t", tf.Name)
	}
	in, err := p.planFrom(data.Table)
	if err != nil {
		return nil, err
	}
	if args["TIMECOL"] == nil {
		return nil, parser.Errorf(tf.Pos, "%s needs its TIMECOL argument", tf.Name)
	}
	w := &windowSpec{kind: tf.Name, input: in, ninput: len(in.sc.Cols)}
	if w.tsCol, w.proctime, err = windowTimeAttr(args["TIMECOL"], in.sc, tf.Name); err != nil {
		return nil, err
	}
	w.timeType = in.sc.Cols[w.tsCol].Type
	switch tf.Name {
	case "TUMBLE":
		w.size, err = intervalArg(args["SIZE"], "the window size")
	case "HOP":
		if w.slide, err = intervalArg(args["SLIDE"], "the slide"); err == nil {
			w.size, err = intervalArg(args["SIZE"], "the window size")
		}
		if err == nil && w.size%w.slide != 0 {
			return nil, parser.Errorf(tf.Pos, "HOP's size (%s) must be a multiple of its slide (%s)", w.size, w.slide)
		}
	case "CUMULATE":
		if w.slide, err = intervalArg(args["STEP"], "the step"); err == nil {
			w.size, err = intervalArg(args["SIZE"], "the max size")
		}
		if err == nil && w.size%w.slide != 0 {
			return nil, parser.Errorf(tf.Pos, "CUMULATE's max size (%s) must be a multiple of its step (%s)", w.size, w.slide)
		}
	case "SESSION":
		w.gap, err = intervalArg(args["GAP"], "the gap")
	}
	if err != nil {
		return nil, err
	}
	if o := args["OFFSET"]; o != nil {
		iv, ok := o.(*parser.IntervalLit)
		if !ok {
			return nil, expr.ErrAt(o, "the offset must be an INTERVAL literal")
		}
		ms, _, err := expr.IntervalValue(iv)
		if err != nil {
			return nil, err
		}
		w.offset = time.Duration(ms) * time.Millisecond
	}
	sc := &expr.Scope{Cols: append([]expr.Column(nil), in.sc.Cols...)}
	ts := w.timeType
	ts.TimeAttr, ts.NotNull = 0, true
	wt := w.timeType
	wt.TimeAttr, wt.NotNull = types.RowtimeAttr, true
	if w.proctime {
		wt.TimeAttr = types.ProctimeAttr
	}
	qual := tf.Alias
	for i := range sc.Cols {
		if qual != "" {
			sc.Cols[i].Qual = qual
		}
	}
	w.startCol, w.endCol, w.timeCol = len(sc.Cols), len(sc.Cols)+1, len(sc.Cols)+2
	ms, me := winMarks(w.proctime)
	sc.Cols = append(sc.Cols, expr.Column{Qual: qual, Name: "window_start", Type: ts, Win: ms}, expr.Column{Qual: qual, Name: "window_end", Type: ts, Win: me},
		expr.Column{Qual: qual, Name: "window_time", Type: wt})
	return p.windowTVFRel(w, sc), nil
}

// windowTVFRel is the TVF's own output: each row once per window it falls
// in, with the window's columns appended (used when no window aggregation
// consumes the TVF directly).
func (p *planner) windowTVFRel(w *windowSpec, sc *expr.Scope) *rel {
	in := w.input
	r := &rel{op: "WindowTableFunction(window=[" + w.String() + "])", sc: sc, mode: in.mode, inputs: []*rel{in},
		updater: in.updater, bounded: in.bounded, traits: traits{win: w}}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		if w.kind == "SESSION" {
			return nil, fmt.Errorf("a SESSION window table function must be aggregated (GROUP BY window_start, window_end)")
		}
		s, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		n := len(in.sc.Cols)
		tsCol := w.tsCol
		return weir.FlatMap(s, func(row types.Row, emit func(types.Row)) {
			ts := row.Values[tsCol].I
			w.assign(ts, func(start, end int64) {
				vs := make([]types.Value, n+3)
				copy(vs, row.Values)
				vs[n], vs[n+1], vs[n+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
				emit(types.Row{Kind: row.Kind, Values: vs})
			})
		}, b.uid("window-tvf")), nil
	}
	return r
}

// assign calls fn with the bounds (microseconds) of each window that holds
// time ts (microseconds), for TUMBLE, HOP and CUMULATE.
func (w *windowSpec) assign(ts int64, fn func(start, end int64)) {
	size, slide, off := w.size.Microseconds(), w.slide.Microseconds(), w.offset.Microseconds()
	switch w.kind {
	case "TUMBLE":
		start := ts - mod(ts-off, size)
		fn(start, start+size)
	case "HOP":
		last := ts - mod(ts-off, slide)
		for start := last; start > ts-size; start -= slide {
			fn(start, start+size)
		}
	case "CUMULATE":
		start := ts - mod(ts-off, size)
		first := ts - mod(ts-off, slide) + slide
		for end := first; end <= start+size; end += slide {
			fn(start, end)
		}
	}
}

func mod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// legacyWindow reads GROUP BY TUMBLE(ts, size) / HOP(ts, slide, size) /
// SESSION(ts, gap).
func legacyWindow(c *parser.Call, ec *expr.Compiler) (*windowSpec, error) {
	want := map[string]int{"TUMBLE": 2, "HOP": 3, "SESSION": 2, "CUMULATE": 3}[c.Name]
	if len(c.Args) != want {
		return nil, expr.ErrAt(c, "%s takes %d arguments", c.Name, want)
	}
	w := &windowSpec{kind: c.Name, ninput: len(ec.Scope.Cols)}
	var err error
	if w.tsCol, w.proctime, err = windowTimeAttr(c.Args[0], ec.Scope, c.Name); err != nil {
		return nil, err
	}
	w.timeType = ec.Scope.Cols[w.tsCol].Type
	switch c.Name {
	case "TUMBLE":
		w.size, err = intervalArg(c.Args[1], "the window size")
	case "HOP", "CUMULATE":
		if w.slide, err = intervalArg(c.Args[1], "the slide"); err == nil {
			w.size, err = intervalArg(c.Args[2], "the window size")
		}
	case "SESSION":
		w.gap, err = intervalArg(c.Args[1], "the gap")
	}
	w.startCol, w.endCol, w.timeCol = -1, -1, -1
	return w, err
}

// rowAgg adapts an expr.AggLayout to weir's AggregateFunction, so window
// aggregations run on weir's window operator (its state, its timers, its
// snapshots). The accumulator is a types.Row: keys, count, slots; none
// before the first row (nil, or empty as state decodes it).
type rowAgg struct {
	layout *expr.AggLayout
	keys   []expr.EvalFn
}

func (a rowAgg) Create() types.Row { return types.Row{} }

func (a rowAgg) Add(acc types.Row, in types.Row) types.Row {
	if len(acc.Values) == 0 {
		keys := make([]types.Value, len(a.keys))
		for i, k := range a.keys {
			keys[i] = k(in.Values)
		}
		acc.Values = a.layout.Create(keys)
	}
	a.layout.Accumulate(acc.Values, in.Values, 1)
	return acc
}

func (a rowAgg) Merge(x, y types.Row) types.Row {
	if len(x.Values) == 0 {
		return y
	}
	if len(y.Values) == 0 {
		return x
	}
	a.layout.Merge(x.Values, y.Values)
	return x
}

func (a rowAgg) Result(acc types.Row) types.Row {
	l := a.layout
	vs := make([]types.Value, l.NKeys+len(l.Calls)+3)
	if len(acc.Values) == 0 {
		return types.Row{Values: vs}
	}
	copy(vs, acc.Values[:l.NKeys])
	for i, c := range l.Calls {
		vs[l.NKeys+i] = l.Result(acc.Values, c)
	}
	return types.Row{Values: vs}
}

// windowAggRel is a window aggregation on weir's window operator (TUMBLE,
// HOP, SESSION), or on a keyed process function (CUMULATE; TUMBLE, HOP and
// SESSION too when the job's state is in Pebble: window_state.go). Its
// result is insert-only: one row per key and window when the watermark
// passes the window's end.
func windowAggRel(w *windowSpec, keys []expr.Expr, layout *expr.AggLayout, out *expr.Scope, op string) *rel {
	in := w.input
	keyEvals := make([]expr.EvalFn, len(keys))
	for i, k := range keys {
		keyEvals[i] = k.Eval
	}
	r := &rel{op: op, sc: out, mode: types.InsertOnly, inputs: []*rel{in}, bounded: in.bounded, traits: traits{winAgg: !w.proctime}}
	r.build = func(b *builder) (*weir.Stream[types.Row], error) {
		s, err := b.stream(in)
		if err != nil {
			return nil, err
		}
		if b.stateWindows(w) {
			// the job keeps keyed state in Pebble: so do its windows
			// (window_state.go)
			return stateWindowAgg(b, s, w, keys, keyEvals, layout), nil
		}
		nk := len(keyEvals)
		// the integer-key path is weir's event-time window operator: a
		// processing-time window (procWindowFn) and CUMULATE take the
		// keyed process functions below
		if nk == 1 && keys[0].Type.IsInteger() && w.kind != "CUMULATE" && !w.proctime {
			if compactCalls(layout) {
				if countStarOnly(layout.Calls) && (w.kind == "TUMBLE" || w.kind == "HOP") {
					// an aligned window counting: its edge ships keys only
					// (weir.Count), so the input's rows may be lent
					b.borrow(in)
				}
				return compactIntKeyWindowAgg(b, s, w, keyEvals[0], layout), nil
			}
			return intKeyWindowAgg(b, s, w, keyEvals[0], layout, keyEvals), nil
		}
		agg := rowAgg{layout: layout, keys: keyEvals}
		base := nk + len(layout.Calls)
		if w.proctime {
			// it keeps accumulators (rowAgg copies the keys and
			// arguments it reads), nothing of a row: the input's rows may
			// come from slabs (lend.go)
			b.copies(in)
		}
		if w.proctime && w.kind != "SESSION" && nk == 1 && keys[0].Type.IsInteger() {
			// keyed by the integer itself, as intKeyWindowAgg
			key := keyEvals[0]
			ks := weir.KeyBy(s, func(row types.Row) intKey {
				v := key(row.Values)
				return intKey{V: v.I, Null: v.Null}
			})
			return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[intKey, types.Row, types.Row] {
				return &procWindowFn[intKey]{w: w, agg: agg, base: base}
			}, b.uid("proctime-window-agg")), nil
		}
		ks := weir.KeyBy(s, func(row types.Row) string {
			if nk == 0 {
				return ""
			}
			var buf [4]types.Value
			vs := buf[:0]
			for _, f := range keyEvals {
				vs = append(vs, f(row.Values))
			}
			return types.Key(vs)
		})
		if w.proctime {
			return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
				if w.kind == "SESSION" {
					return &procSessionFn{gap: w.gap.Microseconds(), agg: agg, base: base}
				}
				return &procWindowFn[string]{w: w, agg: agg, base: base}
			}, b.uid("proctime-window-agg")), nil
		}
		if w.kind == "CUMULATE" {
			return weir.ProcessWith(ks, func() weir.KeyedProcessFunction[string, types.Row, types.Row] {
				return &cumulateFn{w: w, agg: agg, base: base}
			}, b.uid("cumulate-agg")), nil
		}
		res := weir.Aggregate(weir.Window(ks, w.windows(), b.uid("window")), agg, b.uid("window-agg"))
		return weir.Map(res, func(wr weir.WindowResult[string, types.Row]) types.Row {
			vs := wr.Value.Values
			start, end := wr.Start.UnixMicro(), wr.End.UnixMicro()
			vs[base], vs[base+1], vs[base+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
			return types.Row{Values: vs}
		}, b.uid("window-result")), nil
	}
	return r
}

// cumulateFn is CUMULATE's aggregation: per key, one accumulator per
// window end in MapState; an event-time timer at each end emits the window
// [start, end) and, at the end of the max-size window, drops the
// accumulators.
type cumulateFn struct {
	w    *windowSpec
	agg  rowAgg
	base int
	accs *weir.MapState[string, int64, types.Row]
}

func (f *cumulateFn) Open(rc *weir.RuntimeContext[string]) error {
	f.accs = weir.NewMapState[int64, types.Row](rc, "cumulate")
	return nil
}

func (f *cumulateFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	ts := in.Values[f.w.tsCol].I
	if wm := ctx.Watermark(); !wm.IsZero() && wm.UnixMicro() >= ts && wm.UnixMicro() > -1<<62 {
		// late: every window holding ts has fired
		size := f.w.size.Microseconds()
		start := ts - mod(ts-f.w.offset.Microseconds(), size)
		if wm.UnixMicro() >= start+size-1000 {
			return nil
		}
	}
	f.w.assign(ts, func(start, end int64) {
		if ctx.Watermark().UnixMicro() >= end-1000 && !ctx.Watermark().IsZero() {
			return // this window already fired
		}
		acc, ok := f.accs.Get(end)
		if !ok {
			acc = f.agg.Create()
			ctx.RegisterEventTimeTimer(time.UnixMicro(end - 1000))
		}
		acc = f.agg.Add(acc, in)
		f.accs.Put(end, acc)
	})
	return nil
}

func (f *cumulateFn) OnTimer(ctx *weir.KeyedContext[string, types.Row], t time.Time) error {
	end := t.UnixMicro() + 1000
	acc, ok := f.accs.Get(end)
	if !ok {
		return nil
	}
	size := f.w.size.Microseconds()
	start := (end - 1) - mod(end-1-f.w.offset.Microseconds(), size)
	row := f.agg.Result(acc)
	vs := row.Values
	vs[f.base], vs[f.base+1], vs[f.base+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
	ctx.Emit(types.Row{Values: vs})
	f.accs.Remove(end)
	return nil
}
