package nexmark

import (
	"time"

	"github.com/weirstream/weir"
)

// Q17Row is a row of query 17: auction, day, total_bids, rank1_bids,
// rank2_bids, rank3_bids, min_price, max_price, avg_price, sum_price.
type Q17Row struct {
	Auction int64
	Day     int64 // days since 1970-01-01 (UTC); written yyyy-MM-dd
	Stats   q17Stats
}

const msPerDay = 24 * 60 * 60 * 1000

// q17Key is the GROUP BY key: auction, DATE_FORMAT(dateTime, 'yyyy-MM-dd').
type q17Key struct{ Auction, Day int64 }

// q17Stats is the accumulator and the result of the aggregate. Every bid
// changes Total, so carrying the time of the last bid in the result adds
// no update that the SQL would not emit.
type q17Stats struct {
	Total, Rank1, Rank2, Rank3 int64
	Min, Max, Sum              int64
	Last                       int64 // date_time of the last bid; not an output column
}

// Q17 is query 17, auction statistics report (ref queries/q17.sql): per
// auction and UTC day, the number of bids, the numbers below 10,000,
// below 1,000,000 and above, and the min, max, average (BIGINT,
// truncated) and sum of the prices — a GROUP BY without windows, so an
// updating result: weir.AggregateChanges keyed by (auction, day) over the
// bids as a changelog of inserts, +I for a group's first bid, -U/+U for
// each later one. The result is a changelog whose upsert view, keyed by
// (auction, day), is the query's answer.
func Q17(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q17Row]] {
	bids := weir.Changes(Bids(events), weir.Name("q17-bids"))
	stats := weir.AggregateChanges(
		weir.KeyBy(bids, func(c weir.Change[Bid]) q17Key {
			return q17Key{c.Value.Auction, floorDiv(c.Value.DateTime, msPerDay)}
		}),
		insertOnly[Bid, q17Stats, q17Stats]{weir.AggregateFuncs[Bid, q17Stats, q17Stats]{
			AddFn: func(s q17Stats, b Bid) q17Stats {
				if s.Total == 0 {
					s.Min, s.Max = b.Price, b.Price
				}
				s.Total++
				switch {
				case b.Price < 10_000:
					s.Rank1++
				case b.Price < 1_000_000:
					s.Rank2++
				default:
					s.Rank3++
				}
				s.Min, s.Max, s.Sum, s.Last = min(s.Min, b.Price), max(s.Max, b.Price), s.Sum+b.Price, b.DateTime
				return s
			},
			MergeFn: func(a, b q17Stats) q17Stats {
				if a.Total == 0 {
					return b
				}
				if b.Total == 0 {
					return a
				}
				return q17Stats{a.Total + b.Total, a.Rank1 + b.Rank1, a.Rank2 + b.Rank2, a.Rank3 + b.Rank3,
					min(a.Min, b.Min), max(a.Max, b.Max), a.Sum + b.Sum, max(a.Last, b.Last)}
			},
			ResultFn: func(s q17Stats) q17Stats { return s },
		}, "q17"}, weir.Name("q17-agg"))
	return weir.Map(stats, func(c weir.Change[weir.KeyValue[q17Key, q17Stats]]) weir.Change[Q17Row] {
		return weir.Change[Q17Row]{Kind: c.Kind, Value: Q17Row{c.Value.Key.Auction, c.Value.Key.Day, c.Value.Value}}
	}, weir.Name("q17-rows"))
}

// AppendJSON implements Row.
func (r *Q17Row) AppendJSON(dst []byte) []byte {
	s := &r.Stats
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = append(dst, `,"day":"`...)
	dst = time.UnixMilli(r.Day*msPerDay).UTC().AppendFormat(dst, "2006-01-02")
	dst = appendIntField(dst, `","total_bids":`, s.Total)
	dst = appendIntField(dst, `,"rank1_bids":`, s.Rank1)
	dst = appendIntField(dst, `,"rank2_bids":`, s.Rank2)
	dst = appendIntField(dst, `,"rank3_bids":`, s.Rank3)
	dst = appendIntField(dst, `,"min_price":`, s.Min)
	dst = appendIntField(dst, `,"max_price":`, s.Max)
	var avg int64
	if s.Total > 0 {
		avg = s.Sum / s.Total
	}
	dst = appendIntField(dst, `,"avg_price":`, avg)
	dst = appendIntField(dst, `,"sum_price":`, s.Sum)
	return append(dst, '}')
}

// AppendKey implements Keyed: auction and day.
func (r *Q17Row) AppendKey(dst []byte) []byte {
	return appendKeyInt(appendKeyInt(dst, r.Auction), r.Day)
}

// Ready implements Row: the time of the bid that made the change.
func (r *Q17Row) Ready() int64 { return r.Stats.Last }

func init() {
	register(&Query{Name: "q17", Columns: []string{"auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
		"min_price", "max_price", "avg_price", "sum_price"}, Key: []string{"auction", "day"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q17(ev), out) }})
}
