package batchref

import (
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strings"
	"time"
)

// row is one result row; values are int64, string or json.Number.
type row map[string]any

type query struct {
	columns []string
	eval    func(events []event) []row
}

var queries = map[string]query{
	"q0":  {[]string{"auction", "bidder", "price", "datetime", "extra"}, q0},
	"q1":  {[]string{"auction", "bidder", "price", "datetime", "extra"}, q1},
	"q2":  {[]string{"auction", "price"}, q2},
	"q3":  {[]string{"name", "city", "state", "id"}, q3},
	"q4":  {[]string{"id", "final"}, q4},
	"q5":  {[]string{"auction", "num"}, q5},
	"q7":  {[]string{"auction", "price", "bidder", "datetime", "extra"}, q7},
	"q8":  {[]string{"id", "name", "stime"}, q8},
	"q9":  {[]string{"id", "itemname", "description", "initialbid", "reserve", "datetime", "expires", "seller", "category", "extra", "auction", "bidder", "price", "bid_datetime", "bid_extra"}, q9},
	"q10": {[]string{"auction", "bidder", "price", "datetime", "extra", "dt", "hm"}, q10},
	"q11": {[]string{"bidder", "bid_count", "starttime", "endtime"}, q11},
	"q12": {[]string{"bidder", "bid_count"}, q12}, // per-bidder totals: see q12
	"q13": {[]string{"auction", "bidder", "price", "datetime", "value"}, q13},
	"q14": {[]string{"auction", "bidder", "price", "bidtimetype", "datetime", "extra", "c_counts"}, q14},
	"q15": {[]string{"day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders", "total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"}, q15},
	"q16": {[]string{"channel", "day", "minute", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "total_bidders", "rank1_bidders", "rank2_bidders", "rank3_bidders", "total_auctions", "rank1_auctions", "rank2_auctions", "rank3_auctions"}, q16},
	"q17": {[]string{"auction", "day", "total_bids", "rank1_bids", "rank2_bids", "rank3_bids", "min_price", "max_price", "avg_price", "sum_price"}, q17},
	"q18": {[]string{"auction", "bidder", "price", "channel", "url", "datetime", "extra"}, q18},
	"q19": {[]string{"auction", "bidder", "price", "channel", "url", "datetime", "extra", "rank_number"}, q19},
	"q20": {[]string{"auction", "bidder", "price", "channel", "url", "bid_datetime", "bid_extra", "itemname", "description", "initialbid", "reserve", "auction_datetime", "expires", "seller", "category", "auction_extra"}, q20},
}

// Queries returns the names of the queries Evaluate supports ("q0", "q1", ...),
// in numeric order.
func Queries() []string {
	var names []string
	for name := range queries {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		var a, b int
		fmt.Sscanf(names[i], "q%d", &a)
		fmt.Sscanf(names[j], "q%d", &b)
		return a < b
	})
	return names
}

// Columns returns the output column names of a query (the Flink sink columns,
// lowercased), in SQL order, or nil for an unknown query.
func Columns(name string) []string {
	q, ok := queries[name]
	if !ok {
		return nil
	}
	return append([]string(nil), q.columns...)
}

// Evaluate reads the whole JSON-lines event file and returns the final result
// rows of the named query, each a canonical JSON object (see the package
// documentation). The rows are a multiset; they are returned sorted as strings.
func Evaluate(name string, events io.Reader) ([]string, error) {
	all, err := EvaluateAll([]string{name}, events)
	if err != nil {
		return nil, err
	}
	return all[name], nil
}

// EvaluateAll is Evaluate for several queries over one input, decoded once.
// The result maps each query name to its rows.
func EvaluateAll(names []string, events io.Reader) (map[string][]string, error) {
	for _, name := range names {
		if _, ok := queries[name]; !ok {
			return nil, fmt.Errorf("batchref: unknown query %q", name)
		}
	}
	evs, err := decodeEvents(events)
	if err != nil {
		return nil, err
	}
	all := map[string][]string{}
	for _, name := range names {
		rows, err := render(name, queries[name], evs)
		if err != nil {
			return nil, err
		}
		all[name] = rows
	}
	return all, nil
}

// render evaluates one query and writes its rows as canonical JSON, checking
// that every row has exactly the query's columns.
func render(name string, q query, evs []event) ([]string, error) {
	out := []string{}
	for _, r := range q.eval(evs) {
		if len(r) != len(q.columns) {
			return nil, fmt.Errorf("batchref: %s: internal error: row %v does not have columns %v", name, r, q.columns)
		}
		for _, c := range q.columns {
			if _, ok := r[c]; !ok {
				return nil, fmt.Errorf("batchref: %s: internal error: row %v lacks column %q", name, r, c)
			}
		}
		b, err := json.Marshal(map[string]any(r))
		if err != nil {
			return nil, fmt.Errorf("batchref: %s: %w", name, err)
		}
		out = append(out, string(b))
	}
	sort.Strings(out)
	return out, nil
}

// q0: pass every bid through unchanged.
func q0(events []event) []row {
	var out []row
	for _, e := range bids(events) {
		b := e.bid
		out = append(out, row{"auction": b.Auction, "bidder": b.Bidder, "price": b.Price, "datetime": b.DateTime, "extra": b.Extra})
	}
	return out
}

// q1: every bid, with the price converted to euros: 0.908 * price as
// DECIMAL(23, 3).
func q1(events []event) []row {
	var out []row
	for _, e := range bids(events) {
		b := e.bid
		out = append(out, row{"auction": b.Auction, "bidder": b.Bidder, "price": euros(b.Price), "datetime": b.DateTime, "extra": b.Extra})
	}
	return out
}

// euros is 0.908 * price, exactly, as a JSON number with three decimals.
func euros(price int64) json.Number {
	milli := new(big.Int).Mul(big.NewInt(price), big.NewInt(908)) // thousandths
	sign := ""
	if milli.Sign() < 0 {
		sign = "-"
		milli.Neg(milli)
	}
	whole, frac := new(big.Int).QuoRem(milli, big.NewInt(1000), new(big.Int))
	return json.Number(fmt.Sprintf("%s%s.%03d", sign, whole.String(), frac.Int64()))
}

// q2: bids on every 123rd auction (MOD(auction, 123) = 0), auction and price.
func q2(events []event) []row {
	var out []row
	for _, e := range bids(events) {
		if e.bid.Auction%123 == 0 {
			out = append(out, row{"auction": e.bid.Auction, "price": e.bid.Price})
		}
	}
	return out
}

// q3: who sells in category 10 from OR, ID or CA: every (auction, person) pair
// with auction.seller = person.id, auction.category = 10 and person.state in
// {OR, ID, CA}; a regular inner join, so nothing is ever late.
func q3(events []event) []row {
	personsByID := map[int64][]event{}
	for _, p := range persons(events) {
		personsByID[p.person.ID] = append(personsByID[p.person.ID], p)
	}
	var out []row
	for _, a := range auctions(events) {
		if a.auction.Category != 10 {
			continue
		}
		for _, p := range personsByID[a.auction.Seller] {
			st := p.person.State
			if st == "OR" || st == "ID" || st == "CA" {
				out = append(out, row{"name": p.person.Name, "city": p.person.City, "state": p.person.State, "id": a.auction.ID})
			}
		}
	}
	return out
}

// bidsByAuction indexes the bids (in file order) by their auction id.
func bidsByAuction(events []event) map[int64][]event {
	m := map[int64][]event{}
	for _, b := range bids(events) {
		m[b.bid.Auction] = append(m[b.bid.Auction], b)
	}
	return m
}

// validBid reports whether b falls within the lifetime of a:
// b.auction = a.id AND b.dateTime BETWEEN a.dateTime AND a.expires (inclusive).
func validBid(a *Auction, b *Bid) bool {
	return b.Auction == a.ID && a.DateTime <= b.DateTime && b.DateTime <= a.Expires
}

// q4: per category, the average (BIGINT, truncating) of the winning price of
// its auctions, where the winning price of an auction is the MAX price of the
// bids within its lifetime; auctions with no such bid do not count.
func q4(events []event) []row {
	type auctionKey struct{ id, category int64 }
	final := map[auctionKey]int64{} // MAX(B.price) GROUP BY A.id, A.category
	byAuction := bidsByAuction(events)
	for _, a := range auctions(events) {
		for _, b := range byAuction[a.auction.ID] {
			if !validBid(a.auction, b.bid) {
				continue
			}
			k := auctionKey{a.auction.ID, a.auction.Category}
			if cur, ok := final[k]; !ok || b.bid.Price > cur {
				final[k] = b.bid.Price
			}
		}
	}
	sum, count := map[int64]int64{}, map[int64]int64{}
	for k, f := range final {
		sum[k.category] += f
		count[k.category]++
	}
	var out []row
	for cat := range sum {
		out = append(out, row{"id": cat, "final": sum[cat] / count[cat]})
	}
	return out
}

// q5: hot items. HOP windows of 10 s sliding by 2 s; count the bids per
// auction per window (a bid counts in a window only if not late for it); per
// window output every auction whose count equals the window's maximum.
func q5(events []event) []row {
	counts := map[window]map[int64]int64{}
	for _, e := range bids(events) {
		for _, w := range hopWindows(e.time, 10000, 2000) {
			if e.lateFor(w.end) {
				continue
			}
			if counts[w] == nil {
				counts[w] = map[int64]int64{}
			}
			counts[w][e.bid.Auction]++
		}
	}
	var out []row
	for _, perAuction := range counts {
		var maxn int64
		for _, n := range perAuction {
			maxn = max(maxn, n)
		}
		for auction, n := range perAuction {
			if n >= maxn {
				out = append(out, row{"auction": auction, "num": n})
			}
		}
	}
	return out
}

// q7: highest bid. B1 = MAX(price) per 10 s TUMBLE window over the bids not
// late for it. Output every bid (from the whole bid stream) whose price equals
// some window's max and whose dateTime lies in [window_end - 10 s, window_end],
// closed at both ends as the SQL's BETWEEN is.
func q7(events []event) []row {
	maxPrice := map[int64]int64{} // window end -> max price
	for _, e := range bids(events) {
		w := tumbleWindow(e.time, 10000)
		if e.lateFor(w.end) {
			continue
		}
		if cur, ok := maxPrice[w.end]; !ok || e.bid.Price > cur {
			maxPrice[w.end] = e.bid.Price
		}
	}
	var out []row
	for _, e := range bids(events) {
		b := e.bid
		// The windows whose [end-10s, end] contains t are those with
		// end in [t, t+10s]: the end of t's own window and, when t is
		// itself a window boundary, also end = t.
		for end := b.DateTime + floorMod(-b.DateTime, 10000); end <= b.DateTime+10000; end += 10000 {
			if m, ok := maxPrice[end]; ok && b.Price == m {
				out = append(out, row{"auction": b.Auction, "bidder": b.Bidder, "price": b.Price, "datetime": b.DateTime, "extra": b.Extra})
			}
		}
	}
	return out
}

// q8: new users. Persons grouped by (id, name, 10 s TUMBLE window) joined with
// auction sellers grouped by (seller, window) on id = seller and the same
// window: people who registered and created an auction in the same window.
// Events late for their window are dropped from the groupings.
func q8(events []event) []row {
	type personKey struct {
		id    int64
		name  string
		start int64
	}
	type sellerKey struct{ seller, start int64 }
	people := map[personKey]bool{}
	for _, e := range persons(events) {
		w := tumbleWindow(e.time, 10000)
		if !e.lateFor(w.end) {
			people[personKey{e.person.ID, e.person.Name, w.start}] = true
		}
	}
	sellers := map[sellerKey]bool{}
	for _, e := range auctions(events) {
		w := tumbleWindow(e.time, 10000)
		if !e.lateFor(w.end) {
			sellers[sellerKey{e.auction.Seller, w.start}] = true
		}
	}
	var out []row
	for p := range people {
		if sellers[sellerKey{p.id, p.start}] {
			out = append(out, row{"id": p.id, "name": p.name, "stime": p.start})
		}
	}
	return out
}

// q9: winning bids. For each auction id, among all (auction, bid) pairs with
// the bid within the auction's lifetime, the one with the highest price, then
// the earliest bid dateTime; an exact tie goes to the bid earlier in the file.
func q9(events []event) []row {
	type pair struct{ a, b event }
	better := func(x, y pair) bool { // x ranks before y
		if x.b.bid.Price != y.b.bid.Price {
			return x.b.bid.Price > y.b.bid.Price
		}
		if x.b.bid.DateTime != y.b.bid.DateTime {
			return x.b.bid.DateTime < y.b.bid.DateTime
		}
		if x.b.pos != y.b.pos {
			return x.b.pos < y.b.pos
		}
		return x.a.pos < y.a.pos
	}
	winner := map[int64]pair{}
	byAuction := bidsByAuction(events)
	for _, a := range auctions(events) {
		for _, b := range byAuction[a.auction.ID] {
			if !validBid(a.auction, b.bid) {
				continue
			}
			p := pair{a, b}
			if cur, ok := winner[a.auction.ID]; !ok || better(p, cur) {
				winner[a.auction.ID] = p
			}
		}
	}
	var out []row
	for _, p := range winner {
		a, b := p.a.auction, p.b.bid
		out = append(out, row{
			"id": a.ID, "itemname": a.ItemName, "description": a.Description,
			"initialbid": a.InitialBid, "reserve": a.Reserve, "datetime": a.DateTime,
			"expires": a.Expires, "seller": a.Seller, "category": a.Category, "extra": a.Extra,
			"auction": b.Auction, "bidder": b.Bidder, "price": b.Price,
			"bid_datetime": b.DateTime, "bid_extra": b.Extra,
		})
	}
	return out
}

// q10: every bid with its UTC date (yyyy-MM-dd) and hour:minute (HH:mm).
func q10(events []event) []row {
	var out []row
	for _, e := range bids(events) {
		b := e.bid
		t := time.UnixMilli(b.DateTime).UTC()
		out = append(out, row{
			"auction": b.Auction, "bidder": b.Bidder, "price": b.Price, "datetime": b.DateTime, "extra": b.Extra,
			"dt": t.Format("2006-01-02"), "hm": t.Format("15:04"),
		})
	}
	return out
}

// q11: user sessions. Per bidder, session windows with a 10 s gap, simulated
// in file order with the merging-window lateness rule of the package
// documentation; output the number of bids and the session's bounds.
func q11(events []event) []row {
	const gap = 10000
	type session struct {
		start, end, count int64
	}
	live := map[int64][]session{} // bidder -> sessions not fired yet
	var out []row
	fire := func(bidder int64, s session) {
		out = append(out, row{"bidder": bidder, "bid_count": s.count, "starttime": s.start, "endtime": s.end})
	}
	for _, e := range bids(events) {
		bidder := e.bid.Bidder
		// Fire the sessions of this bidder that the watermark has passed
		// (those of other bidders are fired when next touched or at the end;
		// only a key's own sessions can interact with its events).
		var still []session
		for _, s := range live[bidder] {
			if e.lateFor(s.end) {
				fire(bidder, s)
			} else {
				still = append(still, s)
			}
		}
		// Merge the event's window [t, t+gap) with every live session it
		// intersects or touches.
		merged := session{start: e.time, end: e.time + gap, count: 1}
		// Live sessions never touch each other, so one pass finds them all.
		var rest []session
		for _, s := range still {
			if merged.start <= s.end && merged.end >= s.start {
				merged = session{min(merged.start, s.start), max(merged.end, s.end), merged.count + s.count}
			} else {
				rest = append(rest, s)
			}
		}
		if e.lateFor(merged.end) {
			// Only possible when nothing merged: drop the bid.
			live[bidder] = still
			continue
		}
		live[bidder] = append(rest, merged)
	}
	for bidder, ss := range live {
		for _, s := range ss {
			fire(bidder, s)
		}
	}
	return out
}

// q14: bids whose euro price 0.908 * price lies strictly between 1 000 000
// and 50 000 000, with the euro price, a UTC hour-of-day classification and
// the number of 'c' bytes in extra (the count_char UDF counts bytes of the
// UTF-8 encoding).
func q14(events []event) []row {
	var out []row
	for _, e := range bids(events) {
		b := e.bid
		milli := new(big.Int).Mul(big.NewInt(b.Price), big.NewInt(908)) // euro thousandths
		if milli.Cmp(big.NewInt(1_000_000_000)) <= 0 || milli.Cmp(big.NewInt(50_000_000_000)) >= 0 {
			continue
		}
		hour := time.UnixMilli(b.DateTime).UTC().Hour()
		timeType := "otherTime"
		switch {
		case hour >= 8 && hour <= 18:
			timeType = "dayTime"
		case hour <= 6 || hour >= 20:
			timeType = "nightTime"
		}
		out = append(out, row{
			"auction": b.Auction, "bidder": b.Bidder, "price": euros(b.Price), "bidtimetype": timeType,
			"datetime": b.DateTime, "extra": b.Extra, "c_counts": int64(strings.Count(b.Extra, "c")),
		})
	}
	return out
}

// q17: per (auction, UTC day yyyy-MM-dd): the number of bids, the numbers in
// the three price bands (< 10 000, [10 000, 1 000 000), >= 1 000 000), and the
// min, max, average (BIGINT, truncating) and sum of the prices. Final upsert
// view: one row per (auction, day).
func q17(events []event) []row {
	type key struct {
		auction int64
		day     string
	}
	type stats struct{ total, r1, r2, r3, minP, maxP, sum int64 }
	groups := map[key]*stats{}
	for _, e := range bids(events) {
		b := e.bid
		k := key{b.Auction, time.UnixMilli(b.DateTime).UTC().Format("2006-01-02")}
		st := groups[k]
		if st == nil {
			st = &stats{minP: b.Price, maxP: b.Price}
			groups[k] = st
		}
		st.total++
		switch {
		case b.Price < 10000:
			st.r1++
		case b.Price < 1000000:
			st.r2++
		default:
			st.r3++
		}
		st.minP, st.maxP = min(st.minP, b.Price), max(st.maxP, b.Price)
		st.sum += b.Price
	}
	var out []row
	for k, st := range groups {
		out = append(out, row{
			"auction": k.auction, "day": k.day, "total_bids": st.total,
			"rank1_bids": st.r1, "rank2_bids": st.r2, "rank3_bids": st.r3,
			"min_price": st.minP, "max_price": st.maxP, "avg_price": st.sum / st.total, "sum_price": st.sum,
		})
	}
	return out
}

// q20: every (bid, auction) pair with bid.auction = auction.id and
// auction.category = 10 (a regular inner join, in either arrival order).
func q20(events []event) []row {
	auctionsByID := map[int64][]event{}
	for _, a := range auctions(events) {
		auctionsByID[a.auction.ID] = append(auctionsByID[a.auction.ID], a)
	}
	var out []row
	for _, be := range bids(events) {
		for _, ae := range auctionsByID[be.bid.Auction] {
			b, a := be.bid, ae.auction
			if a.Category != 10 {
				continue
			}
			out = append(out, row{
				"auction": b.Auction, "bidder": b.Bidder, "price": b.Price, "channel": b.Channel, "url": b.URL,
				"bid_datetime": b.DateTime, "bid_extra": b.Extra,
				"itemname": a.ItemName, "description": a.Description, "initialbid": a.InitialBid, "reserve": a.Reserve,
				"auction_datetime": a.DateTime, "expires": a.Expires, "seller": a.Seller, "category": a.Category,
				"auction_extra": a.Extra,
			})
		}
	}
	return out
}
