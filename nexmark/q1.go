package nexmark

import (
	"github.com/weirstream/weir"
)

// Q1Row is a row of query 1: the price in euros as a decimal of scale 3.
type Q1Row struct {
	Auction, Bidder int64
	// PriceMilli is price × 0.908 in thousandths (the DECIMAL(23, 3) of
	// ref's sink: 0.908 * price is exact at scale 3).
	PriceMilli int64
	DateTime   int64
	Extra      string
}

// Q1 is query 1, currency conversion (ref queries/q1.sql): each bid with
// its price converted from dollars to euros, 0.908 × price, a decimal with
// three places, written as a JSON number with exactly three decimals.
func Q1(events *weir.Stream[Event]) *weir.Stream[Q1Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q1Row)) {
		if e.Type == BidEvent {
			b := &e.Bid
			emit(Q1Row{b.Auction, b.Bidder, b.Price * 908, b.DateTime, b.Extra})
		}
	}, weir.Name("q1"))
}

// AppendJSON implements Row.
func (r *Q1Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendDecimal3(dst, `,"price":`, r.PriceMilli)
	dst = appendIntField(dst, `,"datetime":`, r.DateTime)
	dst = appendStringField(dst, `,"extra":`, r.Extra)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q1Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q1", Columns: []string{"auction", "bidder", "price", "datetime", "extra"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q1(ev), out) }})
}
