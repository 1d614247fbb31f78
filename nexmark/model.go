package nexmark

import "time"

// EventType says which of Event's records is set; its value is the
// event_type column of the Flink DDL (0 person, 1 auction, 2 bid).
type EventType uint8

const (
	PersonEvent  EventType = 0
	AuctionEvent EventType = 1
	BidEvent     EventType = 2
)

func (t EventType) String() string {
	switch t {
	case PersonEvent:
		return "person"
	case AuctionEvent:
		return "auction"
	case BidEvent:
		return "bid"
	}
	return "unknown"
}

// Person is a new user of the auction site. Times are epoch milliseconds,
// as in the JSON lines (Flink's TIMESTAMP(3)).
type Person struct {
	ID           int64
	Name         string
	EmailAddress string
	CreditCard   string
	City         string
	State        string
	DateTime     int64
	Extra        string
}

// Auction is an item put up for sale by a seller (a Person).
type Auction struct {
	ID          int64
	ItemName    string
	Description string
	InitialBid  int64
	Reserve     int64
	DateTime    int64
	Expires     int64
	Seller      int64
	Category    int64
	Extra       string
}

// Bid is a bid of a person on an auction; prices are in cents.
type Bid struct {
	Auction  int64
	Bidder   int64
	Price    int64
	Channel  string
	URL      string
	DateTime int64
	Extra    string
}

// Event is one record of the Nexmark stream: the record that Type names is
// set, the other two are zero. It is a value type (no pointers to chase,
// no allocation per event); the three records share nothing.
type Event struct {
	Type    EventType
	Person  Person
	Auction Auction
	Bid     Bid
}

// DateTime is the event's time, epoch milliseconds: the date_time of its
// record (the Flink DDL's computed dateTime column).
func (e *Event) DateTime() int64 {
	switch e.Type {
	case PersonEvent:
		return e.Person.DateTime
	case AuctionEvent:
		return e.Auction.DateTime
	}
	return e.Bid.DateTime
}

// Time is DateTime as a time.Time (UTC).
func (e *Event) Time() time.Time { return time.UnixMilli(e.DateTime()).UTC() }
