package nexmark

import (
	"strings"

	"github.com/weirstream/weir"
)

// Q14Row is a row of query 14: auction, bidder, price, bidtimetype,
// datetime, extra, c_counts.
type Q14Row struct {
	Auction, Bidder int64
	PriceMilli      int64 // 0.908 × price, thousandths (DECIMAL(23, 3))
	BidTimeType     string
	DateTime        int64
	Extra           string
	CCounts         int64
}

// Q14 is query 14, calculation (ref queries/q14.sql): bids whose price in
// euros, 0.908 × price, is strictly between 1,000,000 and 50,000,000 (exact
// decimal comparison: 908 × price against 10⁹ and 5·10¹⁰), with the time of
// day of the bid — "dayTime" for hours 8 to 18, "nightTime" for hours up to
// 6 and from 20, else "otherTime"; hours of date_time in UTC, as the DDL's
// TIMESTAMP(3) holds the epoch time without a zone — and c_counts, the
// number of 'c' bytes in extra (ref udf/CountChar).
func Q14(events *weir.Stream[Event]) *weir.Stream[Q14Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q14Row)) {
		if e.Type != BidEvent {
			return
		}
		b := &e.Bid
		p := b.Price * 908
		if p <= 1_000_000_000 || p >= 50_000_000_000 {
			return
		}
		typ := "otherTime"
		switch h := floorMod(b.DateTime, 24*3600*1000) / (3600 * 1000); {
		case h >= 8 && h <= 18:
			typ = "dayTime"
		case h <= 6 || h >= 20:
			typ = "nightTime"
		}
		emit(Q14Row{b.Auction, b.Bidder, p, typ, b.DateTime, b.Extra, int64(strings.Count(b.Extra, "c"))})
	}, weir.Name("q14"))
}

// AppendJSON implements Row.
func (r *Q14Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendDecimal3(dst, `,"price":`, r.PriceMilli)
	dst = appendStringField(dst, `,"bidtimetype":`, r.BidTimeType)
	dst = appendIntField(dst, `,"datetime":`, r.DateTime)
	dst = appendStringField(dst, `,"extra":`, r.Extra)
	dst = appendIntField(dst, `,"c_counts":`, r.CCounts)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q14Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q14", Columns: []string{"auction", "bidder", "price", "bidtimetype", "datetime", "extra", "c_counts"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q14(ev), out) }})
}
