package batchref

import (
	"sort"
	"strconv"
	"time"
)

// sideInputRows is the size of q13's side input as the Nexmark suite
// generates it (SideInputGenerator --num 10000): key i, value "i".
const sideInputRows = 10000

// q12: the total number of bids of each bidder. The query counts bids per
// bidder in 10 s processing-time windows, which depend on when the bids
// were processed; the sum over a bidder's windows is every bid of the
// bidder, whatever the clock did.
func q12(events []event) []row {
	counts := map[int64]int64{}
	for _, e := range bids(events) {
		counts[e.bid.Bidder]++
	}
	var out []row
	for bidder, n := range counts {
		out = append(out, row{"bidder": bidder, "bid_count": n})
	}
	return out
}

// q13: every bid joined to the generated side input on
// MOD(auction, 10000) = key (Java's remainder keeps the dividend's sign;
// the side input has keys 0..9999 once each).
func q13(events []event) []row {
	var out []row
	for _, e := range bids(events) {
		b := e.bid
		k := b.Auction % sideInputRows
		if k < 0 || k >= sideInputRows {
			continue
		}
		out = append(out, row{"auction": b.Auction, "bidder": b.Bidder, "price": b.Price, "datetime": b.DateTime,
			"value": strconv.FormatInt(k, 10)})
	}
	return out
}

// band is the price band of the FILTER clauses of q15 and q16.
func band(price int64) int {
	if price < 10000 {
		return 1
	}
	if price < 1000000 {
		return 2
	}
	return 3
}

// groupStats are COUNT(*) and COUNT(DISTINCT bidder/auction), overall and
// FILTERed per band, of one group of bids, and MAX(HH:mm).
type groupStats struct {
	bids     [4]int64
	bidders  [4]map[int64]bool
	auctions [4]map[int64]bool
	minute   string
}

func (g *groupStats) add(b *Bid) {
	for _, i := range []int{0, band(b.Price)} {
		g.bids[i]++
		if g.bidders[i] == nil {
			g.bidders[i], g.auctions[i] = map[int64]bool{}, map[int64]bool{}
		}
		g.bidders[i][b.Bidder] = true
		g.auctions[i][b.Auction] = true
	}
	if m := time.UnixMilli(b.DateTime).UTC().Format("15:04"); m > g.minute {
		g.minute = m
	}
}

func (g *groupStats) put(r row) row {
	names := []string{"total", "rank1", "rank2", "rank3"}
	for i, n := range names {
		r[n+"_bids"] = g.bids[i]
		r[n+"_bidders"] = int64(len(g.bidders[i]))
		r[n+"_auctions"] = int64(len(g.auctions[i]))
	}
	return r
}

func day(t int64) string { return time.UnixMilli(t).UTC().Format("2006-01-02") }

// q15: per UTC day, the bids and distinct bidders and auctions, overall
// and per price band. Final upsert view: one row per day.
func q15(events []event) []row {
	groups := map[string]*groupStats{}
	for _, e := range bids(events) {
		d := day(e.bid.DateTime)
		if groups[d] == nil {
			groups[d] = &groupStats{}
		}
		groups[d].add(e.bid)
	}
	var out []row
	for d, g := range groups {
		out = append(out, g.put(row{"day": d}))
	}
	return out
}

// q16: q15 per channel and UTC day, with the latest HH:mm of the group's
// bids. Final upsert view: one row per (channel, day).
func q16(events []event) []row {
	type key struct{ channel, day string }
	groups := map[key]*groupStats{}
	for _, e := range bids(events) {
		k := key{e.bid.Channel, day(e.bid.DateTime)}
		if groups[k] == nil {
			groups[k] = &groupStats{}
		}
		groups[k].add(e.bid)
	}
	var out []row
	for k, g := range groups {
		out = append(out, g.put(row{"channel": k.channel, "day": k.day, "minute": g.minute}))
	}
	return out
}

func bidRow(b *Bid) row {
	return row{"auction": b.Auction, "bidder": b.Bidder, "price": b.Price, "channel": b.Channel, "url": b.URL,
		"datetime": b.DateTime, "extra": b.Extra}
}

// q18: per (bidder, auction) the bid with the latest dateTime. ROW_NUMBER()
// leaves a tie unspecified; this oracle, as Flink's deduplication keeping
// the last row (a row replaces the kept one when its rowtime is >=), takes
// the last of the tied bids in input order. Final upsert view.
func q18(events []event) []row {
	type key struct{ bidder, auction int64 }
	last := map[key]*Bid{}
	for _, e := range bids(events) {
		b := e.bid
		k := key{b.Bidder, b.Auction}
		if cur := last[k]; cur == nil || b.DateTime >= cur.DateTime {
			last[k] = b
		}
	}
	var out []row
	for _, b := range last {
		out = append(out, bidRow(b))
	}
	return out
}

// q19: per auction its 10 highest-priced bids with rank_number 1..10.
// ROW_NUMBER() leaves a price tie unspecified; this oracle, like weir,
// ranks the earlier dateTime first, then the smaller bidder, channel,
// url, extra. Final upsert view: one row per (auction, rank_number).
func q19(events []event) []row {
	byAuction := map[int64][]*Bid{}
	for _, e := range bids(events) {
		byAuction[e.bid.Auction] = append(byAuction[e.bid.Auction], e.bid)
	}
	var out []row
	for _, bs := range byAuction {
		sort.SliceStable(bs, func(i, j int) bool {
			x, y := bs[i], bs[j]
			switch {
			case x.Price != y.Price:
				return x.Price > y.Price
			case x.DateTime != y.DateTime:
				return x.DateTime < y.DateTime
			case x.Bidder != y.Bidder:
				return x.Bidder < y.Bidder
			case x.Channel != y.Channel:
				return x.Channel < y.Channel
			case x.URL != y.URL:
				return x.URL < y.URL
			}
			return x.Extra < y.Extra
		})
		for i, b := range bs[:min(len(bs), 10)] {
			r := bidRow(b)
			r["rank_number"] = int64(i + 1)
			out = append(out, r)
		}
	}
	return out
}
