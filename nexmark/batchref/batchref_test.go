package batchref

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// Event-line builders for hand-written inputs.

func person(id int64, name, city, state string, t int64) string {
	return fmt.Sprintf(`{"event_type":0,"person":{"id":%d,"name":%q,"email_address":"e","credit_card":"c","city":%q,"state":%q,"date_time":%d,"extra":"px"}}`,
		id, name, city, state, t)
}

func auction(id, seller, category, t, expires int64) string {
	return fmt.Sprintf(`{"event_type":1,"auction":{"id":%d,"item_name":"item%d","description":"desc","initial_bid":1,"reserve":2,"date_time":%d,"expires":%d,"seller":%d,"category":%d,"extra":"ax"}}`,
		id, id, t, expires, seller, category)
}

func bid(auction, bidder, price, t int64) string {
	return fmt.Sprintf(`{"event_type":2,"bid":{"auction":%d,"bidder":%d,"price":%d,"channel":"ch","url":"u","date_time":%d,"extra":"bx"}}`,
		auction, bidder, price, t)
}

// expect evaluates query q over the given event lines and compares the result
// with want as multisets.
func expect(t *testing.T, q string, lines []string, want ...string) {
	t.Helper()
	got, err := Evaluate(q, strings.NewReader(strings.Join(lines, "\n")+"\n"))
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	want = append([]string(nil), want...)
	sort.Strings(want)
	if len(got) == 0 {
		got = nil
	}
	if len(want) == 0 {
		want = nil
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %d rows:\n  %s\nwant %d rows:\n  %s", q, len(got), strings.Join(got, "\n  "), len(want), strings.Join(want, "\n  "))
	}
}

func repeat(s string, n int) []string {
	var out []string
	for range n {
		out = append(out, s)
	}
	return out
}

func TestQueriesAndColumns(t *testing.T) {
	want := []string{"q0", "q1", "q2", "q3", "q4", "q5", "q7", "q8", "q9", "q10", "q11", "q12", "q13", "q14", "q15", "q16", "q17", "q18", "q19", "q20"}
	if got := Queries(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Queries() = %v, want %v", got, want)
	}
	if got := Columns("q8"); !reflect.DeepEqual(got, []string{"id", "name", "stime"}) {
		t.Errorf("Columns(q8) = %v", got)
	}
	if got := Columns("q11"); !reflect.DeepEqual(got, []string{"bidder", "bid_count", "starttime", "endtime"}) {
		t.Errorf("Columns(q11) = %v", got)
	}
	if Columns("q6") != nil {
		t.Errorf("Columns(q6) should be nil")
	}
	if _, err := Evaluate("q6", strings.NewReader("")); err == nil {
		t.Errorf("Evaluate(q6) should fail")
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, input := range map[string]string{
		"bad type":        `{"event_type":3,"bid":{}}`,
		"no type":         `{"bid":{"auction":1}}`,
		"missing payload": `{"event_type":2,"person":{"id":1}}`,
		"fractional":      `{"event_type":2,"bid":{"auction":1,"price":1.5}}`,
		"string number":   `{"event_type":2,"bid":{"auction":"1"}}`,
		"malformed":       `{"event_type":2,"bid":`,
	} {
		if _, err := Evaluate("q0", strings.NewReader(input)); err == nil {
			t.Errorf("%s: no error for %s", name, input)
		}
	}
	// Empty input and blank lines are fine.
	rows, err := Evaluate("q0", strings.NewReader("\n\n"))
	if err != nil || len(rows) != 0 {
		t.Errorf("empty input: %v, %v", rows, err)
	}
}

func TestLateRule(t *testing.T) {
	e := event{wm: 115999}
	if !e.lateFor(116000) { // end-1 = 115999 <= watermark
		t.Errorf("window ending at watermark+1 must be late")
	}
	if e.lateFor(116001) {
		t.Errorf("window ending at watermark+2 must not be late")
	}
	first := event{wm: noWatermark}
	if first.lateFor(-1 << 62) {
		t.Errorf("no event is late before the first watermark")
	}
	evs, err := decodeEvents(strings.NewReader(bid(1, 1, 1, 10000) + "\n" + person(1, "p", "c", "OR", 30000) + "\n" + bid(1, 1, 1, 20000) + "\n" + bid(1, 1, 1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var wms []int64
	for _, e := range evs {
		wms = append(wms, e.wm)
	}
	if want := []int64{noWatermark, 6000, 26000, 26000}; !reflect.DeepEqual(wms, want) {
		t.Errorf("watermarks %v, want %v (persons advance it too, it never regresses)", wms, want)
	}
}

func TestWindowAssignment(t *testing.T) {
	if got := tumbleWindow(109999, 10000); got != (window{100000, 110000}) {
		t.Errorf("tumble(109999) = %v", got)
	}
	if got := tumbleWindow(110000, 10000); got != (window{110000, 120000}) {
		t.Errorf("tumble(110000) = %v", got)
	}
	if got := tumbleWindow(-1, 10000); got != (window{-10000, 0}) {
		t.Errorf("tumble(-1) = %v", got)
	}
	want := []window{{100000, 110000}, {98000, 108000}, {96000, 106000}, {94000, 104000}, {92000, 102000}}
	if got := hopWindows(101999, 10000, 2000); !reflect.DeepEqual(got, want) {
		t.Errorf("hop(101999) = %v", got)
	}
	want = []window{{-2000, 8000}, {-4000, 6000}, {-6000, 4000}, {-8000, 2000}, {-10000, 0}}
	if got := hopWindows(-1, 10000, 2000); !reflect.DeepEqual(got, want) {
		t.Errorf("hop(-1) = %v", got)
	}
}

func TestQ0(t *testing.T) {
	expect(t, "q0", []string{
		bid(1, 2, 100, 1000),
		person(9, "p", "c", "OR", 500), // not a bid
		`{"event_type":2,"bid":{"auction":3,"bidder":4,"price":5,"channel":"c","url":"u","date_time":6,"extra":"<&>"}}`,
	},
		`{"auction":1,"bidder":2,"datetime":1000,"extra":"bx","price":100}`,
		`{"auction":3,"bidder":4,"datetime":6,"extra":"\u003c\u0026\u003e","price":5}`,
	)
}

func TestQ1(t *testing.T) {
	expect(t, "q1", []string{
		bid(1, 2, 1, 10),
		bid(1, 2, 1000, 11),
		bid(1, 2, 0, 12),
		bid(1, 2, 123, 13),
		bid(1, 2, -1, 14),
		bid(1, 2, 9223372036854775807, 15),
	},
		`{"auction":1,"bidder":2,"datetime":10,"extra":"bx","price":0.908}`,
		`{"auction":1,"bidder":2,"datetime":11,"extra":"bx","price":908.000}`,
		`{"auction":1,"bidder":2,"datetime":12,"extra":"bx","price":0.000}`,
		`{"auction":1,"bidder":2,"datetime":13,"extra":"bx","price":111.684}`,
		`{"auction":1,"bidder":2,"datetime":14,"extra":"bx","price":-0.908}`,
		`{"auction":1,"bidder":2,"datetime":15,"extra":"bx","price":8374821809464136432.756}`,
	)
}

func TestQ2(t *testing.T) {
	expect(t, "q2", []string{
		bid(0, 1, 10, 1), bid(123, 1, 11, 2), bid(124, 1, 12, 3), bid(246, 1, 13, 4), bid(-123, 1, 14, 5), bid(122, 1, 15, 6),
	},
		`{"auction":0,"price":10}`,
		`{"auction":123,"price":11}`,
		`{"auction":246,"price":13}`,
		`{"auction":-123,"price":14}`,
	)
}

func TestQ3(t *testing.T) {
	expect(t, "q3", []string{
		auction(100, 1, 10, 50, 1000), // arrives before its seller: regular join, still matches
		person(1, "ann", "Bend", "OR", 100),
		person(2, "bob", "Boise", "ID", 100),
		person(3, "cat", "LA", "CA", 100),
		person(4, "dan", "Seattle", "WA", 100),
		auction(101, 1, 10, 200, 1000), // second auction of ann
		auction(102, 2, 11, 200, 1000), // wrong category
		auction(103, 3, 10, 200, 1000),
		auction(104, 4, 10, 200, 1000), // WA
		auction(105, 5, 10, 200, 1000), // no such person
	},
		`{"city":"Bend","id":100,"name":"ann","state":"OR"}`,
		`{"city":"Bend","id":101,"name":"ann","state":"OR"}`,
		`{"city":"LA","id":103,"name":"cat","state":"CA"}`,
	)
}

func TestQ4(t *testing.T) {
	expect(t, "q4", []string{
		auction(1, 9, 1, 1000, 5000),
		bid(1, 1, 10, 1000),   // at the start: counts
		bid(1, 1, 30, 5000),   // at expires: counts
		bid(1, 1, 1000, 5001), // after expires
		bid(1, 1, 2000, 999),  // before the auction
		auction(2, 9, 1, 1000, 5000),
		bid(2, 1, 15, 2000),
		bid(2, 1, 3, 2500),
		auction(3, 9, 2, 1000, 5000), // no valid bid: no contribution
		bid(3, 1, 500, 6000),
		auction(4, 9, 2, 1000, 5000),
		bid(4, 1, 7, 1500),
		bid(99, 1, 77, 1500), // no such auction
	},
		`{"final":22,"id":1}`, // (30 + 15) / 2 truncated
		`{"final":7,"id":2}`,
	)
}

func TestQ5TiesAndBoundaries(t *testing.T) {
	lines := []string{
		bid(1, 1, 1, 100000),
		bid(2, 1, 1, 100500),
		bid(1, 1, 1, 101000),
		bid(2, 1, 1, 101500),
		bid(3, 1, 1, 102000), // not in [92000, 102000); alone in [102000, 112000)
	}
	var want []string
	want = append(want, repeat(`{"auction":1,"num":2}`, 5)...) // windows 92000..100000
	want = append(want, repeat(`{"auction":2,"num":2}`, 5)...) // tie with auction 1
	want = append(want, `{"auction":3,"num":1}`)               // window 102000
	expect(t, "q5", lines, want...)
}

func TestQ5Lateness(t *testing.T) {
	lines := []string{
		bid(1, 1, 1, 100000),
		bid(9, 1, 1, 119999), // watermark becomes 115999
		// Windows of 110000 end at 120000, 118000, 116000, 114000, 112000;
		// it is late for those with end-1 <= 115999, i.e. the last three
		// (including [106000, 116000), whose end is watermark+1).
		bid(3, 1, 1, 110000),
	}
	var want []string
	want = append(want, repeat(`{"auction":1,"num":1}`, 5)...) // windows 92000..100000
	want = append(want, repeat(`{"auction":3,"num":1}`, 2)...) // windows 108000, 110000
	want = append(want, repeat(`{"auction":9,"num":1}`, 5)...) // windows 110000..118000
	expect(t, "q5", lines, want...)
}

func TestQ7(t *testing.T) {
	lines := []string{
		bid(1, 1, 50, 100000),
		bid(2, 2, 70, 103000),
		bid(3, 3, 70, 109999), // tie at the max of [100000, 110000)
		bid(4, 4, 20, 110000),
		bid(5, 5, 70, 110000), // in the next window, but BETWEEN is closed: matches the max of [100000, 110000)
		bid(6, 6, 90, 115000), // max of [110000, 120000)
		bid(7, 7, 90, 125000), // max of [120000, 130000); watermark becomes 121000
		bid(8, 8, 95, 119000), // late: does not raise the max of [110000, 120000)
		bid(9, 9, 90, 118000), // late, but equals the max: still joined
	}
	expect(t, "q7", lines,
		`{"auction":2,"bidder":2,"datetime":103000,"extra":"bx","price":70}`,
		`{"auction":3,"bidder":3,"datetime":109999,"extra":"bx","price":70}`,
		`{"auction":5,"bidder":5,"datetime":110000,"extra":"bx","price":70}`,
		`{"auction":6,"bidder":6,"datetime":115000,"extra":"bx","price":90}`,
		`{"auction":9,"bidder":9,"datetime":118000,"extra":"bx","price":90}`,
		`{"auction":7,"bidder":7,"datetime":125000,"extra":"bx","price":90}`,
	)
	// A bid at a window end that equals the max of both adjacent windows is
	// output twice.
	expect(t, "q7", []string{bid(1, 1, 5, 105000), bid(2, 2, 5, 110000)},
		`{"auction":1,"bidder":1,"datetime":105000,"extra":"bx","price":5}`,
		`{"auction":2,"bidder":2,"datetime":110000,"extra":"bx","price":5}`,
		`{"auction":2,"bidder":2,"datetime":110000,"extra":"bx","price":5}`,
	)
}

func TestQ8(t *testing.T) {
	lines := []string{
		person(1, "alice", "c", "OR", 100500),
		auction(10, 1, 1, 105000, 200000), // same window as alice
		person(2, "bob", "c", "OR", 109999),
		auction(11, 2, 1, 110000, 200000), // next window: no match
		person(3, "carl", "c", "OR", 112000),
		auction(12, 3, 1, 113000, 200000),
		auction(13, 3, 1, 114000, 200000), // two auctions, one row
		bid(1, 1, 1, 130000),              // bids advance the watermark too: 126000
		person(6, "fay", "c", "OR", 111000),
		auction(14, 6, 1, 115000, 200000), // both late for [110000, 120000)
		person(5, "eve", "c", "OR", 121000),
		auction(15, 5, 1, 122000, 200000), // [120000, 130000) is still open
	}
	expect(t, "q8", lines,
		`{"id":1,"name":"alice","stime":100000}`,
		`{"id":3,"name":"carl","stime":110000}`,
		`{"id":5,"name":"eve","stime":120000}`,
	)
}

func TestQ9(t *testing.T) {
	lines := []string{
		auction(1, 100, 10, 100000, 200000),
		bid(1, 1, 50, 150000),
		bid(1, 2, 50, 140000), // same price, earlier: wins
		bid(1, 3, 99, 200001), // after expires
		bid(1, 4, 99, 99999),  // before the auction
		auction(2, 100, 10, 100000, 110000),
		bid(2, 3, 10, 110000), // exactly at expires: valid
		auction(3, 100, 10, 100000, 110000),
		bid(4, 7, 5, 105000), // before its auction arrives: regular join
		auction(4, 100, 10, 100000, 110000),
		bid(4, 8, 5, 105000), // full tie: the earlier bid in the file wins
	}
	expect(t, "q9", lines,
		`{"auction":1,"bid_datetime":140000,"bid_extra":"bx","bidder":2,"category":10,"datetime":100000,"description":"desc","expires":200000,"extra":"ax","id":1,"initialbid":1,"itemname":"item1","price":50,"reserve":2,"seller":100}`,
		`{"auction":2,"bid_datetime":110000,"bid_extra":"bx","bidder":3,"category":10,"datetime":100000,"description":"desc","expires":110000,"extra":"ax","id":2,"initialbid":1,"itemname":"item2","price":10,"reserve":2,"seller":100}`,
		`{"auction":4,"bid_datetime":105000,"bid_extra":"bx","bidder":7,"category":10,"datetime":100000,"description":"desc","expires":110000,"extra":"ax","id":4,"initialbid":1,"itemname":"item4","price":5,"reserve":2,"seller":100}`,
	)
}

func TestQ10(t *testing.T) {
	expect(t, "q10", []string{bid(1, 2, 3, 0), bid(1, 2, 3, 1700000000000)},
		`{"auction":1,"bidder":2,"datetime":0,"dt":"1970-01-01","extra":"bx","hm":"00:00","price":3}`,
		`{"auction":1,"bidder":2,"datetime":1700000000000,"dt":"2023-11-14","extra":"bx","hm":"22:13","price":3}`,
	)
}

func TestQ11(t *testing.T) {
	lines := []string{
		bid(1, 1, 1, 100000),
		bid(1, 2, 1, 100000),
		bid(1, 1, 1, 110000), // exactly 10 s later: merges
		bid(1, 2, 1, 110001), // 10.001 s later: new session
		bid(1, 1, 1, 120000), // merges again
		bid(1, 4, 1, 140000), // session [140000, 150000)
		bid(1, 5, 1, 150000), // watermark becomes 146000
		bid(1, 4, 1, 136000), // own window [136000, 146000) is late, but it merges with a live session
		bid(1, 6, 1, 135000), // late, nothing to merge with: dropped
		bid(1, 7, 1, 151000), // session [151000, 161000)
		bid(1, 8, 1, 170000), // watermark becomes 166000: bidder 7's session fires
		bid(1, 7, 1, 157000), // inside the fired session's range: a new session
	}
	expect(t, "q11", lines,
		`{"bid_count":3,"bidder":1,"endtime":130000,"starttime":100000}`,
		`{"bid_count":1,"bidder":2,"endtime":110000,"starttime":100000}`,
		`{"bid_count":1,"bidder":2,"endtime":120001,"starttime":110001}`,
		`{"bid_count":2,"bidder":4,"endtime":150000,"starttime":136000}`,
		`{"bid_count":1,"bidder":5,"endtime":160000,"starttime":150000}`,
		`{"bid_count":1,"bidder":7,"endtime":161000,"starttime":151000}`,
		`{"bid_count":1,"bidder":7,"endtime":167000,"starttime":157000}`,
		`{"bid_count":1,"bidder":8,"endtime":180000,"starttime":170000}`,
	)
	// A bid touching two live sessions joins them into one.
	expect(t, "q11", []string{bid(1, 1, 1, 100000), bid(1, 1, 1, 112000), bid(1, 1, 1, 105000)},
		`{"bid_count":3,"bidder":1,"endtime":122000,"starttime":100000}`,
	)
}

func TestQ14(t *testing.T) {
	const h = 3600000
	bidX := func(price, t int64, extra string) string {
		return fmt.Sprintf(`{"event_type":2,"bid":{"auction":1,"bidder":2,"price":%d,"channel":"ch","url":"u","date_time":%d,"extra":%q}}`, price, t, extra)
	}
	expect(t, "q14", []string{
		bidX(1101322, 8*h, "cc"),          // 0.908*p = 1000000.376: in; 08:00 is day
		bidX(1101321, 8*h, ""),            // 999999.468: out
		bidX(55066079, 18*h+59*60000, ""), // 49999999.732: in; 18:59 is day
		bidX(55066080, 12*h, ""),          // 50000000.640: out
		bidX(2000000, 7*h, "abc"),         // 07:xx: other
		bidX(2000000, 19*h, "cxc\u00e7"),  // 19:xx: other; ç is not the byte 'c'
		bidX(2000000, 6*h+59*60000, "C"),  // 06:59: night; 'C' is not 'c'
		bidX(2000000, 20*h, ""),           // 20:00: night
	},
		`{"auction":1,"bidder":2,"bidtimetype":"dayTime","c_counts":2,"datetime":28800000,"extra":"cc","price":1000000.376}`,
		`{"auction":1,"bidder":2,"bidtimetype":"dayTime","c_counts":0,"datetime":68340000,"extra":"","price":49999999.732}`,
		`{"auction":1,"bidder":2,"bidtimetype":"otherTime","c_counts":1,"datetime":25200000,"extra":"abc","price":1816000.000}`,
		`{"auction":1,"bidder":2,"bidtimetype":"otherTime","c_counts":2,"datetime":68400000,"extra":"cxcç","price":1816000.000}`,
		`{"auction":1,"bidder":2,"bidtimetype":"nightTime","c_counts":0,"datetime":25140000,"extra":"C","price":1816000.000}`,
		`{"auction":1,"bidder":2,"bidtimetype":"nightTime","c_counts":0,"datetime":72000000,"extra":"","price":1816000.000}`,
	)
}

func TestQ17(t *testing.T) {
	const day = 86400000
	expect(t, "q17", []string{
		bid(1, 1, 9999, 1000),
		bid(1, 2, 10000, 2000),
		bid(1, 3, 999999, 3000),
		bid(1, 4, 1000000, day-1),
		bid(1, 5, 4, day), // next day
		bid(2, 5, 7, 5000),
	},
		`{"auction":1,"avg_price":504999,"day":"1970-01-01","max_price":1000000,"min_price":9999,"rank1_bids":1,"rank2_bids":2,"rank3_bids":1,"sum_price":2019998,"total_bids":4}`,
		`{"auction":1,"avg_price":4,"day":"1970-01-02","max_price":4,"min_price":4,"rank1_bids":1,"rank2_bids":0,"rank3_bids":0,"sum_price":4,"total_bids":1}`,
		`{"auction":2,"avg_price":7,"day":"1970-01-01","max_price":7,"min_price":7,"rank1_bids":1,"rank2_bids":0,"rank3_bids":0,"sum_price":7,"total_bids":1}`,
	)
}

func TestQ20(t *testing.T) {
	expect(t, "q20", []string{
		bid(1, 7, 100, 500), // before its auction: regular join
		auction(1, 9, 10, 1000, 2000),
		auction(2, 9, 11, 1000, 2000),
		bid(2, 7, 100, 1500), // category 11
		bid(1, 8, 200, 9999), // outside the lifetime: q20 does not care
		bid(3, 8, 200, 1500), // no auction
	},
		`{"auction":1,"auction_datetime":1000,"auction_extra":"ax","bid_datetime":500,"bid_extra":"bx","bidder":7,"category":10,"channel":"ch","description":"desc","expires":2000,"initialbid":1,"itemname":"item1","price":100,"reserve":2,"seller":9,"url":"u"}`,
		`{"auction":1,"auction_datetime":1000,"auction_extra":"ax","bid_datetime":9999,"bid_extra":"bx","bidder":8,"category":10,"channel":"ch","description":"desc","expires":2000,"initialbid":1,"itemname":"item1","price":200,"reserve":2,"seller":9,"url":"u"}`,
	)
}

func TestEvaluateAll(t *testing.T) {
	input := strings.Join([]string{bid(123, 1, 10, 1000), bid(124, 2, 20, 2000)}, "\n")
	all, err := EvaluateAll(Queries(), strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range Queries() {
		single, err := Evaluate(q, strings.NewReader(input))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(all[q], single) {
			t.Errorf("%s: EvaluateAll %v, Evaluate %v", q, all[q], single)
		}
	}
	if got := all["q2"]; !reflect.DeepEqual(got, []string{`{"auction":123,"price":10}`}) {
		t.Errorf("q2 = %v", got)
	}
	if _, err := EvaluateAll([]string{"q0", "nope"}, strings.NewReader(input)); err == nil {
		t.Errorf("unknown query accepted")
	}
}

// TestIndependence guards the package's independence from the code it checks.
func TestIndependence(t *testing.T) {
	for _, imp := range importsOfPackage(t) {
		if strings.HasPrefix(imp, "github.com/weirstream/weir") {
			t.Errorf("batchref must not import %s", imp)
		}
	}
}

func importsOfPackage(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), e.Name(), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			imports = append(imports, strings.Trim(imp.Path.Value, `"`))
		}
	}
	if len(imports) == 0 {
		t.Fatal("found no imports at all")
	}
	return imports
}
