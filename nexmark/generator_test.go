package nexmark_test

import (
	"context"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/weirstream/weir/nexmark"
)

func gen(t *testing.T, cfg nexmark.GeneratorConfig) *nexmark.Generator {
	t.Helper()
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func within(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %.4f, want %.4f ± %.4f", what, got, want, tol)
	}
}

// The reference's proportions, id sequences, hot ratios and ranges.
func TestGeneratorDistributions(t *testing.T) {
	n := 500_000
	if raceEnabled {
		n = 100_000
	}
	g := gen(t, nexmark.GeneratorConfig{Events: int64(n), Seed: 7})
	var (
		kinds                          [3]int
		nextPerson, nextAuction        int64 = nexmark.FirstPersonID, nexmark.FirstAuctionID
		hotAuction, hotBidder, hotSell int
		hotChannel                     int
		categories                     [nexmark.NumCategories]int
		prices                         []int64
		extraLen                       int
		prevTime                       int64
	)
	var e nexmark.Event
	for i := int64(0); i < int64(n); i++ {
		g.Event(i, &e)
		kinds[e.Type]++
		if tm := e.DateTime(); tm < prevTime || tm != g.Timestamp(i) {
			t.Fatalf("event %d: date_time %d after %d, want %d", i, tm, prevTime, g.Timestamp(i))
		}
		prevTime = e.DateTime()
		// The latest person and auction ids created so far.
		lastP, lastA := nextPerson-1, nextAuction-1
		switch e.Type {
		case nexmark.PersonEvent:
			if e.Person.ID != nextPerson {
				t.Fatalf("event %d: person id %d, want %d", i, e.Person.ID, nextPerson)
			}
			nextPerson++
		case nexmark.AuctionEvent:
			a := &e.Auction
			if a.ID != nextAuction {
				t.Fatalf("event %d: auction id %d, want %d", i, a.ID, nextAuction)
			}
			nextAuction++
			if a.Seller == (lastP-nexmark.FirstPersonID)/100*100+nexmark.FirstPersonID {
				hotSell++
			}
			if a.Seller > lastP+10 || a.Seller < nexmark.FirstPersonID {
				t.Fatalf("event %d: seller %d outside [1000, %d]", i, a.Seller, lastP+10)
			}
			if a.Category < nexmark.FirstCategoryID || a.Category >= nexmark.FirstCategoryID+nexmark.NumCategories {
				t.Fatalf("event %d: category %d", i, a.Category)
			}
			categories[a.Category-nexmark.FirstCategoryID]++
			if a.Reserve < a.InitialBid || a.Expires <= a.DateTime {
				t.Fatalf("event %d: reserve %d < initial bid %d or expires %d <= %d", i, a.Reserve, a.InitialBid, a.Expires, a.DateTime)
			}
		case nexmark.BidEvent:
			b := &e.Bid
			if b.Auction == (lastA-nexmark.FirstAuctionID)/100*100+nexmark.FirstAuctionID {
				hotAuction++
			} else if b.Auction < lastA-100 || b.Auction > lastA+10 {
				t.Fatalf("event %d: cold auction %d outside [%d, %d]", i, b.Auction, lastA-100, lastA+10)
			}
			if b.Bidder == (lastP-nexmark.FirstPersonID)/100*100+nexmark.FirstPersonID+1 {
				hotBidder++
			} else if b.Bidder < max(lastP-1000, nexmark.FirstPersonID) || b.Bidder > lastP+10 {
				t.Fatalf("event %d: cold bidder %d outside [%d, %d]", i, b.Bidder, lastP-1000, lastP+10)
			}
			if b.Price < 100 || b.Price > 100_000_000 {
				t.Fatalf("event %d: price %d", i, b.Price)
			}
			switch b.Channel {
			case "Google", "Facebook", "Baidu", "Apple":
				hotChannel++
			}
			prices = append(prices, b.Price)
			extraLen += len(b.Extra)
			if len(b.Extra) < 54 || len(b.Extra) > 81 {
				t.Fatalf("event %d: bid extra of %d bytes, want 68 ± 20%%", i, len(b.Extra))
			}
		}
	}
	// 1 person, 3 auctions, 46 bids in every 50 events, exactly.
	if kinds != [3]int{n / 50, 3 * n / 50, 46 * n / 50} {
		t.Errorf("kinds %v, want 1:3:46 of %d", kinds, n)
	}
	bids, auctions := float64(kinds[2]), float64(kinds[1])
	// Hot auction w.p. 1 - 1/2 (plus the cold picks that land on it, about
	// 1/111 of the rest); hot bidder and seller w.p. 1 - 1/4 (plus a cold
	// pick of the same person, 1/1010 of the rest).
	within(t, "hot auction share", float64(hotAuction)/bids, 0.5+0.5/111, 0.01)
	within(t, "hot bidder share", float64(hotBidder)/bids, 0.75+0.25/1010, 0.01)
	within(t, "hot seller share", float64(hotSell)/auctions, 0.75+0.25/1010, 0.01)
	within(t, "hot channel share", float64(hotChannel)/bids, 0.5, 0.01)
	for _, k := range categories {
		within(t, "category share", float64(k)/auctions, 1.0/nexmark.NumCategories, 0.01)
	}
	// Prices are log-uniform over [100, 10⁸]: median 10⁵, a sixth per decade.
	slices.Sort(prices)
	within(t, "log10 median price", math.Log10(float64(prices[len(prices)/2])), 5, 0.02)
	within(t, "share below $10", float64(countBelow(prices, 1000))/bids, 1.0/6, 0.01)
	within(t, "mean bid extra", float64(extraLen)/bids, 67.5, 0.5)
}

func countBelow(sorted []int64, v int64) int {
	i, _ := slices.BinarySearch(sorted, v)
	return i
}

// Event time advances 1/EventRate per event from BaseTime, truncated to ms.
func TestGeneratorTimestamps(t *testing.T) {
	g := gen(t, nexmark.GeneratorConfig{EventRate: 3000})
	for _, c := range []struct{ n, want int64 }{{0, 0}, {1, 0}, {2, 0}, {3, 1}, {3000, 1000}, {2999, 999}} {
		if got := g.Timestamp(c.n) - nexmark.DefaultBaseTime; got != c.want {
			t.Errorf("Timestamp(%d) = base + %d, want base + %d", c.n, got, c.want)
		}
	}
	for _, tm := range []int64{0, 1, 999, 1000, 12345} {
		n := g.EventNumberAt(nexmark.DefaultBaseTime + tm)
		if g.Timestamp(n) < nexmark.DefaultBaseTime+tm || n > 0 && g.Timestamp(n-1) >= nexmark.DefaultBaseTime+tm {
			t.Errorf("EventNumberAt(base + %d) = %d", tm, n)
		}
	}
}

// Events depend on the seed and the event number only: reading the source
// in 1 or 3 splits gives the same events, and another seed others.
func TestSourceSplitsAreDeterministic(t *testing.T) {
	read := func(cfg nexmark.GeneratorConfig) map[int64]nexmark.Event {
		src := nexmark.Source(cfg)
		splits, err := src.Splits(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		out := map[int64]nexmark.Event{}
		for _, sp := range splits {
			r, err := src.Open(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]nexmark.Event, 100)
			var seen int64
			for {
				k, err := r.Read(context.Background(), buf)
				for _, e := range buf[:k] {
					out[int64(len(out))] = e
					seen++
				}
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			r.Close()
		}
		return out
	}
	cfg := nexmark.GeneratorConfig{Events: 5000, Seed: 3}
	one := read(cfg)
	cfg.Splits = 3
	three := read(cfg)
	key := func(m map[int64]nexmark.Event) []string {
		var s []string
		for _, e := range m {
			s = append(s, string(e.AppendJSON(nil)))
		}
		slices.Sort(s)
		return s
	}
	if !slices.Equal(key(one), key(three)) {
		t.Error("1 and 3 splits give different events")
	}
	cfg.Seed = 4
	if slices.Equal(key(one), key(read(cfg))) {
		t.Error("seeds 3 and 4 give the same events")
	}
	if len(one) != 5000 {
		t.Errorf("%d events, want 5000", len(one))
	}
}

// A split reopened at its checkpointed position goes on with the same
// events.
func TestSourceRestore(t *testing.T) {
	src := nexmark.Source(nexmark.GeneratorConfig{Events: 1000, Splits: 2, Seed: 9})
	splits, _ := src.Splits(context.Background())
	r, _ := src.Open(context.Background(), splits[1])
	buf := make([]nexmark.Event, 100)
	if k, err := r.Read(context.Background(), buf[:37]); k != 37 || err != nil {
		t.Fatalf("read %d, %v", k, err)
	}
	pos, _ := r.(interface{ Position() ([]byte, error) }).Position()
	k1, _ := r.Read(context.Background(), buf)
	want := slices.Clone(buf[:k1])
	r2, err := src.OpenAt(context.Background(), splits[1], pos)
	if err != nil {
		t.Fatal(err)
	}
	k2, _ := r2.Read(context.Background(), buf)
	if k2 != k1 || !slices.EqualFunc(buf[:k2], want, func(a, b nexmark.Event) bool { return string(a.AppendJSON(nil)) == string(b.AppendJSON(nil)) }) {
		t.Error("restored split reads other events")
	}
	if _, err := src.OpenAt(context.Background(), splits[0], pos); err == nil {
		t.Error("split 0 accepted split 1's position")
	}
}

func TestBadConfigFailsAtStart(t *testing.T) {
	if _, err := nexmark.Source(nexmark.GeneratorConfig{EventRate: -1}).Splits(context.Background()); err == nil {
		t.Error("negative event rate accepted")
	}
}

// BenchmarkGenerator: events/s of one goroutine; 0 allocs/op (a person
// allocates one buffer, 1 event in 50).
func BenchmarkGenerator(b *testing.B) {
	g, _ := nexmark.NewGenerator(nexmark.GeneratorConfig{})
	var e nexmark.Event
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.Event(int64(i), &e)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	g, _ := nexmark.NewGenerator(nexmark.GeneratorConfig{})
	var e nexmark.Event
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		g.Event(int64(i), &e)
		buf = e.AppendJSON(buf[:0])
	}
}
