package nexmark_test

import (
	"slices"
	"testing"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/nexmark"
)

const t0 = nexmark.DefaultBaseTime // a multiple of 10 s

func bid(auction, bidder, price, at int64) nexmark.Event {
	return nexmark.Event{Type: nexmark.BidEvent, Bid: nexmark.Bid{Auction: auction, Bidder: bidder, Price: price,
		DateTime: t0 + at, Channel: "channel-1", URL: "https://www.nexmark.com/a/b/c/item.htm?query=1&channel_id=7", Extra: "x"}}
}

// rows runs query name over events at parallelism p, sorted.
func rows(t *testing.T, name string, p int, events ...nexmark.Event) []string {
	t.Helper()
	q, err := nexmark.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	out := runQuery(t, q, weir.SliceSource(events), p)
	slices.Sort(out)
	return out
}

func check(t *testing.T, name string, events []nexmark.Event, want ...string) {
	t.Helper()
	slices.Sort(want)
	for _, p := range []int{1, 2} {
		if got := rows(t, name, p, events...); !slices.Equal(got, want) {
			t.Errorf("%s at parallelism %d:\n got %q\nwant %q", name, p, got, want)
		}
	}
}

// q7: every bid tied at the maximum; a bid at exactly the window end also
// matches the window that ends there (BETWEEN is closed), and its own.
func TestQ7TiesAndBoundary(t *testing.T) {
	events := []nexmark.Event{
		bid(1, 10, 500, 1000),
		bid(2, 11, 700, 2000),
		bid(3, 12, 700, 9999),
		bid(4, 13, 100, 5000),
		bid(5, 14, 700, 10_000), // ties the first window's max at its end; alone in its own window
		bid(6, 15, 300, 10_000), // at the boundary, below the max
		bid(7, 16, 50, 25_000),  // a later window, fires at the end of input
	}
	check(t, "q7", events,
		`{"auction":2,"price":700,"bidder":11,"datetime":1436918402000,"extra":"x"}`,
		`{"auction":3,"price":700,"bidder":12,"datetime":1436918409999,"extra":"x"}`,
		`{"auction":5,"price":700,"bidder":14,"datetime":1436918410000,"extra":"x"}`,
		`{"auction":5,"price":700,"bidder":14,"datetime":1436918410000,"extra":"x"}`,
		`{"auction":7,"price":50,"bidder":16,"datetime":1436918425000,"extra":"x"}`,
	)
}

// q5: the auctions with the most bids per hopping window, ties kept.
func TestQ5Ties(t *testing.T) {
	events := []nexmark.Event{
		bid(1, 1, 1, 0), bid(1, 1, 1, 100), bid(2, 1, 1, 200), bid(2, 1, 1, 300), bid(3, 1, 1, 400),
	}
	// Windows [-8s, 2s) … [0, 10s) all hold the five bids: 5 windows, each
	// with auctions 1 and 2 at two bids.
	var want []string
	for range 5 {
		want = append(want, `{"auction":1,"num":2}`, `{"auction":2,"num":2}`)
	}
	check(t, "q5", events, want...)
}

// q11: bids exactly 10 s apart share a session, 10.001 s apart do not.
func TestQ11SessionsTouch(t *testing.T) {
	events := []nexmark.Event{bid(1, 7, 1, 0), bid(1, 8, 1, 5), bid(1, 7, 1, 10_000), bid(1, 7, 1, 20_001)}
	check(t, "q11", events,
		`{"bidder":7,"bid_count":2,"starttime":1436918400000,"endtime":1436918420000}`,
		`{"bidder":7,"bid_count":1,"starttime":1436918420001,"endtime":1436918430001}`,
		`{"bidder":8,"bid_count":1,"starttime":1436918400005,"endtime":1436918410005}`,
	)
}

func TestQ1Q2Q14Stateless(t *testing.T) {
	b := bid(123*9, 2, 1_101_322, 3_600_000*19) // 0.908 × price = 1,000,000.376; 19:00 UTC
	check(t, "q1", []nexmark.Event{b, bid(1, 2, 5, 0)},
		`{"auction":1107,"bidder":2,"price":1000000.376,"datetime":1436986800000,"extra":"x"}`,
		`{"auction":1,"bidder":2,"price":4.540,"datetime":1436918400000,"extra":"x"}`)
	check(t, "q2", []nexmark.Event{b, bid(1, 2, 5, 0)}, `{"auction":1107,"price":1101322}`)
	c := bid(1, 2, 1_101_323, 3_600_000*8) // 1,000,001.284, at 08:00
	c.Bid.Extra = "cacbc"
	lo := bid(1, 2, 1_101_321, 0) // 999,999.468: out
	check(t, "q14", []nexmark.Event{b, c, lo},
		`{"auction":1107,"bidder":2,"price":1000000.376,"bidtimetype":"otherTime","datetime":1436986800000,"extra":"x","c_counts":0}`,
		`{"auction":1,"bidder":2,"price":1000001.284,"bidtimetype":"dayTime","datetime":1436947200000,"extra":"cacbc","c_counts":3}`)
}

func TestQ21Q22(t *testing.T) {
	hot := bid(1, 2, 3, 0)
	hot.Bid.Channel = "Apple"
	hot.Bid.URL = "https://www.nexmark.com/ab/cd/ef/item.htm?query=1"
	none := bid(1, 2, 3, 0)
	none.Bid.URL = "https://x/a?xchannel_id=5&y=1" // not after '&' or at the start
	second := bid(1, 2, 3, 0)
	second.Bid.URL = "xchannel_id=5&channel_id=66&channel_id=7"
	check(t, "q21", []nexmark.Event{hot, none, second, bid(4, 5, 6, 0)},
		`{"auction":1,"bidder":2,"price":3,"channel":"Apple","channel_id":"0"}`,
		`{"auction":1,"bidder":2,"price":3,"channel":"channel-1","channel_id":"66"}`,
		`{"auction":4,"bidder":5,"price":6,"channel":"channel-1","channel_id":"7"}`)
	short := bid(1, 2, 3, 0)
	short.Bid.URL = "a/b/c/d"
	check(t, "q22", []nexmark.Event{hot, short},
		`{"auction":1,"bidder":2,"price":3,"channel":"Apple","dir1":"ab","dir2":"cd","dir3":"ef"}`,
		`{"auction":1,"bidder":2,"price":3,"channel":"channel-1","dir1":"d","dir2":null,"dir3":null}`)
}
