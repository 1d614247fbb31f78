package nexmark

import (
	"time"

	"github.com/weirstream/weir"
)

// Q8Row is a row of query 8: id, name, stime.
type Q8Row struct {
	ID    int64
	Name  string
	STime int64 // the window's start
	End   int64 // the window's end; not an output column
}

// Q8 is query 8, monitor new users (ref queries/q8.sql): the persons who
// entered the system and created an auction in the same 10 s tumbling
// window. The SQL joins DISTINCT (id, name, window) of persons with
// DISTINCT (seller, window) of auctions on id = seller and the same
// window; here a weir.CoGroup of persons keyed by id and auctions keyed by
// seller over Tumbling(10s) emits, for a key and window with events on both
// sides, one row per distinct name. Events late for their window are
// dropped, as by the SQL's window aggregates.
func Q8(events *weir.Stream[Event]) *weir.Stream[Q8Row] {
	// Only a person's id and name and an auction's seller reach the
	// result, and only they are kept in the windows' state: the SQL
	// selects these columns, and Flink's planner prunes the others before
	// its window aggregates. Keeping whole events would copy and encode
	// every person's and auction's strings at every checkpoint.
	persons := weir.Map(Persons(events), func(p Person) Q8Person { return Q8Person{p.ID, p.Name} }, weir.Name("q8-persons"))
	sellers := weir.Map(Auctions(events), func(a Auction) int64 { return a.Seller }, weir.Name("q8-sellers"))
	return weir.CoGroup(
		weir.KeyBy(persons, func(p Q8Person) int64 { return p.ID }),
		weir.KeyBy(sellers, func(seller int64) int64 { return seller }),
		weir.Tumbling(10*time.Second),
		func(id int64, w weir.WindowInfo, ps []Q8Person, sellers []int64, emit func(Q8Row)) error {
			if len(sellers) == 0 {
				return nil
			}
			for i, p := range ps {
				dup := false
				for _, q := range ps[:i] {
					dup = dup || q.Name == p.Name
				}
				if !dup {
					emit(Q8Row{id, p.Name, w.Start.UnixMilli(), w.End.UnixMilli()})
				}
			}
			return nil
		}, weir.Name("q8-cogroup"))
}

// Q8Person is what query 8 keeps of a person: the columns its SQL selects.
type Q8Person struct {
	ID   int64
	Name string
}

// AppendJSON implements Row.
func (r *Q8Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"id":`, r.ID)
	dst = appendStringField(dst, `,"name":`, r.Name)
	dst = appendIntField(dst, `,"stime":`, r.STime)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q8Row) Ready() int64 { return r.End + ms(WatermarkDelay) }

func init() {
	register(&Query{Name: "q8", Columns: []string{"id", "name", "stime"}, Windowed: true, Extent: 10 * time.Second,
		Build: func(ev *weir.Stream[Event], out Output) { Emit(Q8(ev), out) }})
}
