package nexmark_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/weirstream/weir/nexmark"
)

// Generated events survive a round trip, and encoding/json reads the
// lines as the documented shape.
func TestJSONRoundTrip(t *testing.T) {
	g := gen(t, nexmark.GeneratorConfig{Seed: 5})
	var e, back nexmark.Event
	for i := int64(0); i < 2000; i++ {
		g.Event(i, &e)
		line := e.AppendJSON(nil)
		if err := nexmark.DecodeJSON(line, &back); err != nil {
			t.Fatalf("event %d: %v: %s", i, err, line)
		}
		if back != e {
			t.Fatalf("event %d: round trip gives %+v, want %+v", i, back, e)
		}
		var m map[string]map[string]any
		var typ struct {
			EventType int `json:"event_type"`
		}
		if err := json.Unmarshal(line, &typ); err != nil {
			t.Fatalf("event %d: encoding/json: %v: %s", i, err, line)
		}
		_ = json.Unmarshal(line, &m) // event_type is not an object: only the records matter
		keys := map[nexmark.EventType][]string{
			nexmark.PersonEvent:  {"id", "name", "email_address", "credit_card", "city", "state", "date_time", "extra"},
			nexmark.AuctionEvent: {"id", "item_name", "description", "initial_bid", "reserve", "date_time", "expires", "seller", "category", "extra"},
			nexmark.BidEvent:     {"auction", "bidder", "price", "channel", "url", "date_time", "extra"},
		}[e.Type]
		rec := m[e.Type.String()]
		if typ.EventType != int(e.Type) || len(rec) != len(keys) || len(m) != 2 {
			t.Fatalf("event %d: shape %s", i, line)
		}
		for _, k := range keys {
			if _, ok := rec[k]; !ok {
				t.Fatalf("event %d: no %q in %s", i, k, line)
			}
		}
	}
}

func TestDecodeJSON(t *testing.T) {
	var e nexmark.Event
	ok := `{"bid":{"extra":"a\"b\\c\u00e9\ud83d\ude00","auction":1,"zzz":[1,{"x":null}],"bidder":2,"price":3,"channel":"c","url":"u","date_time":4}, "event_type":2, "person":null}`
	if err := nexmark.DecodeJSON([]byte(ok), &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != nexmark.BidEvent || e.Bid.Extra != "a\"b\\cé😀" || e.Bid.Auction != 1 || e.Bid.DateTime != 4 {
		t.Errorf("decoded %+v", e)
	}
	for _, bad := range []string{
		``, `{}`, `{"event_type":2}`, `{"event_type":3,"bid":{}}`, `{"event_type":0,"bid":{}}`,
		`{"event_type":2,"bid":{"price":1.5}}`, `{"event_type":2,"bid":{"price":"1"}}`,
		`{"event_type":2,"bid":{}} x`, `{"event_type":2,"bid":{"url":"\q"}}`, `{"event_type":2,"bid":{`,
	} {
		if err := nexmark.DecodeJSON([]byte(bad), &e); !errors.Is(err, nexmark.ErrSyntax) {
			t.Errorf("DecodeJSON(%q) = %v, want ErrSyntax", bad, err)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	g, _ := nexmark.NewGenerator(nexmark.GeneratorConfig{})
	var e nexmark.Event
	for i := int64(0); i < 50; i += 3 {
		g.Event(i, &e)
		f.Add(e.AppendJSON(nil))
	}
	f.Add([]byte(`{"event_type":2,"bid":{"extra":"\ud800x\u0041"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var e, back nexmark.Event
		if nexmark.DecodeJSON(b, &e) != nil {
			return
		}
		// What decodes encodes to JSON that decodes to the same event
		// (invalid UTF-8 aside, which becomes U+FFFD).
		line := e.AppendJSON(nil)
		if !json.Valid(line) {
			t.Fatalf("invalid JSON %s from %q", line, b)
		}
		if err := nexmark.DecodeJSON(line, &back); err != nil {
			t.Fatalf("re-decoding %s: %v", line, err)
		}
		if string(back.AppendJSON(nil)) != string(line) {
			t.Fatalf("not stable: %s", line)
		}
	})
}
