package nexmark

import (
	"github.com/weirstream/weir"
)

// Q3Row is a row of query 3: name, city, state, id.
type Q3Row struct {
	Name, City, State string
	ID                int64 // the auction's id
	DateTime          int64 // the later date_time of the pair; not an output column
}

// Q3 is query 3, local item suggestion (ref queries/q3.sql): who sells in
// OR, ID or CA in category 10, and which auctions. A regular inner join
// (weir.Join, state kept for the job's life, as Flink without state TTL)
// of the auctions of category 10 keyed by seller with the persons of those
// states keyed by id; every matching pair is a row, whichever side comes
// first, and nothing is late.
func Q3(events *weir.Stream[Event]) *weir.Stream[Q3Row] {
	auctions := weir.Filter(Auctions(events), func(a Auction) bool { return a.Category == 10 }, weir.Name("q3-category"))
	persons := weir.Filter(Persons(events), func(p Person) bool {
		return p.State == "OR" || p.State == "ID" || p.State == "CA"
	}, weir.Name("q3-state"))
	return weir.Join(
		weir.KeyBy(auctions, func(a Auction) int64 { return a.Seller }),
		weir.KeyBy(persons, func(p Person) int64 { return p.ID }),
		func(_ int64, a Auction, p Person) (Q3Row, bool) {
			return Q3Row{p.Name, p.City, p.State, a.ID, max(a.DateTime, p.DateTime)}, true
		}, weir.Name("q3-join"))
}

// AppendJSON implements Row.
func (r *Q3Row) AppendJSON(dst []byte) []byte {
	dst = appendStringField(dst, `{"name":`, r.Name)
	dst = appendStringField(dst, `,"city":`, r.City)
	dst = appendStringField(dst, `,"state":`, r.State)
	dst = appendIntField(dst, `,"id":`, r.ID)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q3Row) Ready() int64 { return r.DateTime }

func init() {
	register(&Query{Name: "q3", Columns: []string{"name", "city", "state", "id"},
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q3(ev), out) }})
}
