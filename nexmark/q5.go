package nexmark

import (
	"context"
	"math"
	"runtime/trace"
	"strconv"
	"time"

	"github.com/weirstream/weir"
)

// Q5Row is a row of query 5: auction, num. Start and End, the hopping
// window's bounds (epoch ms), are not output columns.
type Q5Row struct {
	Auction, Num int64
	Start, End   int64
}

// Q5 is query 5, hot items (ref queries/q5.sql): for each hopping window of
// 10 s every 2 s, the auctions with the most bids. The SQL joins the
// per-auction counts of each window with their maximum on num >= maxn;
// here:
//
//  1. bids keyed by auction, Hopping(10s, 2s), Count: one count per auction
//     and window, emitted when the watermark passes the window;
//  2. on each subtask of the count, before any exchange, a local maximum
//     (q5LocalMax): a count below one already passed for the same window
//     cannot be the window's maximum nor tied at it, so it is dropped;
//  3. the counts left keyed by window end, a Process keeping the window's
//     maximum and the auctions at it, emitted by an event-time timer at
//     end-1, which fires once every count of the window has arrived
//     (window results travel with the watermark from before their firing).
//
// Step 2 is the local phase of a two-phase maximum (Flink's planner splits
// MAX into a local and a global aggregation the same way). Without it,
// every count of a window (one per auction with a bid: hundreds of
// thousands) would cross the exchange to the one subtask of q5-max that
// has the window, which would look each up in its state while the counts'
// subtasks were still firing: a third goroutine on the critical path of
// every slide.
//
// Every auction tied at the maximum is a row, as the join gives. A window
// with no bid has no row (the SQL's windows come from the bids).
func Q5(events *weir.Stream[Event]) *weir.Stream[Q5Row] {
	bids := Bids(events)
	counts := weir.Aggregate(
		weir.Window(weir.KeyBy(bids, func(b Bid) int64 { return b.Auction }), weir.Hopping(10*time.Second, 2*time.Second)),
		weir.Count[Bid](), weir.Name("q5-count"))
	local := weir.FilterWatermarkWith(counts, q5LocalMax, weir.Name("q5-local-max"))
	perWindow := weir.KeyBy(local, func(r weir.WindowResult[int64, int64]) int64 { return r.End.UnixMilli() })
	return weir.ProcessWith(perWindow, func() weir.KeyedProcessFunction[int64, weir.WindowResult[int64, int64], Q5Row] {
		return &q5Max{}
	}, weir.Name("q5-max"))
}

// q5LocalMax returns the local maximum of one subtask: a filter that
// passes a count unless a larger count of the same window passed before
// it. Counts tied at the largest so far pass, so every auction tied at the
// window's maximum reaches q5-max, which keeps the maximum as before; the
// result is the same whatever the filter drops. A window's counts leave a
// subtask together (its firing), so the filter keeps the maximum of the
// last window it saw only; a count of another window starts over. In
// hash order the counts that pass are the running maxima: a few dozen a
// window instead of one per auction. The filter keeps no state across a
// restore (FilterWatermarkWith's contract): it starts over, passing more.
func q5LocalMax() func(r weir.WindowResult[int64, int64], _, _ int64) bool {
	end, top := int64(math.MinInt64), int64(0)
	return func(r weir.WindowResult[int64, int64], _, _ int64) bool {
		if e := r.End.UnixMilli(); e != end {
			end, top = e, r.Value
			return true
		}
		if r.Value < top {
			return false
		}
		top = r.Value
		return true
	}
}

// q5Top is the state of one window: its start, the largest count and the
// auctions that have it.
type q5Top struct {
	Start, Num int64
	Auctions   []int64
}

// q5Max is the global phase. While a runtime/trace runs (weir bench
// nexmark --latency-profile), it logs "q5-first" when a window's first
// count arrives and "q5-timer" when its timer fires, with the window end:
// with the counts' window-fire regions they place a slide's critical path.
type q5Max struct {
	top *weir.ValueState[int64, q5Top]
}

func (f *q5Max) Open(rc *weir.RuntimeContext[int64]) error {
	f.top = weir.NewValueState[q5Top](rc, "top")
	return nil
}

func (f *q5Max) ProcessElement(ctx *weir.KeyedContext[int64, Q5Row], r weir.WindowResult[int64, int64]) error {
	t, ok := f.top.Value()
	if !ok {
		t = q5Top{Start: r.Start.UnixMilli(), Num: -1}
		ctx.RegisterEventTimeTimer(r.End.Add(-time.Millisecond))
		if trace.IsEnabled() {
			trace.Log(context.Background(), "q5-first", strconv.FormatInt(ctx.Key(), 10))
		}
	}
	switch {
	case r.Value > t.Num:
		t.Num = r.Value
		t.Auctions = append(t.Auctions[:0], r.Key)
	case r.Value == t.Num:
		t.Auctions = append(t.Auctions, r.Key)
	default:
		if ok {
			return nil // nothing changed
		}
	}
	f.top.Update(t)
	return nil
}

func (f *q5Max) OnTimer(ctx *weir.KeyedContext[int64, Q5Row], _ time.Time) error {
	if trace.IsEnabled() {
		trace.Log(context.Background(), "q5-timer", strconv.FormatInt(ctx.Key(), 10))
	}
	t, ok := f.top.Value()
	if !ok {
		return nil
	}
	for _, a := range t.Auctions {
		ctx.Emit(Q5Row{Auction: a, Num: t.Num, Start: t.Start, End: ctx.Key()})
	}
	f.top.Clear()
	return nil
}

// AppendJSON implements Row.
func (r *Q5Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"num":`, r.Num)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q5Row) Ready() int64 { return r.End + ms(WatermarkDelay) }

func init() {
	register(&Query{Name: "q5", Columns: []string{"auction", "num"}, Windowed: true, Extent: 10 * time.Second,
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q5(ev), out) }})
}
