package nexmark

import (
	"math"
	"time"

	"github.com/weirstream/weir"
)

// Q12Row is a row of query 12: bidder, bid_count, starttime, endtime (the
// processing-time window's bounds, epoch ms). LastBid and LastSeen, the
// date_time of the window's last bid and the processing time it was
// counted at, are not output columns: they place the window's end on the
// event-time axis for Ready.
type Q12Row struct {
	Bidder, BidCount   int64
	StartTime, EndTime int64
	LastBid, LastSeen  int64
}

// Q12Window is the size of q12's processing-time windows.
const Q12Window = 10 * time.Second

// endOfInput is the time of the event-time timer that flushes q12's open
// windows: only the final watermark of a bounded input reaches it.
var endOfInput = time.UnixMilli(math.MaxInt64)

// Q12 is query 12, processing-time windows (ref queries/q12.sql): the
// number of bids of each bidder per tumbling window of 10 s of processing
// time (TUMBLE over PROCTIME()). Processing time is the job's clock (the
// weir.Clock option; the wall clock by default), read once per bid, so the
// windows, unlike every other query's, depend on when the bids are
// processed; only the total per bidder over a whole run is a function of
// the input.
//
// Plan: bids keyed by bidder, a Process keeping the bidder's open window
// (start, count): a bid in a later window emits the open one first; a
// processing-time timer at the window's end−1 emits it when the clock gets
// there (as weir's ProcessingTimeTrigger and Flink's processing-time
// window do). At the end of a bounded input the open windows fire, as
// weir's ProcessingTimeTrigger does (Flink drops them): an event-time
// timer at the end of time, which only the final watermark reaches, emits
// them, so every bid is counted exactly once.
func Q12(events *weir.Stream[Event]) *weir.Stream[Q12Row] {
	bids := Bids(events)
	return weir.ProcessWith(weir.KeyBy(bids, func(b Bid) int64 { return b.Bidder }),
		func() weir.KeyedProcessFunction[int64, Bid, Q12Row] { return &q12Windows{} }, weir.Name("q12-windows"))
}

// q12Open is a bidder's open window.
type q12Open struct {
	Start, Count      int64
	LastBid, LastSeen int64
}

type q12Windows struct {
	open *weir.ValueState[int64, q12Open]
}

func (f *q12Windows) Open(rc *weir.RuntimeContext[int64]) error {
	f.open = weir.NewValueState[q12Open](rc, "window")
	return nil
}

func (f *q12Windows) ProcessElement(ctx *weir.KeyedContext[int64, Q12Row], b Bid) error {
	now := ctx.CurrentProcessingTime().UnixMilli()
	size := Q12Window.Milliseconds()
	start := now - floorMod(now, size)
	w, ok := f.open.Value()
	if ok && w.Start != start {
		// The clock passed the open window's end before its timer fired
		// (timers are checked between batches): emit it now.
		f.emit(ctx, w)
		ctx.DeleteProcessingTimeTimer(time.UnixMilli(w.Start + size - 1))
		ok = false
	}
	if !ok {
		w = q12Open{Start: start}
		ctx.RegisterProcessingTimeTimer(time.UnixMilli(start + size - 1))
		ctx.RegisterEventTimeTimer(endOfInput)
	}
	w.Count++
	w.LastBid, w.LastSeen = b.DateTime, now
	f.open.Update(w)
	return nil
}

func (f *q12Windows) OnTimer(ctx *weir.KeyedContext[int64, Q12Row], t time.Time) error {
	w, ok := f.open.Value()
	if !ok {
		return nil
	}
	if ctx.TimeDomain() == weir.ProcessingTime && t.UnixMilli() != w.Start+Q12Window.Milliseconds()-1 {
		return nil // the timer of a window already emitted
	}
	f.emit(ctx, w)
	f.open.Clear()
	return nil
}

func (f *q12Windows) emit(ctx *weir.KeyedContext[int64, Q12Row], w q12Open) {
	ctx.Emit(Q12Row{Bidder: ctx.Key(), BidCount: w.Count, StartTime: w.Start, EndTime: w.Start + Q12Window.Milliseconds(),
		LastBid: w.LastBid, LastSeen: w.LastSeen})
}

// AppendJSON implements Row.
func (r *Q12Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"bid_count":`, r.BidCount)
	dst = appendIntField(dst, `,"starttime":`, r.StartTime)
	dst = appendIntField(dst, `,"endtime":`, r.EndTime)
	return append(dst, '}')
}

// Ready implements Row: the window's end, in event time. The window ends in
// processing time; the last bid was counted EndTime − LastSeen before it,
// so its date_time plus that gap is the event time of the window's end
// (with event time moving with the clock, as in the bench's latency run,
// that is when the window could fire).
func (r *Q12Row) Ready() int64 { return r.LastBid + (r.EndTime - 1 - r.LastSeen) }

func init() {
	register(&Query{Name: "q12", Columns: []string{"bidder", "bid_count", "starttime", "endtime"},
		// Not Windowed: its windows close by the clock, not the watermark.
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q12(ev), out) }})
}
