// Package batchref is an independent batch evaluator ("oracle") for the
// Nexmark queries. It reads a bounded JSON-lines file of Nexmark events and
// computes the final result rows of each query as Flink SQL would produce them
// over that bounded input (nexmark/nexmark, nexmark-flink/src/main/resources/
// queries/q*.sql), including the event-time lateness rules that change
// results. It deliberately imports neither weir nor package nexmark: it decodes
// the event file itself, and every query is a short, plain function over
// slices, maps and sorts. It is written for clarity, not speed.
//
// # Input
//
// One JSON object per line (blank lines and any whitespace between objects are
// accepted), in file order = arrival order of a single source:
//
//	{"event_type":0,"person":{"id","name","email_address","credit_card","city","state","date_time","extra"}}
//	{"event_type":1,"auction":{"id","item_name","description","initial_bid","reserve","date_time","expires","seller","category","extra"}}
//	{"event_type":2,"bid":{"auction","bidder","price","channel","url","date_time","extra"}}
//
// Ids, prices, category, reserve, initial_bid, date_time and expires are JSON
// integers (epoch milliseconds for times); a non-integer there is an error, as
// is an event_type other than 0, 1, 2 or a missing payload for it.
//
// # Output
//
// [Evaluate] (or [EvaluateAll], which decodes the input once for several
// queries) returns the query's final rows as canonical JSON objects: exactly
// what encoding/json produces for a map[string]any (keys sorted, default HTML
// escaping of strings). Integers are JSON integers; every timestamp column
// (datetime, expires, bid_datetime, auction_datetime, stime, starttime,
// endtime) is an integer in epoch milliseconds. The decimal column, price in
// q1 and q14 (Flink DECIMAL(23,3)), is written as a JSON number literal with
// exactly three fraction digits, e.g. 908.000 or 123.456: it is emitted via
// json.Number, so the text keeps the trailing zeros; a consumer decoding with
// UseNumber should compare it numerically. Rows form a multiset: order carries
// no meaning (Evaluate returns them sorted as strings, for stable diffs only).
//
// Column names are the Flink sink-table column names lowercased (dateTime ->
// datetime, itemName -> itemname, bid_dateTime -> bid_datetime); [Columns]
// lists them per query.
//
// # Watermark and the lateness rule
//
// All three event kinds come from one source table whose watermark is
// `dateTime - INTERVAL '4' SECOND`, so persons, auctions and bids all advance
// the same watermark. The model is: the watermark in force when event i
// arrives is W(i) = max(date_time of events 0..i-1) - 4000, and -infinity for
// the first event (so the first event is never late). The watermark is
// monotone by construction. (Whether event i's own time is included makes no
// difference below: every window an event is assigned to ends after the
// event's own time, so its own time can never make it late.)
//
// A window [start, end) has fired once the watermark reaches its last
// timestamp end-1 (Flink: isWindowFired / window.maxTimestamp() <= watermark,
// allowed lateness 0). Hence, precisely:
//
//	event i is late for window [start, end)  iff  end - 1 <= W(i)
//
// Late means the event is not counted in that window; an event is judged
// separately for each window it belongs to (a hopping-window event can be late
// for its older windows but still count in its newer ones, which is what
// Flink's slice-sharing hop operator does). At end of input every remaining
// window fires. Window assignment uses offset 0 and floor division:
// tumble start = t - (t mod size); hop windows are those with start a multiple
// of the slide and start <= t < start+size.
//
// Session windows (q11, gap 10 s, per bidder) are merging windows; the rule is
// Flink's MergingWindowProcessFunction: the event's own window is
// [t, t+gap); it merges with every live (not yet fired) session of the same
// key that it intersects, where intersecting includes touching
// (a.start <= b.end && a.end >= b.start), so bids exactly 10 000 ms apart
// merge and 10 001 ms apart do not. Only after merging is lateness checked, on
// the merged window: late iff mergedEnd-1 <= W(i). Since every live session
// has end-1 > W(i), an event that merges with a live session is never late;
// an event that merges with nothing is dropped iff t+gap-1 <= W(i). A session
// fires (leaves the live set and becomes an output row) as soon as its
// end-1 <= W, i.e. before the next event is processed; a later event that falls
// inside a fired session's time range therefore starts a new, separate session
// (if not itself late) instead of reopening the old one. At end of input all
// live sessions fire.
//
// Regular (non-windowed) joins and aggregations — q3, q4, q9, q13, q15–q19, and the
// "outer" joins of q5, q7 and q8 whose inputs are window aggregates — drop
// nothing: their final result is the plain relational result over all rows
// they receive.
//
// # Queries
//
// q0  SELECT auction, bidder, price, dateTime, extra FROM bid.
// Columns: auction, bidder, price, datetime, extra.
//
// q1  The same with price := 0.908 * price as DECIMAL(23,3) (the exact product
// of an integer and 0.908 has at most three decimals, so there is no rounding).
// Columns: auction, bidder, price, datetime, extra.
//
// q2  Bids with MOD(auction, 123) = 0. Columns: auction, price.
//
// q3  Auctions of category 10 inner-joined with persons on seller = person.id,
// persons restricted to state OR, ID or CA. Every matching (person, auction)
// pair is a row. Columns: name, city, state, id (the auction id).
//
// q4  Per auction (A.id, A.category): MAX(B.price) over bids with
// B.auction = A.id and A.dateTime <= B.dateTime <= A.expires (BETWEEN is
// inclusive at both ends); auctions without such a bid give no row. Then per
// category: AVG of those maxima, BIGINT average = sum / count truncated toward
// zero (Java long division). Final upsert view: one row per category.
// Columns: id (the category), final.
//
// q5  HOP windows size 10 s, slide 2 s, over bids: count(*) per (auction,
// window) counting only bids not late for that window; per window keep every
// auction whose count >= the window's maximum count (all ties). Windows whose
// every bid was late produce nothing. Columns: auction, num.
//
// q7  B1 = per 10 s TUMBLE window the MAX(price) over bids not late for it,
// with window_end. Then a *regular* join (window_end is not a time attribute
// after window aggregation, so this is not an interval join) of all bids B
// with B1 on B.price = B1.maxprice AND B.dateTime BETWEEN window_end - 10 s AND
// window_end. Faithful consequences, both deliberate: (a) the range is closed
// at both ends, so a bid whose dateTime is exactly a window end E also matches
// the window [E-10s, E) if its price equals that window's max (it can then be
// output twice, once per window); (b) the B side is the whole bid stream, so a
// bid that was late for its window (and so did not contribute to the max) is
// still output if its price equals the max. Columns: auction, price, bidder,
// datetime, extra (the order the Nexmark issue's contract lists), each with
// the bid's own value: no positional mix-up of price and bidder between a
// SELECT and its sink is reproduced.
//
// q8  P = DISTINCT (id, name, window) over persons in 10 s TUMBLE windows,
// A = DISTINCT (seller, window) over auctions in 10 s TUMBLE windows, each
// dropping events late for their window; join on id = seller and equal window.
// One row per (person id, name, window). Columns: id, name, stime (the window
// start).
//
// q9  For each auction id, over all pairs (A, B) with B.auction = A.id and
// A.dateTime <= B.dateTime <= A.expires, the pair ranked first by
// B.price DESC, B.dateTime ASC (ROW_NUMBER() ... rownum <= 1). Flink leaves a
// tie on both keys unspecified; this oracle breaks it by the bid's position in
// the file (earlier wins), then the auction row's position. Auctions without a
// qualifying bid give no row. Columns: id, itemname, description, initialbid,
// reserve, datetime, expires, seller, category, extra, auction, bidder, price,
// bid_datetime, bid_extra.
//
// q10 All bids with dt = DATE_FORMAT(dateTime, 'yyyy-MM-dd') and
// hm = DATE_FORMAT(dateTime, 'HH:mm'), formatted in UTC (the TIMESTAMP(3)
// values are epoch-millisecond based, no time zone shift). Columns: auction,
// bidder, price, datetime, extra, dt, hm.
//
// q11 Session windows per bidder, gap 10 s (rule above). Columns: bidder,
// bid_count, starttime (first bid time of the session), endtime (last bid time
// + 10 000).
//
// q12 Bids per bidder in 10 s TUMBLE windows of processing time
// (PROCTIME()). The windows depend on when the bids were processed, so this
// oracle gives what does not: per bidder, the sum of bid_count over its
// windows, which is its number of bids. Columns: bidder, bid_count (the
// query's starttime and endtime are left out).
//
// q13 Every bid inner-joined to the side input on MOD(auction, 10000) = key
// (Java's remainder: a negative auction gives a negative key, which no row
// has). The side input is the one the Nexmark suite generates
// (SideInputGenerator --num 10000): keys 0..9999, once each, the value the
// key in decimal; Flink's lookup join sees the whole table, so no bid is
// early. Columns: auction, bidder, price, datetime, value.
//
// q14 Bids with 1 000 000 < 0.908 * price < 50 000 000 (exact decimal
// comparison), with price := 0.908 * price (DECIMAL(23,3), as in q1),
// bidtimetype by the UTC hour of dateTime ('dayTime' for 8..18, 'nightTime'
// for <= 6 or >= 20, else 'otherTime') and c_counts = number of bytes 'c' in
// the UTF-8 extra (the count_char UDF). Columns: auction, bidder, price,
// bidtimetype, datetime, extra, c_counts.
//
// q15 Per UTC day (yyyy-MM-dd) of the bids: COUNT(*), COUNT(DISTINCT
// bidder) and COUNT(DISTINCT auction), each overall (total_) and FILTERed
// by price band (rank1_: price < 10 000; rank2_: 10 000 <= price <
// 1 000 000; rank3_: price >= 1 000 000). Final upsert view: one row per
// day. Columns: day, total_bids, rank1_bids, rank2_bids, rank3_bids,
// total_bidders, rank1_bidders, rank2_bidders, rank3_bidders,
// total_auctions, rank1_auctions, rank2_auctions, rank3_auctions.
//
// q16 q15 per (channel, UTC day), with minute = MAX(DATE_FORMAT(dateTime,
// 'HH:mm')) of the group. Final upsert view: one row per (channel, day).
// Columns: channel, day, minute, then q15's twelve counts.
//
// q17 Per (auction, UTC day yyyy-MM-dd) of the bids: total_bids, rank1_bids
// (price < 10 000), rank2_bids (10 000 <= price < 1 000 000), rank3_bids
// (price >= 1 000 000), min_price, max_price, avg_price (truncating BIGINT
// average), sum_price. Final upsert view: one row per (auction, day). Columns:
// auction, day, total_bids, rank1_bids, rank2_bids, rank3_bids, min_price,
// max_price, avg_price, sum_price.
//
// q18 Per (bidder, auction) the bid ranked first by dateTime DESC
// (ROW_NUMBER() ... <= 1: deduplication keeping the last row). A tie on
// dateTime is unspecified in SQL; this oracle, as Flink (whose
// deduplication replaces the kept row by one with the same rowtime) and
// weir, takes the last of the tied bids in input order. Final upsert view. Columns: auction, bidder, price, channel, url,
// datetime, extra.
//
// q19 Per auction its 10 bids ranked first by price DESC, with
// rank_number 1..10 (ROW_NUMBER() ... <= 10). A price tie is unspecified
// (Flink ranks in arrival order); this oracle, as weir, ranks the earlier
// dateTime first, then the smaller bidder, channel, url, extra (equal bids
// are interchangeable). Final upsert view: one row per (auction,
// rank_number). Columns: auction, bidder, price, channel, url, datetime,
// extra, rank_number.
//
// q20 Regular inner join of bids with auctions on bid.auction = auction.id,
// category 10 only, no lifetime condition. Columns: auction, bidder, price,
// channel, url, bid_datetime, bid_extra, itemname, description, initialbid,
// reserve, auction_datetime, expires, seller, category, auction_extra.
//
// Not implemented: q6 (not supported by Flink SQL in the suite), q21, q22 (not
// requested).
package batchref
