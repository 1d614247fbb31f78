package nexmark

import (
	"strings"

	"github.com/weirstream/weir"
)

// Q21Row is a row of query 21: auction, bidder, price, channel, channel_id.
type Q21Row struct {
	Auction, Bidder, Price int64
	Channel, ChannelID     string
	DateTime               int64 // not an output column; for latency
}

// Q21 is query 21, add channel id (ref queries/q21.sql): channel_id is 0,
// 1, 2, 3 for the channels apple, google, facebook, baidu (compared in
// lower case), else the value of the url's channel_id parameter
// (REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2): the first
// "channel_id=" at the start of the url or after a '&', up to the next
// '&'); bids with neither are dropped.
func Q21(events *weir.Stream[Event]) *weir.Stream[Q21Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q21Row)) {
		if e.Type != BidEvent {
			return
		}
		b := &e.Bid
		id, ok := hotChannelID(b.Channel)
		if !ok {
			id, ok = channelIDParam(b.URL)
		}
		if ok {
			emit(Q21Row{b.Auction, b.Bidder, b.Price, b.Channel, id, b.DateTime})
		}
	}, weir.Name("q21"))
}

func hotChannelID(ch string) (string, bool) {
	switch {
	case strings.EqualFold(ch, "apple"):
		return "0", true
	case strings.EqualFold(ch, "google"):
		return "1", true
	case strings.EqualFold(ch, "facebook"):
		return "2", true
	case strings.EqualFold(ch, "baidu"):
		return "3", true
	}
	return "", false
}

// channelIDParam is REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2).
func channelIDParam(url string) (string, bool) {
	const key = "channel_id="
	for from := 0; ; {
		i := strings.Index(url[from:], key)
		if i < 0 {
			return "", false
		}
		i += from
		if i == 0 || url[i-1] == '&' {
			v := url[i+len(key):]
			if j := strings.IndexByte(v, '&'); j >= 0 {
				v = v[:j]
			}
			return v, true
		}
		from = i + 1
	}
}

// AppendJSON implements Row.
func (r *Q21Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"price":`, r.Price)
	dst = appendStringField(dst, `,"channel":`, r.Channel)
	dst = appendStringField(dst, `,"channel_id":`, r.ChannelID)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q21Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q21", Columns: []string{"auction", "bidder", "price", "channel", "channel_id"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q21(ev), out) }})
}
