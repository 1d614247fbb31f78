package nexmark

import (
	"github.com/weirstream/weir"
)

// Q18Row is a row of query 18: auction, bidder, price, channel, url,
// datetime, extra — the bid.
type Q18Row struct{ Bid }

type q18Key struct{ Bidder, Auction int64 }

// Q18 is query 18, find last bid (ref queries/q18.sql): for each bidder
// and auction, its latest bid (ROW_NUMBER() OVER (PARTITION BY bidder,
// auction ORDER BY dateTime DESC) ≤ 1, Flink's deduplication keeping the
// last row) — an updating result: bids keyed by (bidder, auction), a
// Process keeping the pair's latest bid in value state (one bid per pair:
// AggregateChanges would keep the accumulator and the last result, two),
// +I for the pair's first bid, −U/+U when a later one arrives (a bid older
// than the one kept changes nothing). A bid with the same date_time as
// the one kept replaces it, as in Flink's deduplication (its
// RowTimeDeduplicateFunction keeping the last row replaces when the new
// row's rowtime is >= the kept one's): of tied bids the last to arrive is
// the answer. ROW_NUMBER() leaves the tie unspecified, and over parallel
// sources the arrival order of bids of one pair from two splits is not
// deterministic (in Flink as here); what this computes is what the SQL
// plan of q18.sql computes (docs/sql.md). The upsert view, keyed by
// (auction, bidder), is the query's answer.
func Q18(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q18Row]] {
	return weir.ProcessWith(weir.KeyBy(Bids(events), func(b Bid) q18Key { return q18Key{b.Bidder, b.Auction} }),
		func() weir.KeyedProcessFunction[q18Key, Bid, weir.Change[Q18Row]] { return &q18Keep{} }, weir.Name("q18-last"))
}

type q18Keep struct {
	last *weir.ValueState[q18Key, Bid]
}

func (f *q18Keep) Open(rc *weir.RuntimeContext[q18Key]) error {
	f.last = weir.NewValueState[Bid](rc, "last")
	return nil
}

func (f *q18Keep) ProcessElement(ctx *weir.KeyedContext[q18Key, weir.Change[Q18Row]], b Bid) error {
	old, ok := f.last.Value()
	switch {
	case !ok:
		ctx.Emit(weir.Change[Q18Row]{Kind: weir.Insert, Value: Q18Row{b}})
	case b.DateTime >= old.DateTime:
		ctx.Emit(weir.Change[Q18Row]{Kind: weir.UpdateBefore, Value: Q18Row{old}})
		ctx.Emit(weir.Change[Q18Row]{Kind: weir.UpdateAfter, Value: Q18Row{b}})
	default:
		return nil
	}
	f.last.Update(b)
	return nil
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
