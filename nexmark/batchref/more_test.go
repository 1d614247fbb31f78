package batchref

import (
	"fmt"
	"testing"
)

func bidOn(auction, bidder, price, t int64, channel, url, extra string) string {
	return fmt.Sprintf(`{"event_type":2,"bid":{"auction":%d,"bidder":%d,"price":%d,"channel":%q,"url":%q,"date_time":%d,"extra":%q}}`,
		auction, bidder, price, channel, url, t, extra)
}

// q12: one total per bidder, whatever the windows.
func TestQ12(t *testing.T) {
	expect(t, "q12", []string{bid(1, 7, 1, 0), bid(2, 7, 1, 60000), bid(1, 8, 1, 5), auction(1, 9, 10, 0, 10)},
		`{"bid_count":2,"bidder":7}`, `{"bid_count":1,"bidder":8}`)
}

// q13: MOD(auction, 10000) into keys 0..9999; a negative remainder has no
// side row.
func TestQ13(t *testing.T) {
	expect(t, "q13", []string{bid(10000, 7, 5, 1), bid(123456, 8, 6, 2), bid(-3, 9, 7, 3)},
		`{"auction":10000,"bidder":7,"datetime":1,"price":5,"value":"0"}`,
		`{"auction":123456,"bidder":8,"datetime":2,"price":6,"value":"3456"}`)
}

// q15: distinct bidders and auctions per band; a bidder in two bands counts
// once in total and once in each band; the band bounds.
func TestQ15(t *testing.T) {
	const day = 86400000
	expect(t, "q15", []string{
		bid(1, 7, 9999, 0), bid(1, 7, 10000, 1), bid(2, 7, 999999, 2), bid(2, 8, 1000000, 3), bid(3, 8, 9999, day-1),
		bid(1, 7, 1, day),
	},
		`{"day":"1970-01-01","rank1_auctions":2,"rank1_bidders":2,"rank1_bids":2,"rank2_auctions":2,"rank2_bidders":1,"rank2_bids":2,`+
			`"rank3_auctions":1,"rank3_bidders":1,"rank3_bids":1,"total_auctions":3,"total_bidders":2,"total_bids":5}`,
		`{"day":"1970-01-02","rank1_auctions":1,"rank1_bidders":1,"rank1_bids":1,"rank2_auctions":0,"rank2_bidders":0,"rank2_bids":0,`+
			`"rank3_auctions":0,"rank3_bidders":0,"rank3_bids":0,"total_auctions":1,"total_bidders":1,"total_bids":1}`)
}

// q16: per channel and day, with the latest HH:mm.
func TestQ16(t *testing.T) {
	expect(t, "q16", []string{
		bidOn(1, 7, 5, 61000, "a", "u", "x"), bidOn(1, 8, 5, 3600000, "a", "u", "x"), bidOn(1, 7, 5, 120000, "a", "u", "x"),
		bidOn(2, 7, 20000, 0, "b", "u", "x"),
	},
		`{"channel":"a","day":"1970-01-01","minute":"01:00","rank1_auctions":1,"rank1_bidders":2,"rank1_bids":3,"rank2_auctions":0,"rank2_bidders":0,"rank2_bids":0,`+
			`"rank3_auctions":0,"rank3_bidders":0,"rank3_bids":0,"total_auctions":1,"total_bidders":2,"total_bids":3}`,
		`{"channel":"b","day":"1970-01-01","minute":"00:00","rank1_auctions":0,"rank1_bidders":0,"rank1_bids":0,"rank2_auctions":1,"rank2_bidders":1,"rank2_bids":1,`+
			`"rank3_auctions":0,"rank3_bidders":0,"rank3_bids":0,"total_auctions":1,"total_bidders":1,"total_bids":1}`)
}

// q18: the latest bid per (bidder, auction), whatever the arrival order;
// of bids tied on date_time the last in the input (Flink's deduplication
// keeping the last row), even at a lower price or a larger channel.
func TestQ18(t *testing.T) {
	expect(t, "q18", []string{
		bidOn(1, 7, 5, 20, "a", "u", "x"), bidOn(1, 7, 6, 10, "a", "u", "x"), // later first
		bidOn(2, 7, 5, 10, "a", "u", "x"), bidOn(2, 7, 9, 10, "b", "u", "x"), bidOn(2, 7, 3, 10, "z", "u", "x"),
		bidOn(1, 8, 1, 0, "a", "u", "x"),
	},
		`{"auction":1,"bidder":7,"channel":"a","datetime":20,"extra":"x","price":5,"url":"u"}`,
		`{"auction":2,"bidder":7,"channel":"z","datetime":10,"extra":"x","price":3,"url":"u"}`,
		`{"auction":1,"bidder":8,"channel":"a","datetime":0,"extra":"x","price":1,"url":"u"}`)
}

// q19: the ten highest prices of each auction, ranked; price ties by the
// earlier date_time, then the smaller bidder.
func TestQ19(t *testing.T) {
	var lines []string
	for p := int64(1); p <= 12; p++ {
		lines = append(lines, bid(1, 100+p, p*10, 100-p))
	}
	lines = append(lines, bid(1, 50, 120, 200), bid(1, 40, 120, 200), bid(2, 1, 5, 0))
	row := func(a, bidder, price, at, rank int64) string {
		return fmt.Sprintf(`{"auction":%d,"bidder":%d,"channel":"ch","datetime":%d,"extra":"bx","price":%d,"rank_number":%d,"url":"u"}`,
			a, bidder, at, price, rank)
	}
	want := []string{
		row(1, 112, 120, 88, 1), row(1, 40, 120, 200, 2), row(1, 50, 120, 200, 3),
		row(2, 1, 5, 0, 1),
	}
	for r, p := int64(4), int64(11); r <= 10; r, p = r+1, p-1 {
		want = append(want, row(1, 100+p, p*10, 100-p, r))
	}
	expect(t, "q19", lines, want...)
}
