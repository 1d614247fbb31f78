package nexmark

import (
	"github.com/weirstream/weir"
)

// Q0Row is a row of query 0: auction, bidder, price, datetime, extra.
type Q0Row struct {
	Auction, Bidder, Price int64
	DateTime               int64
	Extra                  string
}

// Q0 is query 0, pass through (ref queries/q0.sql): every bid, projected
// to auction, bidder, price, dateTime, extra. It measures the cost of the
// source, the projection and the sink.
func Q0(events *weir.Stream[Event]) *weir.Stream[Q0Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q0Row)) {
		if e.Type == BidEvent {
			b := &e.Bid
			emit(Q0Row{b.Auction, b.Bidder, b.Price, b.DateTime, b.Extra})
		}
	}, weir.Name("q0"))
}

// AppendJSON implements Row.
func (r *Q0Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"price":`, r.Price)
	dst = appendIntField(dst, `,"datetime":`, r.DateTime)
	dst = appendStringField(dst, `,"extra":`, r.Extra)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q0Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q0", Columns: []string{"auction", "bidder", "price", "datetime", "extra"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q0(ev), out) }})
}
