package nexmark

import (
	"time"

	"github.com/weirstream/weir"
)

// Q11Row is a row of query 11: bidder, bid_count, starttime, endtime.
type Q11Row struct {
	Bidder, BidCount   int64
	StartTime, EndTime int64
}

// Q11 is query 11, user sessions (ref queries/q11.sql): the number of bids
// of each bidder per session, a session closing after 10 s without a bid
// (SESSION(dateTime, INTERVAL '10' SECOND)). starttime is the session's
// first bid, endtime its last bid + 10 s (SESSION_START, SESSION_END).
// Bids up to and including 10 s apart share a session: Flink merges
// session windows that overlap or touch, and weir's Session does the same.
func Q11(events *weir.Stream[Event]) *weir.Stream[Q11Row] {
	bids := Bids(events)
	sessions := weir.Aggregate(
		weir.Window(weir.KeyBy(bids, func(b Bid) int64 { return b.Bidder }), weir.Session(10*time.Second)),
		weir.Count[Bid](), weir.Name("q11-sessions"))
	return weir.Map(sessions, func(r weir.WindowResult[int64, int64]) Q11Row {
		return Q11Row{r.Key, r.Value, r.Start.UnixMilli(), r.End.UnixMilli()}
	}, weir.Name("q11"))
}

// AppendJSON implements Row.
func (r *Q11Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"bid_count":`, r.BidCount)
	dst = appendIntField(dst, `,"starttime":`, r.StartTime)
	dst = appendIntField(dst, `,"endtime":`, r.EndTime)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q11Row) Ready() int64 { return r.EndTime + ms(WatermarkDelay) }

func init() {
	register(&Query{Name: "q11", Columns: []string{"bidder", "bid_count", "starttime", "endtime"}, Windowed: true, Extent: 10 * time.Second,
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q11(ev), out) }})
}
