package nexmark

import (
	"slices"
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
// window. Both sides are window aggregates over the same windows and the
// same key (id = seller), so here they are one: persons and auctions,
// keyed by id and by seller, go to one Tumbling(10s) Aggregate whose
// accumulator per key and window holds the distinct names of the persons
// and whether an auction was seen (Q8Window); a key and window with both
// emits one row per distinct name. This is the join of the two DISTINCT
// aggregates evaluated per key inside the aggregate: the rows are the
// SQL's. Events late for their window are dropped, as by the SQL's window
// aggregates.
//
// An aggregate over aligned windows keeps its state by window, so firing
// is a walk over one table and dropping the window is one reset, where a
// CoGroup (keeping every auction's seller per key and a timer per key and
// window) would fire and remove key by key.
func Q8(events *weir.Stream[Event]) *weir.Stream[Q8Row] {
	// Only a person's id and name and an auction's seller reach the
	// result, and only they cross to the aggregate: the SQL selects these
	// columns, and Flink's planner prunes the others before its window
	// aggregates.
	sides := weir.FlatMap(events, func(e Event, emit func(Q8Side)) {
		switch e.Type {
		case PersonEvent:
			emit(Q8Side{ID: e.Person.ID, Name: e.Person.Name})
		case AuctionEvent:
			emit(Q8Side{ID: e.Auction.Seller, Auction: true})
		}
	}, weir.Name("q8-sides"))
	windows := weir.Aggregate(
		weir.Window(weir.KeyBy(sides, func(s Q8Side) int64 { return s.ID }), weir.Tumbling(10*time.Second)),
		q8Agg{}, weir.Name("q8-window"))
	return weir.FlatMap(windows, func(r weir.WindowResult[int64, Q8Window], emit func(Q8Row)) {
		v := &r.Value
		if !v.Person || !v.Auction {
			return
		}
		start, end := r.Start.UnixMilli(), r.End.UnixMilli()
		emit(Q8Row{r.Key, v.Name, start, end})
		for _, name := range v.More {
			emit(Q8Row{r.Key, name, start, end})
		}
	}, weir.Name("q8"))
}

// Q8Side is what query 8 keeps of a person (its id and name) or of an
// auction (its seller, in ID): the columns its SQL selects.
type Q8Side struct {
	ID      int64
	Name    string
	Auction bool
}

// Q8Window is query 8's state per key and window: whether a person and an
// auction were seen, the first person's name, and the other distinct names
// in the order they came. The generator never makes two persons with one
// id, so More stays empty there; other inputs may.
type Q8Window struct {
	Person, Auction bool
	Name            string
	More            []string
}

// q8Agg builds a Q8Window. Its accumulators' slices are only appended to
// (AppendOnlyAccumulator), so a checkpoint encodes them off the task.
type q8Agg struct{}

func (q8Agg) Create() Q8Window { return Q8Window{} }

func (q8Agg) Add(a Q8Window, s Q8Side) Q8Window {
	switch {
	case s.Auction:
		a.Auction = true
	case !a.Person:
		a.Person, a.Name = true, s.Name
	case s.Name != a.Name && !slices.Contains(a.More, s.Name):
		a.More = append(a.More, s.Name)
	}
	return a
}

func (g q8Agg) Merge(a, b Q8Window) Q8Window {
	a.Auction = a.Auction || b.Auction
	if b.Person {
		a = g.Add(a, Q8Side{Name: b.Name})
		for _, n := range b.More {
			a = g.Add(a, Q8Side{Name: n})
		}
	}
	return a
}

func (q8Agg) Result(a Q8Window) Q8Window { return a }

func (q8Agg) AppendOnlyAccumulator() {}

// IdentityResult: Result returns the accumulator, so a firing copies it
// without the call (weir.IdentityResult).
func (q8Agg) IdentityResult() {}

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
