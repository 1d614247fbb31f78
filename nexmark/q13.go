package nexmark

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/weirstream/weir"
)

// SideInputRow is a row of q13's side input: the table side_input (key
// BIGINT, value VARCHAR) of the Flink DDL, a CSV file of key,value lines.
type SideInputRow struct {
	Key   int64
	Value string
}

// SideInputRows is the size of the side input that the Nexmark suite
// generates (ref bin/side_input_gen.sh: SideInputGenerator --num 10000), and
// the modulus q13 looks bids up by.
const SideInputRows = 10_000

// SideInput is the side input the Nexmark suite generates (ref
// SideInputGenerator): n rows, key i with value i written in decimal.
func SideInput(n int) []SideInputRow {
	rows := make([]SideInputRow, n)
	for i := range rows {
		rows[i] = SideInputRow{int64(i), strconv.Itoa(i)}
	}
	return rows
}

// ParseSideInput parses the fields of one CSV record of a side input file
// (key,value; the key an integer), for connector/file's CSV source.
func ParseSideInput(fields []string) (SideInputRow, error) {
	if len(fields) != 2 {
		return SideInputRow{}, fmt.Errorf("side input: %d fields, want 2 (key,value)", len(fields))
	}
	k, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return SideInputRow{}, fmt.Errorf("side input: key %q is not an integer", fields[0])
	}
	return SideInputRow{k, fields[1]}, nil
}

// Q13Row is a row of query 13: auction, bidder, price, datetime, value.
type Q13Row struct {
	Auction, Bidder, Price, DateTime int64
	Value                            string
}

// q13In is the input of q13's join: a side input row or a bid.
type q13In struct {
	Side bool
	Key  int64  // the side row's key
	Val  string // the side row's value
	Bid  Bid
}

// Q13 is query 13, bounded side input join (ref queries/q13.sql): every
// bid with the value of the side input's row whose key is MOD(auction,
// 10000) (Java's remainder: a negative auction gives a negative key);
// an inner join, so a bid whose key the side input lacks has no row, and
// one whose key it has twice has two.
//
// Flink joins with a lookup (FOR SYSTEM_TIME AS OF the bid's processing
// time) into the filesystem table, which it reads whole: every bid sees
// the whole side input. Here the side input is a bounded stream (the
// suite's generated rows, or a file read with connector/file) joined in a
// keyed Process: the side rows and the bids, keyed by the side key and
// MOD(auction, 10000), meet in the subtask owning the key, which keeps the
// side rows in keyed state. A bid is joined only once the side input is
// fully loaded: the side stream has no watermarks until it ends, so while
// the operator's input watermark is still the minimum, some side row may
// be on its way, and the bid waits in keyed state, with an event-time timer
// (one per key) that the first watermark after the side input's end fires,
// which joins the key's waiting bids. Once the watermark has moved, bids
// are joined as they come, without state. The
// side input is a few thousand rows, loaded in the first moments of the
// job; few bids wait.
func Q13(events *weir.Stream[Event], side *weir.Stream[SideInputRow]) *weir.Stream[Q13Row] {
	bids := weir.FlatMap(events, func(e Event, emit func(q13In)) {
		if e.Type == BidEvent {
			emit(q13In{Bid: e.Bid})
		}
	}, weir.Name("q13-bids"))
	sides := weir.Map(side, func(r SideInputRow) q13In { return q13In{Side: true, Key: r.Key, Val: r.Value} }, weir.Name("q13-side"))
	in := weir.KeyBy(weir.Union(sides, bids), func(v q13In) int64 {
		if v.Side {
			return v.Key
		}
		return v.Bid.Auction % SideInputRows
	})
	return weir.ProcessWith(in, func() weir.KeyedProcessFunction[int64, q13In, Q13Row] { return &q13Join{} }, weir.Name("q13-join"))
}

// sideInputEnded is the time of the event-time timer that joins the bids
// that waited: the first watermark after the side input's end passes it
// (any watermark of real dates does; one of absurd dates only makes the
// bids wait until a later one or the end of the input).
var sideInputEnded = time.UnixMilli(math.MinInt64 / 2)

type q13Join struct {
	values  *weir.ValueState[int64, []string] // the key's side values
	waiting *weir.ListState[int64, Bid]       // bids that came before the side input ended
}

func (f *q13Join) Open(rc *weir.RuntimeContext[int64]) error {
	f.values = weir.NewValueState[[]string](rc, "side")
	f.waiting = weir.NewListState[Bid](rc, "waiting")
	return nil
}

func (f *q13Join) ProcessElement(ctx *weir.KeyedContext[int64, Q13Row], in q13In) error {
	if in.Side {
		vs, _ := f.values.Value()
		f.values.Update(append(vs, in.Val))
		return nil
	}
	if ctx.Watermark().UnixMilli() == math.MinInt64 {
		// The side input may not have ended: wait for it.
		f.waiting.Add(in.Bid)
		ctx.RegisterEventTimeTimer(sideInputEnded)
		return nil
	}
	f.join(ctx, &in.Bid)
	return nil
}

// OnTimer joins the bids that waited: the watermark has moved, so the side
// input has ended.
func (f *q13Join) OnTimer(ctx *weir.KeyedContext[int64, Q13Row], _ time.Time) error {
	for b := range f.waiting.All() {
		f.join(ctx, &b)
	}
	f.waiting.Clear()
	return nil
}

func (f *q13Join) join(ctx *weir.KeyedContext[int64, Q13Row], b *Bid) {
	vs, _ := f.values.Value()
	for _, v := range vs {
		ctx.Emit(Q13Row{b.Auction, b.Bidder, b.Price, b.DateTime, v})
	}
}

// AppendJSON implements Row.
func (r *Q13Row) AppendJSON(dst []byte) []byte {
	dst = appendIntField(dst, `{"auction":`, r.Auction)
	dst = appendIntField(dst, `,"bidder":`, r.Bidder)
	dst = appendIntField(dst, `,"price":`, r.Price)
	dst = appendIntField(dst, `,"datetime":`, r.DateTime)
	dst = appendStringField(dst, `,"value":`, r.Value)
	return append(dst, '}')
}

// Ready implements Row.
func (r *Q13Row) Ready() int64 { return r.DateTime }

// SideInputSource is a source of the suite's generated side input
// (SideInput(SideInputRows)).
func SideInputSource() weir.Source[SideInputRow] { return weir.SliceSource(SideInput(SideInputRows)) }

// SideInputStream adds a bounded side input source to job, without
// watermarks (so that q13 can tell when it has ended).
func SideInputStream(job *weir.Job, src weir.Source[SideInputRow]) *weir.Stream[SideInputRow] {
	return weir.FromSource(job, "q13-side-input", src, weir.NoWatermarks[SideInputRow]())
}

func init() {
	register(&Query{Name: "q13", Columns: []string{"auction", "bidder", "price", "datetime", "value"},
		Build: func(ev *weir.Stream[Event], out Output) {
			Emit(Q13(ev, SideInputStream(ev.Job(), SideInputSource())), out)
		}})
}
