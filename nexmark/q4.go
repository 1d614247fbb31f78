package nexmark

import (
	"github.com/weirstream/weir"
)

// Q4Row is a row of query 4: id (the category), final (the average
// winning price).
type Q4Row struct {
	ID, Final int64
	DateTime  int64 // the event time of the change; not an output column
}

// q4Auction and q4Bid are the columns of the auctions and bids that q4
// uses: the regular join keeps every one of them, so they are small.
type q4Auction struct{ ID, Category, DateTime, Expires int64 }
type q4Bid struct{ Auction, Price, DateTime int64 }

// q4Key is the key of the inner GROUP BY: A.id, A.category.
type q4Key struct{ ID, Category int64 }

// q4Pair is a row of the join: an auction's key and the price of a bid in
// its lifetime.
type q4Pair struct {
	Key   q4Key
	Price int64
}

// Q4 is query 4, average price for a category (ref queries/q4.sql):
//
//	SELECT Q.category, AVG(Q.final) FROM (
//	  SELECT MAX(B.price) AS final, A.category FROM auction A, bid B
//	  WHERE A.id = B.auction AND B.dateTime BETWEEN A.dateTime AND A.expires
//	  GROUP BY A.id, A.category) Q
//	GROUP BY Q.category
//
// The plan is Flink's:
//
//  1. weir.Join, the regular join of auctions keyed by id with bids keyed
//     by auction, the BETWEEN (inclusive) as its predicate: both sides
//     kept for ever, as Flink without state TTL; nothing is late;
//  2. weir.AggregateChanges keyed by (id, category) with MAX(price): the
//     join's output is insert-only, so a plain maximum (Flink's MAX
//     without retraction); it emits a changelog (+I, then -U/+U when the
//     maximum rises);
//  3. weir.AggregateChanges keyed by category with weir.AvgRetract over
//     that changelog: the BIGINT average, truncated, retracting the old
//     maximum of an auction when it rises;
//  4. a stateless weir.Process keyed by category that stamps each change
//     with its event time (for the benchmark's latency; Map cannot read a
//     record's timestamp).
//
// The result is a changelog whose upsert view, keyed by category, is the
// query's answer.
func Q4(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q4Row]] {
	auctions := weir.FlatMap(events, func(e Event, emit func(q4Auction)) {
		if e.Type == AuctionEvent {
			a := &e.Auction
			emit(q4Auction{a.ID, a.Category, a.DateTime, a.Expires})
		}
	}, weir.Name("q4-auctions"))
	bids := weir.FlatMap(events, func(e Event, emit func(q4Bid)) {
		if e.Type == BidEvent {
			emit(q4Bid{e.Bid.Auction, e.Bid.Price, e.Bid.DateTime})
		}
	}, weir.Name("q4-bids"))
	pairs := weir.Join(
		weir.KeyBy(auctions, func(a q4Auction) int64 { return a.ID }),
		weir.KeyBy(bids, func(b q4Bid) int64 { return b.Auction }),
		func(id int64, a q4Auction, b q4Bid) (q4Pair, bool) {
			return q4Pair{q4Key{id, a.Category}, b.Price}, a.DateTime <= b.DateTime && b.DateTime <= a.Expires
		}, weir.Name("q4-join"))
	maxima := weir.AggregateChanges(
		weir.KeyBy(weir.Changes(pairs, weir.Name("q4-pairs")), func(c weir.Change[q4Pair]) q4Key { return c.Value.Key }),
		insertOnly[q4Pair, weir.Opt[int64], int64]{weir.Max(func(p q4Pair) int64 { return p.Price }), "q4"},
		weir.Name("q4-max"))
	avg := weir.AggregateChanges(
		weir.KeyBy(maxima, func(c weir.Change[weir.KeyValue[q4Key, int64]]) int64 { return c.Value.Key.Category }),
		weir.AvgRetract(func(m weir.KeyValue[q4Key, int64]) int64 { return m.Value }),
		weir.Name("q4-avg"))
	return weir.Process(
		weir.KeyBy(avg, func(c weir.Change[weir.KeyValue[int64, int64]]) int64 { return c.Value.Key }),
		weir.ProcessFunc[int64, weir.Change[weir.KeyValue[int64, int64]], weir.Change[Q4Row]](
			func(ctx *weir.KeyedContext[int64, weir.Change[Q4Row]], c weir.Change[weir.KeyValue[int64, int64]]) error {
				ctx.Emit(weir.Change[Q4Row]{Kind: c.Kind, Value: Q4Row{c.Value.Key, c.Value.Value, ctx.Timestamp().UnixMilli()}})
				return nil
			}), weir.Name("q4-stamp"))
}

// AppendJSON implements Row.
func (r *Q4Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"id":`, r.ID)
	dst = appendIntField(dst, `,"final":`, r.Final)
	return append(dst, '}')
}

// AppendKey implements Keyed: the category.
func (r *Q4Row) AppendKey(dst []byte) []byte { return appendKeyInt(dst, r.ID) }

// Ready implements Row.
func (r *Q4Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q4", Columns: []string{"id", "final"}, Key: []string{"id"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q4(ev), out) }})
}
