package nexmark_test

import (
	"testing"

	"github.com/weirstream/weir/nexmark"
)

func person(id int64, name string, at int64) nexmark.Event {
	return nexmark.Event{Type: nexmark.PersonEvent, Person: nexmark.Person{ID: id, Name: name, EmailAddress: "e",
		CreditCard: "c", City: "x", State: "y", DateTime: t0 + at, Extra: "z"}}
}

func sellerAuction(seller, at int64) nexmark.Event {
	e := auction(seller*100, 10, at, at+1000)
	e.Auction.Seller = seller
	return e
}

// q8 joins DISTINCT (id, name, window) of persons with DISTINCT (seller,
// window) of auctions: one row per distinct name of a person with an
// auction of theirs in the same window, whichever came first, however
// many auctions; none for a window without both. The generator never
// repeats a person's id, so the names after the first are only here.
func TestQ8DistinctNamesPerWindow(t *testing.T) {
	events := []nexmark.Event{
		sellerAuction(1, 100), person(1, "ann", 200), sellerAuction(1, 300), // auction first: one row
		person(2, "bob", 100), person(2, "bo", 200), person(2, "bob", 300), sellerAuction(2, 9_999), // two names
		person(3, "cy", 100),                              // no auction
		sellerAuction(4, 100),                             // no person
		person(5, "dee", 9_999), sellerAuction(5, 10_000), // different windows
		person(5, "dee", 12_000), sellerAuction(5, 19_999), // the next window
	}
	start, next := itoa(t0), itoa(t0+10_000)
	check(t, "q8", events,
		`{"id":1,"name":"ann","stime":`+start+`}`,
		`{"id":2,"name":"bob","stime":`+start+`}`,
		`{"id":2,"name":"bo","stime":`+start+`}`,
		`{"id":5,"name":"dee","stime":`+next+`}`,
	)
}
