package nexmark

import (
	"time"

	"github.com/weirstream/weir"
)

// Q10Row is a row of query 10: auction, bidder, price, datetime, extra,
// dt, hm.
type Q10Row struct {
	Auction, Bidder, Price int64
	DateTime               int64
	Extra                  string
	// Dt and Hm are DATE_FORMAT(dateTime, 'yyyy-MM-dd') and (…, 'HH:mm'),
	// in UTC; they are 10 and 5 bytes.
	Dt [10]byte
	Hm [5]byte
}

// Q10 is query 10, log to file system (ref queries/q10.sql): every bid with
// its date dt and hour-minute hm, the partition columns of ref's
// filesystem sink (here plain columns of the rows; partitioning files is
// the sink's business). Formatted in UTC: the DDL's TIMESTAMP(3) is the
// epoch time without a zone.
func Q10(events *weir.Stream[Event]) *weir.Stream[Q10Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q10Row)) {
		if e.Type != BidEvent {
			return
		}
		b := &e.Bid
		r := Q10Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, DateTime: b.DateTime, Extra: b.Extra}
		t := time.UnixMilli(b.DateTime).UTC()
		t.AppendFormat(r.Dt[:0], "2006-01-02")
		t.AppendFormat(r.Hm[:0], "15:04")
		emit(r)
	}, weir.Name("q10"))
}

// AppendJSON implements Row.
func (r *Q10Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"price":`, r.Price)
	dst = appendIntField(dst, `,"datetime":`, r.DateTime)
	dst = appendStringField(dst, `,"extra":`, r.Extra)
	dst = append(append(append(dst, `,"dt":"`...), r.Dt[:]...), '"')
	dst = append(append(append(dst, `,"hm":"`...), r.Hm[:]...), '"')
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q10Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q10", Columns: []string{"auction", "bidder", "price", "datetime", "extra", "dt", "hm"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q10(ev), out) }})
}
