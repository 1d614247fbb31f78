package nexmark

import (
	"github.com/weirstream/weir"
)

// Q20Row is a row of query 20: the bid's auction, bidder, price, channel,
// url, bid_datetime, bid_extra and the auction's itemname, description,
// initialbid, reserve, auction_datetime, expires, seller, category,
// auction_extra.
type Q20Row struct {
	B Bid
	A Auction
}

// Q20 is query 20, expand bid with auction (ref queries/q20.sql): the
// regular inner join of bids with the auctions of category 10 on
// bid.auction = auction.id, without a lifetime condition: weir.Join of
// bids keyed by auction and the filtered auctions keyed by id, every
// matching pair whichever side comes first, both sides kept for ever (as
// Flink without state TTL), nothing late.
func Q20(events *weir.Stream[Event]) *weir.Stream[Q20Row] {
	auctions := weir.Filter(Auctions(events), func(a Auction) bool { return a.Category == 10 }, weir.Name("q20-category"))
	return weir.Join(
		weir.KeyBy(Bids(events), func(b Bid) int64 { return b.Auction }),
		weir.KeyBy(auctions, func(a Auction) int64 { return a.ID }),
		func(_ int64, b Bid, a Auction) (Q20Row, bool) { return Q20Row{b, a}, true },
		weir.Name("q20-join"))
}

// AppendJSON implements Row.
func (r *Q20Row) AppendJSON(dst []byte) []byte {
	a, b := &r.A, &r.B
	dst = appendIntField(dst, `{"auction":`, b.Auction)
	dst = appendIntField(dst, `,"bidder":`, b.Bidder)
	dst = appendIntField(dst, `,"price":`, b.Price)
	dst = appendStringField(dst, `,"channel":`, b.Channel)
	dst = appendStringField(dst, `,"url":`, b.URL)
	dst = appendIntField(dst, `,"bid_datetime":`, b.DateTime)
	dst = appendStringField(dst, `,"bid_extra":`, b.Extra)
	dst = appendStringField(dst, `,"itemname":`, a.ItemName)
	dst = appendStringField(dst, `,"description":`, a.Description)
	dst = appendIntField(dst, `,"initialbid":`, a.InitialBid)
	dst = appendIntField(dst, `,"reserve":`, a.Reserve)
	dst = appendIntField(dst, `,"auction_datetime":`, a.DateTime)
	dst = appendIntField(dst, `,"expires":`, a.Expires)
	dst = appendIntField(dst, `,"seller":`, a.Seller)
	dst = appendIntField(dst, `,"category":`, a.Category)
	dst = appendStringField(dst, `,"auction_extra":`, a.Extra)
	return append(dst, '}')
}

// Ready implements Row: the later of the pair's times.
func (r *Q20Row) Ready() int64 { return max(r.A.DateTime, r.B.DateTime) }

func init() {
	register(&Query{Name: "q20", Columns: []string{"auction", "bidder", "price", "channel", "url", "bid_datetime", "bid_extra",
		"itemname", "description", "initialbid", "reserve", "auction_datetime", "expires", "seller", "category", "auction_extra"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q20(ev), out) }})
}
