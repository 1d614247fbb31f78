package nexmark

import (
	"strings"

	"github.com/weirstream/weir"
)

// Q18Row is a row of query 18: auction, bidder, price, channel, url,
// datetime, extra — the bid.
type Q18Row struct{ Bid }

type q18Key struct{ Bidder, Auction int64 }

// q18Later reports whether x ranks before y in q18: the later date_time.
// ROW_NUMBER() leaves a tie unspecified (Flink keeps the later arrival,
// which over parallel sources is not deterministic): here the rest of the
// row decides, higher price, then channel, url and extra in byte order, so
// that the result is a function of the input at any parallelism.
func q18Later(x, y *Bid) bool {
	if x.DateTime != y.DateTime {
		return x.DateTime > y.DateTime
	}
	if x.Price != y.Price {
		return x.Price > y.Price
	}
	if c := strings.Compare(x.Channel, y.Channel); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.URL, y.URL); c != 0 {
		return c < 0
	}
	return x.Extra < y.Extra
}

// q18Last is the accumulator of the keep-last aggregate.
type q18Last struct {
	Bid Bid
	OK  bool
}

// Q18 is query 18, find last bid (ref queries/q18.sql): for each bidder
// and auction, its latest bid (ROW_NUMBER() OVER (PARTITION BY bidder,
// auction ORDER BY dateTime DESC) ≤ 1, Flink's deduplication keeping the
// last row) — an updating result: weir.AggregateChanges keyed by (bidder,
// auction) with a keep-last aggregate over the bids, +I for the pair's
// first bid, −U/+U when a later one arrives (a bid older than the one kept
// changes nothing). Ties on date_time: see q18Later. The upsert view,
// keyed by (auction, bidder), is the query's answer.
func Q18(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q18Row]] {
	bids := weir.Changes(Bids(events), weir.Name("q18-bids"))
	last := weir.AggregateChanges(
		weir.KeyBy(bids, func(c weir.Change[Bid]) q18Key { return q18Key{c.Value.Bidder, c.Value.Auction} }),
		insertOnly[Bid, q18Last, Bid]{weir.AggregateFuncs[Bid, q18Last, Bid]{
			AddFn: func(acc q18Last, b Bid) q18Last {
				if !acc.OK || q18Later(&b, &acc.Bid) {
					return q18Last{b, true}
				}
				return acc
			},
			MergeFn: func(a, b q18Last) q18Last {
				if !a.OK || b.OK && q18Later(&b.Bid, &a.Bid) {
					return b
				}
				return a
			},
			ResultFn: func(acc q18Last) Bid { return acc.Bid },
		}, "q18"}, weir.Name("q18-last"))
	return weir.Map(last, func(c weir.Change[weir.KeyValue[q18Key, Bid]]) weir.Change[Q18Row] {
		return weir.Change[Q18Row]{Kind: c.Kind, Value: Q18Row{c.Value.Value}}
	}, weir.Name("q18-rows"))
}

// appendBidColumns appends auction, bidder, price, channel, url, datetime
// and extra, the bid table's columns, after "{".
func appendBidColumns(dst []byte, b *Bid) []byte {
	dst = appendIntField(dst, `{"auction":`, b.Auction)
	dst = appendIntField(dst, `,"bidder":`, b.Bidder)
	dst = appendIntField(dst, `,"price":`, b.Price)
	dst = appendStringField(dst, `,"channel":`, b.Channel)
	dst = appendStringField(dst, `,"url":`, b.URL)
	dst = appendIntField(dst, `,"datetime":`, b.DateTime)
	dst = appendStringField(dst, `,"extra":`, b.Extra)
	return dst
}

var bidColumns = []string{"auction", "bidder", "price", "channel", "url", "datetime", "extra"}

// AppendJSON implements Row.
func (r *Q18Row) AppendJSON(dst []byte) []byte { return append(appendBidColumns(dst, &r.Bid), '}') }

// AppendKey implements Keyed: auction and bidder.
func (r *Q18Row) AppendKey(dst []byte) []byte {
	return appendKeyInt(appendKeyInt(dst, r.Auction), r.Bidder)
}

// Ready implements Row: a row is added when its bid arrives.
func (r *Q18Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q18", Columns: bidColumns, Key: []string{"auction", "bidder"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q18(ev), out) }})
}
