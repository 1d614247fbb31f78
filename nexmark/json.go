package nexmark

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/weirstream/weir/internal/jsonstr"
)

// The JSON lines of events, exactly:
//
//	{"event_type":0,"person":{"id":..,"name":..,"email_address":..,"credit_card":..,"city":..,"state":..,"date_time":..,"extra":..}}
//	{"event_type":1,"auction":{"id":..,"item_name":..,"description":..,"initial_bid":..,"reserve":..,"date_time":..,"expires":..,"seller":..,"category":..,"extra":..}}
//	{"event_type":2,"bid":{"auction":..,"bidder":..,"price":..,"channel":..,"url":..,"date_time":..,"extra":..}}
//
// times in epoch milliseconds. Encoding and decoding are written out by
// hand (no reflection): appending to a caller's buffer allocates nothing,
// decoding allocates the strings only.

// AppendJSON appends e as one JSON object (no newline) to dst.
func (e *Event) AppendJSON(dst []byte) []byte {
	switch e.Type {
	case PersonEvent:
		p := &e.Person
		dst = append(dst, `{"event_type":0,"person":{"id":`...)
		dst = strconv.AppendInt(dst, p.ID, 10)
		dst = appendStringField(dst, `,"name":`, p.Name)
		dst = appendStringField(dst, `,"email_address":`, p.EmailAddress)
		dst = appendStringField(dst, `,"credit_card":`, p.CreditCard)
		dst = appendStringField(dst, `,"city":`, p.City)
		dst = appendStringField(dst, `,"state":`, p.State)
		dst = appendIntField(dst, `,"date_time":`, p.DateTime)
		dst = appendStringField(dst, `,"extra":`, p.Extra)
	case AuctionEvent:
		a := &e.Auction
		dst = append(dst, `{"event_type":1,"auction":{"id":`...)
		dst = strconv.AppendInt(dst, a.ID, 10)
		dst = appendStringField(dst, `,"item_name":`, a.ItemName)
		dst = appendStringField(dst, `,"description":`, a.Description)
		dst = appendIntField(dst, `,"initial_bid":`, a.InitialBid)
		dst = appendIntField(dst, `,"reserve":`, a.Reserve)
		dst = appendIntField(dst, `,"date_time":`, a.DateTime)
		dst = appendIntField(dst, `,"expires":`, a.Expires)
		dst = appendIntField(dst, `,"seller":`, a.Seller)
		dst = appendIntField(dst, `,"category":`, a.Category)
		dst = appendStringField(dst, `,"extra":`, a.Extra)
	default:
		b := &e.Bid
		dst = append(dst, `{"event_type":2,"bid":{"auction":`...)
		dst = strconv.AppendInt(dst, b.Auction, 10)
		dst = appendIntField(dst, `,"bidder":`, b.Bidder)
		dst = appendIntField(dst, `,"price":`, b.Price)
		dst = appendStringField(dst, `,"channel":`, b.Channel)
		dst = appendStringField(dst, `,"url":`, b.URL)
		dst = appendIntField(dst, `,"date_time":`, b.DateTime)
		dst = appendStringField(dst, `,"extra":`, b.Extra)
	}
	return append(dst, "}}"...)
}

// MarshalJSON implements json.Marshaler.
func (e Event) MarshalJSON() ([]byte, error) { return e.AppendJSON(nil), nil }

// UnmarshalJSON implements json.Unmarshaler (so connector/file's JSONLines
// source reads event files with DecodeJSON).
func (e *Event) UnmarshalJSON(b []byte) error { return DecodeJSON(b, e) }

func appendIntField(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(dst, key...), v, 10)
}

func appendStringField(dst []byte, key, v string) []byte {
	return jsonstr.Append(append(dst, key...), v)
}

// ErrSyntax is returned (wrapped) by DecodeJSON for input that is not an
// event line.
var ErrSyntax = errors.New("nexmark: not an event")

// DecodeJSON decodes one event line into *e (which it resets first).
// Fields may come in any order; unknown fields are skipped; the record that
// event_type names must be present.
func DecodeJSON(b []byte, e *Event) error {
	*e = Event{}
	d := decoder{b: b}
	typ := int64(-1)
	var seen [3]bool
	err := d.object(func(key []byte) error {
		switch string(key) {
		case "event_type":
			v, err := d.int()
			if err != nil {
				return err
			}
			if v < 0 || v > 2 {
				return d.errorf("event_type %d", v)
			}
			typ = v
		case "person":
			if d.null() {
				return nil
			}
			seen[PersonEvent] = true
			return d.person(&e.Person)
		case "auction":
			if d.null() {
				return nil
			}
			seen[AuctionEvent] = true
			return d.auction(&e.Auction)
		case "bid":
			if d.null() {
				return nil
			}
			seen[BidEvent] = true
			return d.bid(&e.Bid)
		default:
			return d.skip()
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.space()
	if d.i != len(d.b) {
		return d.errorf("data after the object")
	}
	if typ < 0 {
		return fmt.Errorf("%w: no event_type", ErrSyntax)
	}
	e.Type = EventType(typ)
	if !seen[typ] {
		return fmt.Errorf("%w: event_type %d without its %s", ErrSyntax, typ, e.Type)
	}
	return nil
}

func (d *decoder) person(p *Person) error {
	return d.object(func(key []byte) (err error) {
		switch string(key) {
		case "id":
			p.ID, err = d.int()
		case "name":
			p.Name, err = d.string()
		case "email_address":
			p.EmailAddress, err = d.string()
		case "credit_card":
			p.CreditCard, err = d.string()
		case "city":
			p.City, err = d.string()
		case "state":
			p.State, err = d.string()
		case "date_time":
			p.DateTime, err = d.int()
		case "extra":
			p.Extra, err = d.string()
		default:
			err = d.skip()
		}
		return err
	})
}

func (d *decoder) auction(a *Auction) error {
	return d.object(func(key []byte) (err error) {
		switch string(key) {
		case "id":
			a.ID, err = d.int()
		case "item_name":
			a.ItemName, err = d.string()
		case "description":
			a.Description, err = d.string()
		case "initial_bid":
			a.InitialBid, err = d.int()
		case "reserve":
			a.Reserve, err = d.int()
		case "date_time":
			a.DateTime, err = d.int()
		case "expires":
			a.Expires, err = d.int()
		case "seller":
			a.Seller, err = d.int()
		case "category":
			a.Category, err = d.int()
		case "extra":
			a.Extra, err = d.string()
		default:
			err = d.skip()
		}
		return err
	})
}

func (d *decoder) bid(b *Bid) error {
	return d.object(func(key []byte) (err error) {
		switch string(key) {
		case "auction":
			b.Auction, err = d.int()
		case "bidder":
			b.Bidder, err = d.int()
		case "price":
			b.Price, err = d.int()
		case "channel":
			b.Channel, err = d.string()
		case "url":
			b.URL, err = d.string()
		case "date_time":
			b.DateTime, err = d.int()
		case "extra":
			b.Extra, err = d.string()
		default:
			err = d.skip()
		}
		return err
	})
}

// decoder is a small JSON reader over one line.
type decoder struct {
	b     []byte
	i     int
	depth int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrSyntax, d.i, fmt.Sprintf(format, args...))
}

func (d *decoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) peek() byte {
	d.space()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

// null consumes a null if one comes next.
func (d *decoder) null() bool {
	if d.peek() == 'n' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// object reads an object, calling field with each key; field must consume
// the value.
func (d *decoder) object(field func(key []byte) error) error {
	if d.peek() != '{' {
		return d.errorf("want an object")
	}
	d.depth++
	if d.depth > 64 {
		return d.errorf("nested too deep")
	}
	d.i++
	if d.peek() == '}' {
		d.i++
		d.depth--
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.errorf("want a key")
		}
		key, err := d.rawString()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return d.errorf("want ':'")
		}
		d.i++
		if err := field(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			d.depth--
			return nil
		default:
			return d.errorf("want ',' or '}'")
		}
	}
}

// int reads an integer (a number with no fraction or exponent).
func (d *decoder) int() (int64, error) {
	d.space()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, 64)
	if err != nil {
		return 0, d.errorf("want an integer")
	}
	return v, nil
}

// rawString reads a string and returns its bytes, unescaped (a view of the
// input when there is nothing to unescape).
func (d *decoder) rawString() ([]byte, error) {
	out, next, err := jsonstr.Read(d.b, d.i+1, nil)
	if err != nil {
		d.i = err.Offset
		return nil, d.errorf("%s", err.Msg)
	}
	d.i = next
	return out, nil
}

func (d *decoder) string() (string, error) {
	if d.peek() != '"' {
		return "", d.errorf("want a string")
	}
	b, err := d.rawString()
	return string(b), err
}

// skip reads and drops any value.
func (d *decoder) skip() error {
	switch c := d.peek(); {
	case c == '{':
		return d.object(func([]byte) error { return d.skip() })
	case c == '[':
		d.i++
		d.depth++
		if d.depth > 64 {
			return d.errorf("nested too deep")
		}
		if d.peek() == ']' {
			d.i++
			d.depth--
			return nil
		}
		for {
			if err := d.skip(); err != nil {
				return err
			}
			switch d.peek() {
			case ',':
				d.i++
			case ']':
				d.i++
				d.depth--
				return nil
			default:
				return d.errorf("want ',' or ']'")
			}
		}
	case c == '"':
		_, err := d.rawString()
		return err
	case c == 'n' && d.null():
		return nil
	case c == 't' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		return nil
	case c == 'f' && len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		return nil
	case c == '-' || c >= '0' && c <= '9':
		start := d.i
		for d.i < len(d.b) && (d.b[d.i] == '-' || d.b[d.i] == '+' || d.b[d.i] == '.' || d.b[d.i] == 'e' || d.b[d.i] == 'E' || d.b[d.i] >= '0' && d.b[d.i] <= '9') {
			d.i++
		}
		if _, err := strconv.ParseFloat(string(d.b[start:d.i]), 64); err != nil {
			return d.errorf("bad number")
		}
		return nil
	}
	return d.errorf("want a value")
}
