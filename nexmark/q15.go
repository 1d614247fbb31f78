package nexmark

import (
	"time"

	"github.com/weirstream/weir"
)

// BidStats are the columns that q15 and q16 compute per group of bids:
// the number of bids, of distinct bidders and of distinct auctions, in
// total (index 0) and per price band (1: price < 10,000; 2: 10,000 ≤ price
// < 1,000,000; 3: price ≥ 1,000,000), as COUNT(*) and COUNT(DISTINCT …)
// with FILTER clauses. MaxMinute, for q16, is the latest minute of the day
// (0–1439) of the group's bids; Last, the date_time of the bid that made
// the change, is not an output column.
type BidStats struct {
	Bids, Bidders, Auctions [4]int64
	MaxMinute               int64
	Last                    int64
}

// priceBand is the FILTER band of a price: 1, 2 or 3.
func priceBand(price int64) int {
	switch {
	case price < 10_000:
		return 1
	case price < 1_000_000:
		return 2
	}
	return 3
}

// bidStats is the keyed Process of q15 and q16, an updating GROUP BY with
// distinct counts (Flink's GroupAggFunction with a MapView per distinct
// aggregate): per group, the counts in value state and, per distinct
// column, a map state from the bidder (auction) to the bands it has been
// seen in (a bit per band), so a bid costs one map lookup per distinct
// column and a write only when it adds a band. Every bid changes the
// total, so each bid is a −U/+U of its group (+I for the first).
type bidStats[K comparable] struct {
	stats    *weir.ValueState[K, BidStats]
	bidders  *weir.MapState[K, int64, uint8]
	auctions *weir.MapState[K, int64, uint8]
}

func (f *bidStats[K]) Open(rc *weir.RuntimeContext[K]) error {
	f.stats = weir.NewValueState[BidStats](rc, "stats")
	f.bidders = weir.NewMapState[int64, uint8](rc, "bidders")
	f.auctions = weir.NewMapState[int64, uint8](rc, "auctions")
	return nil
}

func (f *bidStats[K]) ProcessElement(ctx *weir.KeyedContext[K, weir.Change[weir.KeyValue[K, BidStats]]], b Bid) error {
	old, ok := f.stats.Value()
	s := old
	band := priceBand(b.Price)
	s.Bids[0]++
	s.Bids[band]++
	distinct(f.bidders, b.Bidder, band, &s.Bidders)
	distinct(f.auctions, b.Auction, band, &s.Auctions)
	s.MaxMinute = max(s.MaxMinute, floorMod(b.DateTime, msPerDay)/60_000)
	s.Last = b.DateTime
	f.stats.Update(s)
	key := ctx.Key()
	if !ok {
		ctx.Emit(weir.Change[weir.KeyValue[K, BidStats]]{Kind: weir.Insert, Value: weir.KeyValue[K, BidStats]{Key: key, Value: s}})
		return nil
	}
	ctx.Emit(weir.Change[weir.KeyValue[K, BidStats]]{Kind: weir.UpdateBefore, Value: weir.KeyValue[K, BidStats]{Key: key, Value: old}})
	ctx.Emit(weir.Change[weir.KeyValue[K, BidStats]]{Kind: weir.UpdateAfter, Value: weir.KeyValue[K, BidStats]{Key: key, Value: s}})
	return nil
}

// distinct counts v in counts[0] the first time the group sees it and in
// counts[band] the first time in that band.
func distinct[K comparable](seen *weir.MapState[K, int64, uint8], v int64, band int, counts *[4]int64) {
	bands, ok := seen.Get(v)
	if !ok {
		counts[0]++
	}
	if bands&(1<<band) == 0 {
		counts[band]++
		seen.Put(v, bands|1<<band)
	}
}

// groupBidStats keys the bids by key and computes their BidStats.
func groupBidStats[K comparable](bids *weir.Stream[Bid], key func(Bid) K, name string) *weir.Stream[weir.Change[weir.KeyValue[K, BidStats]]] {
	return weir.ProcessWith(weir.KeyBy(bids, key),
		func() weir.KeyedProcessFunction[K, Bid, weir.Change[weir.KeyValue[K, BidStats]]] {
			return &bidStats[K]{}
		},
		weir.Name(name))
}

// appendBidStats appends the twelve count columns.
func appendBidStats(dst []byte, s *BidStats) []byte {
	dst = appendIntField(dst, `,"total_bids":`, s.Bids[0])
	dst = appendIntField(dst, `,"rank1_bids":`, s.Bids[1])
	dst = appendIntField(dst, `,"rank2_bids":`, s.Bids[2])
	dst = appendIntField(dst, `,"rank3_bids":`, s.Bids[3])
	dst = appendIntField(dst, `,"total_bidders":`, s.Bidders[0])
	dst = appendIntField(dst, `,"rank1_bidders":`, s.Bidders[1])
	dst = appendIntField(dst, `,"rank2_bidders":`, s.Bidders[2])
	dst = appendIntField(dst, `,"rank3_bidders":`, s.Bidders[3])
	dst = appendIntField(dst, `,"total_auctions":`, s.Auctions[0])
	dst = appendIntField(dst, `,"rank1_auctions":`, s.Auctions[1])
	dst = appendIntField(dst, `,"rank2_auctions":`, s.Auctions[2])
	dst = appendIntField(dst, `,"rank3_auctions":`, s.Auctions[3])
	return dst
}

var bidStatsColumns = []string{"total_bids", "rank1_bids", "rank2_bids", "rank3_bids",
	"total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders",
	"total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"}

func appendDay(dst []byte, day int64) []byte {
	return time.UnixMilli(day*msPerDay).UTC().AppendFormat(dst, "2006-01-02")
}

// Q15Row is a row of query 15: day (yyyy-MM-dd), then BidStats' twelve
// counts: total_bids, rank1_bids, rank2_bids, rank3_bids, total_bidders,
// rank1_bidders, …, rank3_auctions.
type Q15Row struct {
	Day   int64 // days since 1970-01-01 (UTC)
	Stats BidStats
}

// Q15 is query 15, bidding statistics report (ref queries/q15.sql): per
// UTC day (DATE_FORMAT(dateTime, 'yyyy-MM-dd')) the number of bids and of
// distinct bidders and auctions, in total and per price band — a GROUP BY
// without windows, so an updating result whose upsert view, keyed by day,
// is the query's answer. One group per day: at the suite's event rates
// the whole input is one key, on one subtask (Flink's plan, without its
// optional split-distinct rewrite, has the same single hot key).
func Q15(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q15Row]] {
	stats := groupBidStats(Bids(events), func(b Bid) int64 { return floorDiv(b.DateTime, msPerDay) }, "q15-agg")
	return weir.Map(stats, func(c weir.Change[weir.KeyValue[int64, BidStats]]) weir.Change[Q15Row] {
		return weir.Change[Q15Row]{Kind: c.Kind, Value: Q15Row{c.Value.Key, c.Value.Value}}
	}, weir.Name("q15-rows"))
}

// AppendJSON implements Row.
func (r *Q15Row) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"day":"`...)
	dst = append(appendDay(dst, r.Day), '"')
	return append(appendBidStats(dst, &r.Stats), '}')
}

// AppendKey implements Keyed: the day.
func (r *Q15Row) AppendKey(dst []byte) []byte { return appendKeyInt(dst, r.Day) }

// Ready implements Row: the time of the bid that made the change.
func (r *Q15Row) Ready() int64 { return r.Stats.Last }

// Q16Row is a row of query 16: channel, day (yyyy-MM-dd), minute (HH:mm,
// the latest of the group's bids), then BidStats' twelve counts.
type Q16Row struct {
	Channel string
	Day     int64
	Stats   BidStats
}

type q16Key struct {
	Channel string
	Day     int64
}

// Q16 is query 16, channel statistics report (ref queries/q16.sql): q15's
// statistics per channel and UTC day, with the latest HH:mm of the group's
// bids (MAX(DATE_FORMAT(dateTime, 'HH:mm'))) — an updating result whose
// upsert view, keyed by (channel, day), is the query's answer.
func Q16(events *weir.Stream[Event]) *weir.Stream[weir.Change[Q16Row]] {
	stats := groupBidStats(Bids(events), func(b Bid) q16Key { return q16Key{b.Channel, floorDiv(b.DateTime, msPerDay)} }, "q16-agg")
	return weir.Map(stats, func(c weir.Change[weir.KeyValue[q16Key, BidStats]]) weir.Change[Q16Row] {
		return weir.Change[Q16Row]{Kind: c.Kind, Value: Q16Row{c.Value.Key.Channel, c.Value.Key.Day, c.Value.Value}}
	}, weir.Name("q16-rows"))
}

// AppendJSON implements Row.
func (r *Q16Row) AppendJSON(dst []byte) []byte {
	dst = appendStringField(dst, `{"channel":`, r.Channel)
	dst = append(dst, `,"day":"`...)
	dst = appendDay(dst, r.Day)
	m := r.Stats.MaxMinute
	dst = append(dst, `","minute":"`...)
	dst = append(dst, byte('0'+m/600), byte('0'+m/60%10), ':', byte('0'+m%60/10), byte('0'+m%10), '"')
	return append(appendBidStats(dst, &r.Stats), '}')
}

// AppendKey implements Keyed: channel and day.
func (r *Q16Row) AppendKey(dst []byte) []byte {
	return append(appendKeyInt(dst, r.Day), r.Channel...)
}

// Ready implements Row: the time of the bid that made the change.
func (r *Q16Row) Ready() int64 { return r.Stats.Last }

func init() {
	register(&Query{Name: "q15", Columns: append([]string{"day"}, bidStatsColumns...), Key: []string{"day"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q15(ev), out) }})
	register(&Query{Name: "q16", Columns: append([]string{"channel", "day", "minute"}, bidStatsColumns...), Key: []string{"channel", "day"},
		Build: func(ev *weir.Stream[Event], out Output) { EmitChanges(Q16(ev), out) }})
}
