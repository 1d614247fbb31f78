package nexmark_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

func auction(id, category, at, expires int64) nexmark.Event {
	return nexmark.Event{Type: nexmark.AuctionEvent, Auction: nexmark.Auction{ID: id, ItemName: "item", Description: "d",
		InitialBid: 1, Reserve: 2, DateTime: t0 + at, Expires: t0 + expires, Seller: 1000, Category: category, Extra: "e"}}
}

// q4: bids count within [dateTime, expires], both ends included, whichever
// of the auction and the bid comes first; an auction's maximum rising
// retracts the old one from its category's average, which truncates.
func TestQ4(t *testing.T) {
	events := []nexmark.Event{
		auction(1, 10, 0, 1000),
		auction(2, 10, 0, 1000),
		auction(3, 11, 500, 2000),
		bid(4, 1, 70, 100), // before its auction, at its start
		auction(4, 11, 100, 200),
		auction(5, 12, 0, 1000), // no bid in its lifetime: no row for 12
		bid(1, 1, 100, 1000),    // at expires
		bid(1, 1, 500, 1001),    // after expires
		bid(5, 1, 500, 1001),
		bid(1, 1, 300, 50), // auction 1's maximum rises: 100 → 300
		bid(2, 1, 201, 10),
		bid(3, 1, 1000, 499), // before auction 3
		bid(3, 1, 11, 2000),
	}
	check(t, "q4", events,
		`{"id":10,"final":250}`, // (300 + 201) / 2
		`{"id":11,"final":40}`,  // (11 + 70) / 2
	)
}

// q9: the highest price, then the earliest bid; an exact tie keeps the
// first bid to arrive; the view holds one row per auction.
func TestQ9(t *testing.T) {
	events := []nexmark.Event{
		auction(1, 10, 0, 1000),
		bid(1, 1, 100, 10),
		bid(1, 2, 300, 20),
		bid(1, 3, 300, 15), // same price, earlier: wins
		bid(1, 4, 300, 15), // exact tie: the first stays
		bid(1, 5, 900, 1001),
		bid(3, 6, 50, 500), // before its auction arrives, at its start
		auction(2, 10, 0, 1000),
		auction(3, 11, 500, 600),
	}
	row := func(a, cat, bidder, price, at, aAt, expires int64) string {
		return `{"id":` + itoa(a) + `,"itemname":"item","description":"d","initialbid":1,"reserve":2,"datetime":` + itoa(t0+aAt) +
			`,"expires":` + itoa(t0+expires) + `,"seller":1000,"category":` + itoa(cat) + `,"extra":"e","auction":` + itoa(a) +
			`,"bidder":` + itoa(bidder) + `,"price":` + itoa(price) + `,"bid_datetime":` + itoa(t0+at) + `,"bid_extra":"x"}`
	}
	check(t, "q9", events, row(1, 10, 3, 300, 15, 0, 1000), row(3, 11, 6, 50, 500, 500, 600))
}

// q17: per auction and UTC day; the price bands' bounds.
func TestQ17(t *testing.T) {
	const day = 24 * 3_600_000
	events := []nexmark.Event{
		bid(1, 1, 9_999, 0), bid(1, 1, 10_000, 10), bid(1, 1, 999_999, 20), bid(1, 1, 1_000_000, day-1),
		bid(1, 1, 7, day), bid(2, 1, 5, 5),
	}
	check(t, "q17", events,
		`{"auction":1,"day":"2015-07-15","total_bids":4,"rank1_bids":1,"rank2_bids":2,"rank3_bids":1,"min_price":9999,"max_price":1000000,"avg_price":504999,"sum_price":2019998}`,
		`{"auction":1,"day":"2015-07-16","total_bids":1,"rank1_bids":1,"rank2_bids":0,"rank3_bids":0,"min_price":7,"max_price":7,"avg_price":7,"sum_price":7}`,
		`{"auction":2,"day":"2015-07-15","total_bids":1,"rank1_bids":1,"rank2_bids":0,"rank3_bids":0,"min_price":5,"max_price":5,"avg_price":5,"sum_price":5}`,
	)
}

// q20: every bid of a category-10 auction, whichever comes first, with no
// lifetime condition.
func TestQ20(t *testing.T) {
	events := []nexmark.Event{
		bid(1, 7, 5, 0), // before its auction
		auction(1, 10, 10, 20),
		auction(2, 11, 0, 20),
		bid(2, 7, 6, 0),
		bid(1, 8, 9, 5000), // after expires
	}
	row := func(bidder, price, at int64) string {
		return `{"auction":1,"bidder":` + itoa(bidder) + `,"price":` + itoa(price) +
			`,"channel":"channel-1","url":"https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=7","bid_datetime":` + itoa(t0+at) +
			`,"bid_extra":"x","itemname":"item","description":"d","initialbid":1,"reserve":2,"auction_datetime":` + itoa(t0+10) +
			`,"expires":` + itoa(t0+20) + `,"seller":1000,"category":10,"auction_extra":"e"}`
	}
	check(t, "q20", events, row(7, 5, 0), row(8, 9, 5000))
}

// The upsert view applies a changelog: updates replace a key's row,
// deletes remove it, and a changelog that is not that of a view with the
// key fails.
func TestUpsertView(t *testing.T) {
	write := func(v *nexmark.UpsertView, changes ...weir.Change[nexmark.Q4Row]) {
		t.Helper()
		job := weir.NewJob("upsert")
		nexmark.EmitChanges(weir.FromSource(job, "changes", weir.SliceSource(changes), weir.NoWatermarks[weir.Change[nexmark.Q4Row]]()), v.Output())
		if err := job.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	ch := func(k weir.ChangeKind, id, final int64) weir.Change[nexmark.Q4Row] {
		return weir.Change[nexmark.Q4Row]{Kind: k, Value: nexmark.Q4Row{ID: id, Final: final}}
	}
	v := nexmark.NewUpsertView()
	write(v, ch(weir.Insert, 1, 10), ch(weir.Insert, 2, 20), ch(weir.UpdateBefore, 1, 10), ch(weir.UpdateAfter, 1, 11),
		ch(weir.Insert, 3, 30), ch(weir.Delete, 3, 30),
		ch(weir.UpdateAfter, 2, 21), ch(weir.UpdateBefore, 2, 20)) // +U before its -U
	var buf bytes.Buffer
	n, err := v.WriteTo(&buf)
	if err != nil || n != 2 || buf.String() != "{\"id\":1,\"final\":11}\n{\"id\":2,\"final\":21}\n" {
		t.Errorf("view: %d rows, %v:\n%s", n, err, buf.String())
	}
	if v.Changes() != 8 {
		t.Errorf("%d changes, want 8", v.Changes())
	}
	bad := nexmark.NewUpsertView()
	write(bad, ch(weir.Insert, 1, 10), ch(weir.UpdateBefore, 1, 9))
	if _, err := bad.WriteTo(&buf); err == nil || !strings.Contains(err.Error(), "retraction") {
		t.Errorf("a retraction of a row not there: %v", err)
	}
	dup := nexmark.NewUpsertView()
	write(dup, ch(weir.Insert, 1, 10), ch(weir.Insert, 1, 11))
	if _, err := dup.WriteTo(&buf); err == nil || !strings.Contains(err.Error(), "one key") {
		t.Errorf("two rows with one key: %v", err)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }
