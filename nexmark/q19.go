package nexmark

import (
	"strings"

	"github.com/weirstream/weir"
)

// Q19Top is the N of q19's Top-N.
const Q19Top = 10

// Q19Row is a row of query 19: the bid's columns (auction, bidder, price,
// channel, url, datetime, extra) and rank_number, 1 to 10. At, the
// date_time of the bid that made the change, is not an output column.
type Q19Row struct {
	Bid  Bid
	Rank int64
	At   int64
}

// q19Before reports whether x ranks before y in q19: the higher price.
// ROW_NUMBER() leaves a tie unspecified (Flink ranks equal prices in
// arrival order, which over parallel sources is not deterministic): here
// the earlier date_time, then the lower bidder, then channel, url and
// extra in byte order rank first, so that the result is a function of the
// input at any parallelism (equal bids are interchangeable).
func q19Before(x, y *Bid) bool {
	if x.Price != y.Price {
		return x.Price > y.Price
	}
	if x.DateTime != y.DateTime {
		return x.DateTime < y.DateTime
	}
	if x.Bidder != y.Bidder {
		return x.Bidder < y.Bidder
	}
	if c := strings.Compare(x.Channel, y.Channel); c != 0 {
		return c < 0
	}
	if c := strings.Compare(x.URL, y.URL); c != 0 {
		return c < 0
	}
	return x.Extra < y.Extra
}

// q19List is an auction's top bids, best first.
type q19List struct {
	N    int
	Bids [Q19Top]Bid
}

// Q19 is query 19, auction top-10 price (ref queries/q19.sql): for each
// auction its 10 highest bids with their rank (ROW_NUMBER() OVER
// (PARTITION BY auction ORDER BY price DESC) ≤ 10, rank_number output) —
// an updating Top-N. Plan: bids keyed by auction, a Process keeping the
// auction's top 10 in value state, emitting as Flink's append-only Top-N
// with row numbers does: a bid entering at rank r moves the bids at ranks
// r..10 down one, so each of those ranks gets −U(old)/+U(new), and a rank
// filled for the first time +I; the bid pushed past 10 leaves with its
// rank's −U. A bid below the tenth changes nothing. The upsert view, keyed
// by (auction, rank_number), is the query's answer. Ties on price: see
// q19Before.
func Q19(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q19Row]] {
	return weir.ProcessWith(weir.KeyBy(Bids(events), func(b Bid) int64 { return b.Auction }),
		func() weir.KeyedProcessFunction[int64, Bid, weir.Change[Q19Row]] { return &q19TopN{} }, weir.Name("q19-topn"))
}

type q19TopN struct {
	top *weir.ValueState[int64, q19List]
}

func (f *q19TopN) Open(rc *weir.RuntimeContext[int64]) error {
	f.top = weir.NewValueState[q19List](rc, "top")
	return nil
}

func (f *q19TopN) ProcessElement(ctx *weir.KeyedContext[int64, weir.Change[Q19Row]], b Bid) error {
	l, _ := f.top.Value()
	if l.N == Q19Top && !q19Before(&b, &l.Bids[Q19Top-1]) {
		return nil
	}
	r := l.N // the new bid's index
	for r > 0 && q19Before(&b, &l.Bids[r-1]) {
		r--
	}
	cur := b
	for i := r; i < Q19Top && i <= l.N; i++ {
		rank := int64(i + 1)
		if i < l.N {
			ctx.Emit(weir.Change[Q19Row]{Kind: weir.UpdateBefore, Value: Q19Row{l.Bids[i], rank, b.DateTime}})
			ctx.Emit(weir.Change[Q19Row]{Kind: weir.UpdateAfter, Value: Q19Row{cur, rank, b.DateTime}})
		} else {
			ctx.Emit(weir.Change[Q19Row]{Kind: weir.Insert, Value: Q19Row{cur, rank, b.DateTime}})
		}
		l.Bids[i], cur = cur, l.Bids[i]
	}
	l.N = min(l.N+1, Q19Top)
	f.top.Update(l)
	return nil
}

// AppendJSON implements Row.
func (r *Q19Row) AppendJSON(dst []byte) []byte {
	dst = appendBidColumns(dst, &r.Bid)
	dst = appendIntField(dst, `,"rank_number":`, r.Rank)
	return append(dst, '}')
}

// AppendKey implements Keyed: auction and rank_number.
func (r *Q19Row) AppendKey(dst []byte) []byte {
	return appendKeyInt(appendKeyInt(dst, r.Bid.Auction), r.Rank)
}

// Ready implements Row: the time of the bid that made the change.
func (r *Q19Row) Ready() int64 { return r.At }

func init() {
	register(&Query{Name: "q19", Columns: append(append([]string(nil), bidColumns...), "rank_number"), Key: []string{"auction", "rank_number"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q19(ev), out) }})
}
