package nexmark_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/weirstream/weir"
	gen "github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/sql/connector"
	_ "github.com/weirstream/weir/sql/connector/builtin"
	"github.com/weirstream/weir/sql/types"
)

func f(name string, t types.Type) types.Field { return types.Field{Name: name, Type: t} }

// The physical columns of Flink's Nexmark ddl.
var ddl = types.Schema{
	f("event_type", types.IntType),
	f("person", types.RowOf(f("id", types.BigIntType), f("name", types.StringType), f("emailAddress", types.StringType),
		f("creditCard", types.StringType), f("city", types.StringType), f("state", types.StringType),
		f("dateTime", types.Timestamp3), f("extra", types.StringType))),
	f("auction", types.RowOf(f("id", types.BigIntType), f("itemName", types.StringType), f("description", types.StringType),
		f("initialBid", types.BigIntType), f("reserve", types.BigIntType), f("dateTime", types.Timestamp3),
		f("expires", types.Timestamp3), f("seller", types.BigIntType), f("category", types.BigIntType), f("extra", types.StringType))),
	f("bid", types.RowOf(f("auction", types.BigIntType), f("bidder", types.BigIntType), f("price", types.BigIntType),
		f("channel", types.StringType), f("url", types.StringType), f("dateTime", types.Timestamp3), f("extra", types.StringType))),
}

func TestRowsAreTheGeneratorsEvents(t *testing.T) {
	const n = 2000
	tab := &connector.Table{Name: "nexmark", Schema: ddl, Settings: connector.Settings{Parallelism: 2}, Options: map[string]string{
		"connector": "nexmark", "first-event.rate": "10000", "next-event.rate": "10000", "events.num": "2000",
		"person.proportion": "1", "auction.proportion": "3", "bid.proportion": "46",
	}}
	src, err := connector.CreateSource(tab)
	if err != nil {
		t.Fatal(err)
	}
	if !src.Bounded {
		t.Fatal("not bounded")
	}
	job := weir.NewJob("nexmark", weir.Parallelism(2))
	var mu sync.Mutex
	var rows []types.Row
	weir.To(weir.FromSource(job, "nexmark", src.Source, weir.NoWatermarks[types.Row]()), weir.SinkFunc[types.Row](func(_ context.Context, rs []types.Row) error {
		mu.Lock()
		defer mu.Unlock()
		rows = append(rows, rs...)
		return nil
	}))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(rows) != n {
		t.Fatalf("%d rows, want %d", len(rows), n)
	}
	g, err := gen.NewGenerator(gen.GeneratorConfig{Events: n, EventRate: 10000})
	if err != nil {
		t.Fatal(err)
	}
	dt := func(r types.Row) int64 {
		for _, c := range r.Values[1:] {
			if !c.Null {
				return c.List()[map[int]int{0: 6, 1: 5, 2: 5}[int(r.Values[0].I)]].I
			}
		}
		return -1
	}
	// Events of one split are in order; order all by (dateTime, then the
	// generator's order via the event's own fields) to compare.
	byKey := map[string]types.Row{}
	key := func(r types.Row) string { b, _ := r.MarshalBinary(); return string(b) }
	for _, r := range rows {
		byKey[key(r)] = r
	}
	var e gen.Event
	counts := map[int64]int{}
	for i := int64(0); i < n; i++ {
		g.Event(i, &e)
		want := types.Row{Values: []types.Value{{I: int64(e.Type)}, types.NullValue, types.NullValue, types.NullValue}}
		switch e.Type {
		case gen.PersonEvent:
			p := e.Person
			want.Values[1] = types.ListValue([]types.Value{{I: p.ID}, {S: p.Name}, {S: p.EmailAddress}, {S: p.CreditCard}, {S: p.City}, {S: p.State}, {I: p.DateTime * 1000}, {S: p.Extra}})
		case gen.AuctionEvent:
			a := e.Auction
			want.Values[2] = types.ListValue([]types.Value{{I: a.ID}, {S: a.ItemName}, {S: a.Description}, {I: a.InitialBid}, {I: a.Reserve}, {I: a.DateTime * 1000}, {I: a.Expires * 1000}, {I: a.Seller}, {I: a.Category}, {S: a.Extra}})
		case gen.BidEvent:
			b := e.Bid
			want.Values[3] = types.ListValue([]types.Value{{I: b.Auction}, {I: b.Bidder}, {I: b.Price}, {S: b.Channel}, {S: b.URL}, {I: b.DateTime * 1000}, {S: b.Extra}})
		}
		if _, ok := byKey[key(want)]; !ok {
			t.Fatalf("event %d (%v) not among the rows", i, e.Type)
		}
		counts[int64(e.Type)]++
		if got := dt(want); got != e.DateTime()*1000 {
			t.Fatalf("dateTime %d, want %d", got, e.DateTime()*1000)
		}
	}
	if counts[0] == 0 || counts[1] == 0 || counts[2] == 0 {
		t.Fatalf("counts %v", counts)
	}
}

func TestSubsetAndErrors(t *testing.T) {
	// A subset, reordered, names in another case.
	s := types.Schema{f("BID", types.RowOf(f("price", types.BigIntType), f("DATETIME", types.Timestamp3))), f("event_type", types.IntType)}
	src, err := connector.CreateSource(&connector.Table{Name: "n", Schema: s, Options: map[string]string{"connector": "nexmark", "events.num": "50"}})
	if err != nil {
		t.Fatal(err)
	}
	job := weir.NewJob("n")
	c := weir.Collect(weir.FromSource(job, "n", src.Source, weir.NoWatermarks[types.Row]()))
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var bids int
	for _, r := range c.Items() {
		if r.Values[1].I == 2 {
			bids++
			if len(r.Values[0].List()) != 2 || r.Values[0].List()[1].I <= 0 {
				t.Fatalf("bid row %+v", r)
			}
		} else if !r.Values[0].Null {
			t.Fatalf("a non-bid with a bid: %+v", r)
		}
	}
	if len(c.Items()) != 50 || bids == 0 {
		t.Fatalf("%d rows, %d bids", len(c.Items()), bids)
	}
	for _, c := range []struct {
		schema types.Schema
		opts   map[string]string
		want   string
	}{
		{ddl, map[string]string{"first-event.rate": "10", "next-event.rate": "20"}, "must equal 'first-event.rate' (10)"},
		{ddl, map[string]string{"events.num": "x"}, "option 'events.num' = 'x': not an integer"},
		{ddl, map[string]string{"rate.shape": "SINE"}, "unsupported options found for 'nexmark': 'rate.shape'"},
		{types.Schema{f("bid", types.RowOf(f("price", types.StringType)))}, nil, "column 'bid.price' has type STRING; the nexmark connector gives BIGINT"},
		{types.Schema{f("bid", types.RowOf(f("cost", types.BigIntType)))}, nil, "column 'bid.cost' is not a field of a nexmark bid"},
		{types.Schema{f("sale", types.IntType)}, nil, "column 'sale' is not one of the nexmark table's"},
	} {
		opts := map[string]string{"connector": "nexmark"}
		for k, v := range c.opts {
			opts[k] = v
		}
		_, err := connector.CreateSource(&connector.Table{Name: "n", Schema: c.schema, Options: opts})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.opts, err, c.want)
		}
	}
	_, err = connector.CreateSink(&connector.Table{Name: "n", Schema: ddl, Options: map[string]string{"connector": "nexmark"}})
	if err == nil || !strings.Contains(err.Error(), "can only be read from") {
		t.Fatal(err)
	}
}

// The generator's JSON lines (nexmark.Event.AppendJSON, snake_case keys and
// epoch-millisecond times) read by the filesystem connector with the ddl's
// schema and 'json.key-matching' = 'loose' give the connector's rows.
func TestJSONLinesGiveTheSameRows(t *testing.T) {
	const n = 500
	g, err := gen.NewGenerator(gen.GeneratorConfig{Events: n})
	if err != nil {
		t.Fatal(err)
	}
	var b []byte
	var e gen.Event
	for i := int64(0); i < n; i++ {
		g.Event(i, &e)
		b = append(e.AppendJSON(b), '\n')
	}
	path := filepath.Join(t.TempDir(), "events.jsonl")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func(opts map[string]string) []types.Row {
		src, err := connector.CreateSource(&connector.Table{Name: "nexmark", Schema: ddl, Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		job := weir.NewJob("read")
		c := weir.Collect(weir.FromSource(job, "in", src.Source, weir.NoWatermarks[types.Row]()))
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return c.Items()
	}
	gotFile := read(map[string]string{"connector": "filesystem", "path": path, "format": "json", "json.key-matching": "loose"})
	gotGen := read(map[string]string{"connector": "nexmark", "events.num": "500"})
	if len(gotFile) != n || len(gotGen) != n {
		t.Fatalf("%d and %d rows", len(gotFile), len(gotGen))
	}
	for i := range gotGen {
		if !gotFile[i].Equal(gotGen[i]) {
			t.Fatalf("event %d: file %+v, generator %+v", i, gotFile[i], gotGen[i])
		}
	}
}
