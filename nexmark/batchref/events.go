package batchref

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
)

// Event kinds, as in the event_type field.
const (
	kindPerson  = 0
	kindAuction = 1
	kindBid     = 2
)

// watermarkDelay is the bounded out-of-orderness of the source:
// WATERMARK FOR dateTime AS dateTime - INTERVAL '4' SECOND.
const watermarkDelay = 4000

// noWatermark is the watermark before the first event (Flink's Long.MIN_VALUE).
const noWatermark = math.MinInt64

// Person is a decoded person event.
type Person struct {
	ID           int64  `json:"id"`
	Name         string `json:"name"`
	EmailAddress string `json:"email_address"`
	CreditCard   string `json:"credit_card"`
	City         string `json:"city"`
	State        string `json:"state"`
	DateTime     int64  `json:"date_time"`
	Extra        string `json:"extra"`
}

// Auction is a decoded auction event.
type Auction struct {
	ID          int64  `json:"id"`
	ItemName    string `json:"item_name"`
	Description string `json:"description"`
	InitialBid  int64  `json:"initial_bid"`
	Reserve     int64  `json:"reserve"`
	DateTime    int64  `json:"date_time"`
	Expires     int64  `json:"expires"`
	Seller      int64  `json:"seller"`
	Category    int64  `json:"category"`
	Extra       string `json:"extra"`
}

// Bid is a decoded bid event.
type Bid struct {
	Auction  int64  `json:"auction"`
	Bidder   int64  `json:"bidder"`
	Price    int64  `json:"price"`
	Channel  string `json:"channel"`
	URL      string `json:"url"`
	DateTime int64  `json:"date_time"`
	Extra    string `json:"extra"`
}

// event is one input event in file order, together with the watermark that
// was in force when it arrived (see the package documentation).
type event struct {
	pos     int // 0-based position in the file
	kind    int
	person  *Person
	auction *Auction
	bid     *Bid
	time    int64 // the event's date_time
	wm      int64 // watermark before this event; noWatermark for the first
}

// lateFor reports whether the event is late for the window ending (exclusive)
// at end: the window has fired once the watermark reaches end-1.
func (e event) lateFor(end int64) bool {
	return e.wm != noWatermark && end-1 <= e.wm
}

type rawEvent struct {
	EventType *int     `json:"event_type"`
	Person    *Person  `json:"person"`
	Auction   *Auction `json:"auction"`
	Bid       *Bid     `json:"bid"`
}

// decodeEvents reads the whole JSON-lines input and annotates every event with
// the watermark in force on its arrival.
func decodeEvents(r io.Reader) ([]event, error) {
	dec := json.NewDecoder(r)
	var events []event
	maxTime := int64(math.MinInt64)
	for {
		var raw rawEvent
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("batchref: event %d: %w", len(events), err)
		}
		ev := event{pos: len(events), wm: noWatermark}
		if len(events) > 0 {
			ev.wm = maxTime - watermarkDelay
		}
		if raw.EventType == nil {
			return nil, fmt.Errorf("batchref: event %d: missing event_type", ev.pos)
		}
		ev.kind = *raw.EventType
		switch ev.kind {
		case kindPerson:
			if raw.Person == nil {
				return nil, fmt.Errorf("batchref: event %d: event_type 0 without person", ev.pos)
			}
			ev.person, ev.time = raw.Person, raw.Person.DateTime
		case kindAuction:
			if raw.Auction == nil {
				return nil, fmt.Errorf("batchref: event %d: event_type 1 without auction", ev.pos)
			}
			ev.auction, ev.time = raw.Auction, raw.Auction.DateTime
		case kindBid:
			if raw.Bid == nil {
				return nil, fmt.Errorf("batchref: event %d: event_type 2 without bid", ev.pos)
			}
			ev.bid, ev.time = raw.Bid, raw.Bid.DateTime
		default:
			return nil, fmt.Errorf("batchref: event %d: unknown event_type %d", ev.pos, ev.kind)
		}
		maxTime = max(maxTime, ev.time)
		events = append(events, ev)
	}
	return events, nil
}

// Small views over the event list, in file order.

func bids(events []event) []event     { return ofKind(events, kindBid) }
func auctions(events []event) []event { return ofKind(events, kindAuction) }
func persons(events []event) []event  { return ofKind(events, kindPerson) }

func ofKind(events []event, kind int) []event {
	var out []event
	for _, e := range events {
		if e.kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// floorMod is the mathematical modulus (result in [0, m) for m > 0), as Flink's
// window start computation yields for negative timestamps too.
func floorMod(t, m int64) int64 {
	r := t % m
	if r < 0 {
		r += m
	}
	return r
}

// window is a half-open event-time interval [start, end).
type window struct{ start, end int64 }

// tumbleWindow is the tumbling window of the given size containing t.
func tumbleWindow(t, size int64) window {
	start := t - floorMod(t, size)
	return window{start, start + size}
}

// hopWindows are all hopping windows (size, slide) containing t, newest first.
func hopWindows(t, size, slide int64) []window {
	var out []window
	for start := t - floorMod(t, slide); start > t-size; start -= slide {
		out = append(out, window{start, start + size})
	}
	return out
}
