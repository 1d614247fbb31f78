package nexmark

import (
	"time"

	"github.com/weirstream/weir"
)

// Q7Row is a row of query 7: auction, price, bidder, datetime, extra (the
// bid's own values). WindowEnd, the end of the window whose highest price
// the bid has, is not an output column.
type Q7Row struct {
	Auction, Price, Bidder int64
	DateTime               int64
	Extra                  string
	WindowEnd              int64
}

const q7Window = 10 * time.Second

// q7Buckets is the number of keys of q7's partial maximum. Keyed by
// auction, a window's firing would send one partial per auction through
// the exchange to the one subtask of q7-pick that has the window, and the
// window state would hold every auction with its bids at the maximum: the
// firing would wait on that exchange, and the state's deferred encoding
// and the GC scanning it would compete for the cores. Any partition of
// the bids gives the same maximum once merged, so the key is
// the auction modulo a number large enough to spread the bids over the
// key groups (128) and subtasks: a window fires at most q7Buckets partials.
const q7Buckets = 512

// Q7 is query 7, highest bid (ref queries/q7.sql): the bids whose price is
// the highest of a 10 s tumbling window. The SQL joins the bids with each
// window's MAX(price) on price = maxprice and dateTime BETWEEN window_end -
// 10 s AND window_end; BETWEEN includes both ends, so a bid at exactly
// window_end (which belongs to the next window) also matches the window
// that ends there if its price equals that window's maximum. Every bid
// tied at the maximum is a row. The columns are auction, price, bidder,
// datetime, extra with the bid's values (ref's sink lists price before
// bidder while its SELECT gives bidder first; that positional mix-up is
// not reproduced).
//
// Plan, all public API:
//
//  1. bids keyed by auction mod q7Buckets, Tumbling(10s), an aggregate
//     keeping the highest price and the bids at it: per bucket of auctions
//     and window, a partial maximum (the local phase of Flink's two-phase
//     aggregation: a maximum over any partition of the bids merges into the
//     window's);
//  2. bids at exactly a window boundary, tagged for the window that ends
//     there;
//  3. both keyed by window end, a Process merging the partial maxima and
//     keeping the boundary bids that can still match; an event-time timer
//     at the window end (after the boundary bids, whose time it is) emits
//     the window's rows.
func Q7(events *weir.Stream[Event]) *weir.Stream[Q7Row] {
	bids := Bids(events)
	partial := weir.Aggregate(
		weir.Window(weir.KeyBy(bids, func(b Bid) int64 { return floorMod(b.Auction, q7Buckets) }), weir.Tumbling(q7Window)),
		weir.AggregateFunction[Bid, q7Top, q7Top](q7MaxAgg{}), weir.Name("q7-partial-max"))
	own := weir.Map(partial, func(r weir.WindowResult[int64, q7Top]) q7Cand {
		return q7Cand{End: r.End.UnixMilli(), Top: r.Value}
	}, weir.Name("q7-own"))
	edge := weir.FlatMap(bids, func(b Bid, emit func(q7Cand)) {
		if floorMod(b.DateTime, ms(q7Window)) == 0 {
			emit(q7Cand{End: b.DateTime, Edge: true, Top: q7Top{Max: b.Price, Bids: []Bid{b}}})
		}
	}, weir.Name("q7-edge"))
	perWindow := weir.KeyBy(weir.Union(own, edge), func(c q7Cand) int64 { return c.End })
	return weir.ProcessWith(perWindow, func() weir.KeyedProcessFunction[int64, q7Cand, Q7Row] { return &q7Pick{} },
		weir.Name("q7-pick"))
}

// q7Top is a maximum price and the bids that have it.
type q7Top struct {
	Max  int64
	Bids []Bid
}

// q7MaxAgg keeps the highest price and the bids at it.
type q7MaxAgg struct{}

func (q7MaxAgg) Create() q7Top { return q7Top{Max: -1 << 63} }
func (q7MaxAgg) Add(a q7Top, b Bid) q7Top {
	switch {
	case b.Price > a.Max:
		a.Max = b.Price
		a.Bids = append(a.Bids[:0:0], b)
	case b.Price == a.Max:
		a.Bids = append(a.Bids, b)
	}
	return a
}
func (q7MaxAgg) Merge(a, b q7Top) q7Top {
	switch {
	case b.Max > a.Max:
		return b
	case b.Max == a.Max:
		a.Bids = append(a.Bids[:len(a.Bids):len(a.Bids)], b.Bids...)
	}
	return a
}
func (q7MaxAgg) Result(a q7Top) q7Top { return a }

// AppendOnlyAccumulator: Add appends to Bids or starts a new slice, Merge
// appends to a copy, and q7Pick keeps the bids it receives without
// changing them, so a checkpoint may copy the accumulators' slice headers
// at the barrier and encode them later (weir.AppendOnlyAccumulator).
func (q7MaxAgg) AppendOnlyAccumulator() {}

// IdentityResult: Result returns the accumulator (weir.IdentityResult).
func (q7MaxAgg) IdentityResult() {}

// q7Cand is a partial maximum of a window (Edge false) or a bid at its end.
type q7Cand struct {
	End  int64
	Edge bool
	Top  q7Top
}

// q7Window is the state of one window at the picking stage.
type q7State struct {
	Own  q7Top // merged maximum of the window's bids; Max = MinInt64 before any
	Edge []Bid // bids at the window's end whose price may still be the maximum
}

type q7Pick struct {
	st *weir.ValueState[int64, q7State]
}

func (f *q7Pick) Open(rc *weir.RuntimeContext[int64]) error {
	f.st = weir.NewValueState[q7State](rc, "window")
	return nil
}

func (f *q7Pick) ProcessElement(ctx *weir.KeyedContext[int64, Q7Row], c q7Cand) error {
	s, ok := f.st.Value()
	if !ok {
		s.Own.Max = -1 << 63
		ctx.RegisterEventTimeTimer(time.UnixMilli(c.End))
	}
	if c.Edge {
		if c.Top.Max < s.Own.Max {
			if ok {
				return nil
			}
		} else {
			s.Edge = append(s.Edge, c.Top.Bids...)
		}
	} else {
		s.Own = q7MaxAgg{}.Merge(s.Own, c.Top)
		// Boundary bids below the maximum can no longer match.
		kept := s.Edge[:0]
		for _, b := range s.Edge {
			if b.Price >= s.Own.Max {
				kept = append(kept, b)
			}
		}
		s.Edge = kept
	}
	f.st.Update(s)
	return nil
}

func (f *q7Pick) OnTimer(ctx *weir.KeyedContext[int64, Q7Row], _ time.Time) error {
	s, ok := f.st.Value()
	f.st.Clear()
	if !ok || len(s.Own.Bids) == 0 {
		return nil // only boundary bids: the window itself had no bid
	}
	end := ctx.Key()
	for _, b := range s.Own.Bids {
		ctx.Emit(Q7Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra, end})
	}
	for _, b := range s.Edge {
		if b.Price == s.Own.Max {
			ctx.Emit(Q7Row{b.Auction, b.Price, b.Bidder, b.DateTime, b.Extra, end})
		}
	}
	return nil
}

// AppendJSON implements Row.
func (r *Q7Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"price":`, r.Price)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"datetime":`, r.DateTime)
	dst = appendStringField(dst, `,"extra":`, r.Extra)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q7Row) Ready() int64 { return r.WindowEnd + ms(WatermarkDelay) }

func init() {
	register(&Query{Name: "q7", Columns: []string{"auction", "price", "bidder", "datetime", "extra"}, Windowed: true, Extent: q7Window,
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q7(ev), out) }})
}
