package nexmark

import (
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
//  2. the counts keyed by window end, a Process keeping the window's
//     maximum and the auctions at it, emitted by an event-time timer at
//     end-1, which fires once every count of the window has arrived
//     (window results travel with the watermark from before their firing).
//
// Every auction tied at the maximum is a row, as the join gives. A window
// with no bid has no row (the SQL's windows come from the bids).
func Q5(events *weir.Stream[Event]) *weir.Stream[Q5Row] {
	bids := Bids(events)
	counts := weir.Aggregate(
		weir.Window(weir.KeyBy(bids, func(b Bid) int64 { return b.Auction }), weir.Hopping(10*time.Second, 2*time.Second)),
		weir.Count[Bid](), weir.Name("q5-count"))
	perWindow := weir.KeyBy(counts, func(r weir.WindowResult[int64, int64]) int64 { return r.End.UnixMilli() })
	return weir.ProcessWith(perWindow, func() weir.KeyedProcessFunction[int64, weir.WindowResult[int64, int64], Q5Row] {
		return &q5Max{}
	}, weir.Name("q5-max"))
}

// q5Top is the state of one window: its start, the largest count and the
// auctions that have it.
type q5Top struct {
	Start, Num int64
	Auctions   []int64
}

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
