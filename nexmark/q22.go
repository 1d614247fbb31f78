package nexmark

import (
	"strings"

	"github.com/weirstream/weir"
)

// Q22Row is a row of query 22: auction, bidder, price, channel, dir1,
// dir2, dir3.
type Q22Row struct {
	Auction, Bidder, Price int64
	Channel                string
	// Dirs are the url's parts 3, 4, 5 split at '/'; NDirs says how many
	// exist (the others are SQL NULL).
	Dirs     [3]string
	NDirs    int
	DateTime int64 // not an output column; for latency
}

// Q22 is query 22, get URL directories (ref queries/q22.sql): dir1, dir2,
// dir3 are SPLIT_INDEX(url, '/', 3), (…, 4), (…, 5): the url split at
// every '/', empty parts kept, counted from 0 — for
// https://www.nexmark.com/a/b/c/item.htm the parts a, b, c — and NULL
// where the url has fewer parts.
func Q22(events *weir.Stream[Event]) *weir.Stream[Q22Row] {
	return weir.FlatMap(events, func(e Event, emit func(Q22Row)) {
		if e.Type != BidEvent {
			return
		}
		b := &e.Bid
		r := Q22Row{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, DateTime: b.DateTime}
		rest := b.URL
		for part := 0; part < 6; part++ {
			i := strings.IndexByte(rest, '/')
			cur := rest
			if i >= 0 {
				cur, rest = rest[:i], rest[i+1:]
			}
			if part >= 3 {
				r.Dirs[part-3] = cur
				r.NDirs++
			}
			if i < 0 {
				break
			}
		}
		emit(r)
	}, weir.Name("q22"))
}

// AppendJSON implements Row.
func (r *Q22Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"price":`, r.Price)
	dst = appendStringField(dst, `,"channel":`, r.Channel)
	for i, k := range [3]string{`,"dir1":`, `,"dir2":`, `,"dir3":`} {
		if i < r.NDirs {
			dst = appendStringField(dst, k, r.Dirs[i])
		} else {
			dst = append(append(dst, k...), "null"...)
		}
	}
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q22Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q22", Columns: []string{"auction", "bidder", "price", "channel", "dir1", "dir2", "dir3"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q22(ev), out) }})
}
