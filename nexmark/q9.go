package nexmark

import (
	"github.com/weirstream/weir"
)

// Q9Row is a row of query 9: the auction's columns (id, itemname,
// description, initialbid, reserve, datetime, expires, seller, category,
// extra) and its winning bid's (auction = A.ID, bidder, price,
// bid_datetime, bid_extra).
type Q9Row struct {
	A Auction
	B q9Bid
}

// q9Bid is the columns of a bid that q9 outputs: the join keeps every bid,
// so the channel and url, which q9 does not use, are dropped before it.
type q9Bid struct {
	Bidder, Price, DateTime int64
	Extra                   string
}

// q9Top is the accumulator of the top-1 aggregate.
type q9Top struct {
	Row Q9Row
	OK  bool
}

// q9Better reports whether x ranks before y: higher price, then earlier
// bid time. An exact tie keeps the row that came first (y).
func q9Better(x, y *Q9Row) bool {
	if x.B.Price != y.B.Price {
		return x.B.Price > y.B.Price
	}
	return x.B.DateTime < y.B.DateTime
}

// Q9 is query 9, winning bids (ref queries/q9.sql): for each auction, the
// bid within its lifetime with the highest price, the earliest on a tie
// (ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.dateTime
// ASC) = 1), with the auction's columns. Plan:
//
//  1. weir.Join, the regular join of auctions keyed by id and bids keyed
//     by auction with B.dateTime BETWEEN A.dateTime AND A.expires as the
//     predicate (both sides kept for ever, as Flink without state TTL);
//  2. weir.AggregateChanges keyed by auction id with a top-1 aggregate
//     (Flink's rank with rownum ≤ 1 over an insert-only input keeps only
//     the best row): +I for an auction's first winner, -U/+U when a
//     better bid arrives.
//
// Flink leaves a tie on both price and time unspecified; here the pair the
// join emits first wins, which for one source reading a file is the bid
// earlier in the file, as batchref decides (at a higher parallelism the
// sources' interleaving decides). The result is a changelog whose upsert
// view, keyed by auction id, is the query's answer.
func Q9(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q9Row]] {
	type keyedBid struct {
		Auction int64
		B       q9Bid
	}
	bids := weir.FlatMap(events, func(e Event, emit func(keyedBid)) {
		if e.Type == BidEvent {
			b := &e.Bid
			emit(keyedBid{b.Auction, q9Bid{b.Bidder, b.Price, b.DateTime, b.Extra}})
		}
	}, weir.Name("q9-bids"))
	pairs := weir.Join(
		weir.KeyBy(Auctions(events), func(a Auction) int64 { return a.ID }),
		weir.KeyBy(bids, func(b keyedBid) int64 { return b.Auction }),
		func(_ int64, a Auction, b keyedBid) (Q9Row, bool) {
			return Q9Row{a, b.B}, a.DateTime <= b.B.DateTime && b.B.DateTime <= a.Expires
		}, weir.Name("q9-join"))
	top := weir.AggregateChanges(
		weir.KeyBy(weir.Changes(pairs, weir.Name("q9-pairs")), func(c weir.Change[Q9Row]) int64 { return c.Value.A.ID }),
		insertOnly[Q9Row, q9Top, Q9Row]{weir.AggregateFuncs[Q9Row, q9Top, Q9Row]{
			AddFn: func(acc q9Top, r Q9Row) q9Top {
				if !acc.OK || q9Better(&r, &acc.Row) {
					return q9Top{r, true}
				}
				return acc
			},
			MergeFn: func(a, b q9Top) q9Top {
				if !a.OK || b.OK && q9Better(&b.Row, &a.Row) {
					return b
				}
				return a
			},
			ResultFn: func(acc q9Top) Q9Row { return acc.Row },
		}, "q9"}, weir.Name("q9-top1"))
	return weir.Map(top, func(c weir.Change[weir.KeyValue[int64, Q9Row]]) weir.Change[Q9Row] {
		return weir.Change[Q9Row]{Kind: c.Kind, Value: c.Value.Value}
	}, weir.Name("q9-rows"))
}

// AppendJSON implements Row.
func (r *Q9Row) AppendJSON(dst []byte) []byte {
	a, b := &r.A, &r.B
	dst = appendIntField(dst, `{"id":`, a.ID)
	dst = appendStringField(dst, `,"itemname":`, a.ItemName)
	dst = appendStringField(dst, `,"description":`, a.Description)
	dst = appendIntField(dst, `,"initialbid":`, a.InitialBid)
	dst = appendIntField(dst, `,"reserve":`, a.Reserve)
	dst = appendIntField(dst, `,"datetime":`, a.DateTime)
	dst = appendIntField(dst, `,"expires":`, a.Expires)
	dst = appendIntField(dst, `,"seller":`, a.Seller)
	dst = appendIntField(dst, `,"category":`, a.Category)
	dst = appendStringField(dst, `,"extra":`, a.Extra)
	dst = appendIntField(dst, `,"auction":`, a.ID)
	dst = appendIntField(dst, `,"bidder":`, b.Bidder)
	dst = appendIntField(dst, `,"price":`, b.Price)
	dst = appendIntField(dst, `,"bid_datetime":`, b.DateTime)
	dst = appendStringField(dst, `,"bid_extra":`, b.Extra)
	return append(dst, '}')
}

// AppendKey implements Keyed: the auction id.
func (r *Q9Row) AppendKey(dst []byte) []byte { return appendKeyInt(dst, r.A.ID) }

// Ready implements Row: the later of the pair's times, when the join
// emits it.
func (r *Q9Row) Ready() int64 { return max(r.A.DateTime, r.B.DateTime) }

func init() {
	register(&Query{Name: "q9", Columns: []string{"id", "itemname", "description", "initialbid", "reserve", "datetime",
		"expires", "seller", "category", "extra", "auction", "bidder", "price", "bid_datetime", "bid_extra"}, Key: []string{"id"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q9(ev), out) }})
}
