package nexmark

import (
	"github.com/weirstream/weir"
)

// Q2Row is a row of query 2.
type Q2Row struct {
	Auction, Price int64
	DateTime       int64 // not an output column; for latency
}

// Q2 is query 2, selection (ref queries/q2.sql): auction and price of the
// bids on every 123rd auction (MOD(auction, 123) = 0; SQL's MOD keeps the
// dividend's sign, so a negative auction id divisible by 123 counts too).
func Q2(events *weir.Stream[Event]) *weir.Stream[Q2Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q2Row)) {
		if e.Type == BidEvent && e.Bid.Auction%123 == 0 {
			emit(Q2Row{e.Bid.Auction, e.Bid.Price, e.Bid.DateTime})
		}
	}, weir.Name("q2"))
}

// AppendJSON implements Row.
func (r *Q2Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"price":`, r.Price)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q2Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q2", Columns: []string{"auction", "price"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q2(ev), out) }})
}
