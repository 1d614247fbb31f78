package planner

import (
	"math"
	"slices"
	"time"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/sql/expr"
	"github.com/weirstream/weir/sql/parser"
	"github.com/weirstream/weir/sql/types"
)

// Processing-time windows: TUMBLE, HOP and CUMULATE over a PROCTIME()
// attribute (Nexmark q12: `TABLE(TUMBLE(TABLE B, DESCRIPTOR(p_time),
// INTERVAL '10' SECOND))` with B's p_time = PROCTIME()).
//
// As in Flink, the window a row falls in is decided by the processing time
// at the window operator, not by the value the PROCTIME() column had
// upstream: here the job's clock (weir.Clock; the wall clock by default)
// read when the row reaches the aggregation. A window fires when the clock
// reaches its end-1 (a processing-time timer), with one row per key and
// window, insert-only. Where weir differs: at the end of a bounded input
// the windows still open fire too (an event-time timer at the end of time,
// which only the final watermark reaches), as weir's ProcessingTimeTrigger
// and the hand-written q12 do, so that every row is counted exactly once;
// Flink drops them. SESSION over processing time is not supported.

// windowTimeAttr resolves the time column of a window: an event-time
// attribute, or a processing-time one (proctime set).
func windowTimeAttr(e parser.Expr, sc *expr.Scope, name string) (idx int, proctime bool, err error) {
	var id *parser.Ident
	switch x := e.(type) {
	case *parser.Ident:
		id = x
	case *parser.Descriptor:
		if len(x.Cols) == 1 {
			id = &parser.Ident{Pos: x.Pos, Parts: []string{x.Cols[0]}}
		}
	}
	if id != nil {
		ec := &expr.Compiler{Scope: sc}
		if i, rest, err := ec.Resolve(id); err == nil && len(rest) == 0 && sc.Cols[i].Type.TimeAttr == types.ProctimeAttr {
			return i, true, nil
		}
	}
	idx, err = timeAttr(e, sc, name)
	return idx, false, err
}

// endOfInput is the time of the event-time timer that fires the windows
// still open when a bounded input ends: only the final watermark reaches
// it.
var endOfInput = time.UnixMilli(math.MaxInt64)

// procWindowFn is a processing-time window aggregation per key: one
// accumulator per open window in MapState, by window end (µs). The key is
// the encoded group keys (string), or an intKey when the aggregation
// groups by one integer (q12's bidder: no key string per row).
type procWindowFn[K comparable] struct {
	w    *windowSpec
	agg  rowAgg
	base int
	accs *weir.MapState[K, int64, types.Row]
}

func (f *procWindowFn[K]) Open(rc *weir.RuntimeContext[K]) error {
	f.accs = weir.NewMapState[int64, types.Row](rc, "proctime-windows")
	return nil
}

func (f *procWindowFn[K]) ProcessElement(ctx *weir.KeyedContext[K, types.Row], in types.Row) error {
	now := ctx.CurrentProcessingTime().UnixMicro()
	f.w.assign(now, func(_, end int64) {
		acc, ok := f.accs.Get(end)
		if !ok {
			if f.accs.Len() == 0 {
				ctx.RegisterEventTimeTimer(endOfInput)
			}
			acc = f.agg.Create()
			ctx.RegisterProcessingTimeTimer(time.UnixMicro(end - 1000))
		}
		f.accs.Put(end, f.agg.Add(acc, in))
	})
	return nil
}

func (f *procWindowFn[K]) OnTimer(ctx *weir.KeyedContext[K, types.Row], t time.Time) error {
	if ctx.TimeDomain() == weir.EventTime {
		// the end of the input: every open window fires, in order
		var ends []int64
		for end := range f.accs.All() {
			ends = append(ends, end)
		}
		slices.Sort(ends)
		for _, end := range ends {
			f.fire(ctx, end)
		}
		return nil
	}
	f.fire(ctx, t.UnixMicro()+1000)
	return nil
}

func (f *procWindowFn[K]) fire(ctx *weir.KeyedContext[K, types.Row], end int64) {
	acc, ok := f.accs.Get(end)
	if !ok {
		return
	}
	start := end - f.w.size.Microseconds()
	if f.w.kind == "CUMULATE" {
		size := f.w.size.Microseconds()
		start = (end - 1) - mod(end-1-f.w.offset.Microseconds(), size)
	}
	vs := f.agg.Result(acc).Values
	vs[f.base], vs[f.base+1], vs[f.base+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
	ctx.Emit(types.Row{Values: vs})
	f.accs.Remove(end)
}

// procSessionFn is a SESSION window over processing time per key: rows
// arrive in processing-time order, so a key has at most one open session,
// extended by each row that comes within the gap of the last; a
// processing-time timer at its end (the last row's time + gap) fires it.
type procSessionFn struct {
	gap    int64 // µs
	agg    rowAgg
	base   int
	acc    *weir.ValueState[string, types.Row]
	bounds *weir.ValueState[string, types.Row] // [start, end] µs
}

func (f *procSessionFn) Open(rc *weir.RuntimeContext[string]) error {
	f.acc = weir.NewValueState[types.Row](rc, "proctime-session")
	f.bounds = weir.NewValueState[types.Row](rc, "proctime-session-bounds")
	return nil
}

func (f *procSessionFn) ProcessElement(ctx *weir.KeyedContext[string, types.Row], in types.Row) error {
	now := ctx.CurrentProcessingTime().UnixMicro()
	b, open := f.bounds.Value()
	var acc types.Row
	if open && now <= b.Values[1].I {
		// within the gap: the session goes on, its end moves
		ctx.DeleteProcessingTimeTimer(time.UnixMicro(b.Values[1].I - 1000))
		acc, _ = f.acc.Value()
		b = types.Row{Values: []types.Value{b.Values[0], types.IntValue(now + f.gap)}}
	} else {
		if open {
			f.fire(ctx) // its timer is due but has not fired yet
		} else {
			ctx.RegisterEventTimeTimer(endOfInput)
		}
		acc = f.agg.Create()
		b = types.Row{Values: []types.Value{types.IntValue(now), types.IntValue(now + f.gap)}}
	}
	ctx.RegisterProcessingTimeTimer(time.UnixMicro(b.Values[1].I - 1000))
	f.bounds.Update(b)
	f.acc.Update(f.agg.Add(acc, in))
	return nil
}

func (f *procSessionFn) OnTimer(ctx *weir.KeyedContext[string, types.Row], t time.Time) error {
	if b, ok := f.bounds.Value(); ok && (ctx.TimeDomain() == weir.EventTime || t.UnixMicro()+1000 >= b.Values[1].I) {
		f.fire(ctx)
	}
	return nil
}

func (f *procSessionFn) fire(ctx *weir.KeyedContext[string, types.Row]) {
	b, ok := f.bounds.Value()
	if !ok {
		return
	}
	acc, _ := f.acc.Value()
	start, end := b.Values[0].I, b.Values[1].I
	vs := f.agg.Result(acc).Values
	vs[f.base], vs[f.base+1], vs[f.base+2] = types.IntValue(start), types.IntValue(end), types.IntValue(end-1000)
	ctx.Emit(types.Row{Values: vs})
	f.bounds.Clear()
	f.acc.Clear()
}
