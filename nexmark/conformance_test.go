package nexmark_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/weirstream/weir"
	"github.com/weirstream/weir/connector/file"
	"github.com/weirstream/weir/nexmark"
	"github.com/weirstream/weir/nexmark/batchref"
)

// conformanceEvents: enough event time at conformanceRate for several 10 s
// windows (q7), many hopping windows (q5) and sessions that close (q11).
func conformanceConfig() nexmark.GeneratorConfig {
	n := int64(60_000) // 30 s of event time
	if raceEnabled {
		n = 30_000
	}
	return nexmark.GeneratorConfig{Events: n, Seed: 42, EventRate: 2000}
}

// writeEventFile writes cfg's events as `weir nexmark gen` does.
func writeEventFile(t *testing.T, cfg nexmark.GeneratorConfig) string {
	t.Helper()
	g, err := nexmark.NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var e nexmark.Event
	var line []byte
	for i := int64(0); i < cfg.Events; i++ {
		g.Event(i, &e)
		line = append(e.AppendJSON(line[:0]), '\n')
		buf.Write(line)
	}
	path := filepath.Join(t.TempDir(), "events.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runQuery runs q over src at parallelism p and returns its rows: those
// written, or for an updating query the final upsert view.
func runQuery(t *testing.T, q *nexmark.Query, src weir.Source[nexmark.Event], p int) []string {
	t.Helper()
	var buf bytes.Buffer
	jl := nexmark.NewJSONLines(&buf)
	view := nexmark.NewUpsertView()
	out := jl.Output()
	if q.Updating() {
		out = view.Output()
	}
	job := weir.NewJob("conformance-"+q.Name, weir.Parallelism(p))
	q.Build(nexmark.Events(job, src), out)
	if err := job.Run(context.Background()); err != nil {
		t.Fatalf("%s at parallelism %d: %v", q.Name, p, err)
	}
	if err := jl.Flush(); err != nil {
		t.Fatal(err)
	}
	if q.Updating() {
		if jl.Rows() != 0 {
			t.Fatalf("%s: updating query wrote %d rows past its view", q.Name, jl.Rows())
		}
		if _, err := view.WriteTo(&buf); err != nil {
			t.Fatalf("%s at parallelism %d: %v", q.Name, p, err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// canonical decodes JSON rows (numbers kept as written) and encodes them
// again with sorted keys, as encoding/json encodes a map[string]any (what
// batchref writes), sorted as a multiset. Rows are flat objects; each is
// checked to be valid JSON, then rewritten by canonicalRow (encoding/json's
// decoding and encoding of every row took most of the test's time under
// the race detector); TestCanonicalRow checks canonicalRow against
// encoding/json.
func canonical(t *testing.T, rows []string) []string {
	t.Helper()
	out := make([]string, len(rows))
	for i, r := range rows {
		c, err := canonicalRow(r)
		if err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		out[i] = c
	}
	slices.Sort(out)
	return out
}

// canonicalJSON is canonical's definition: encoding/json's decoding into
// a map (UseNumber) and encoding.
func canonicalJSON(r string) (string, error) {
	d := json.NewDecoder(strings.NewReader(r))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return "", err
	}
	b, err := json.Marshal(m)
	return string(b), err
}

// canonicalRow is canonicalJSON for a flat object (values strings,
// numbers, true, false, null), which it parses by hand; anything else
// goes to canonicalJSON.
func canonicalRow(r string) (string, error) {
	if !json.Valid([]byte(r)) {
		return "", fmt.Errorf("not JSON")
	}
	type field struct{ key, val string }
	var fields []field
	i := 0
	skip := func() {
		for i < len(r) && (r[i] == ' ' || r[i] == '\t' || r[i] == '\n' || r[i] == '\r') {
			i++
		}
	}
	str := func() (string, bool) { // r[i] == '"'
		j := i + 1
		esc := false
		for ; j < len(r) && r[j] != '"'; j++ {
			if r[j] == '\\' {
				esc = true
				j++
			}
		}
		raw := r[i : j+1]
		i = j + 1
		if !esc && utf8.ValidString(raw) {
			return raw[1 : len(raw)-1], true
		}
		var s string
		return s, json.Unmarshal([]byte(raw), &s) == nil
	}
	skip()
	if i == len(r) || r[i] != '{' {
		return canonicalJSON(r)
	}
	i++
	for {
		skip()
		if r[i] == '}' {
			break
		}
		if r[i] == ',' {
			i++
			skip()
		}
		k, ok := str()
		if !ok {
			return canonicalJSON(r)
		}
		skip()
		i++ // ':'
		skip()
		var v string
		switch r[i] {
		case '"':
			s, ok := str()
			if !ok {
				return canonicalJSON(r)
			}
			v = string(appendJSONString(nil, s))
		case '{', '[':
			return canonicalJSON(r)
		default:
			j := i
			for j < len(r) && r[j] != ',' && r[j] != '}' && r[j] != ' ' && r[j] != '\t' && r[j] != '\n' && r[j] != '\r' {
				j++
			}
			v, i = r[i:j], j
		}
		fields = append(fields, field{k, v})
	}
	slices.SortStableFunc(fields, func(a, b field) int { return strings.Compare(a.key, b.key) })
	var b []byte
	b = append(b, '{')
	for n, f := range fields {
		if n > 0 && fields[n-1].key == f.key {
			return canonicalJSON(r) // a repeated key: the last one wins
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(appendJSONString(b, f.key), ':')
		b = append(b, f.val...)
	}
	return string(append(b, '}')), nil
}

// appendJSONString appends s as encoding/json encodes a string (HTML
// characters escaped, invalid UTF-8 replaced).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\b':
				dst = append(dst, '\\', 'b')
			case c == '\f':
				dst = append(dst, '\\', 'f')
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, `\u202`...)
			dst = append(dst, hex[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}

// diff describes how two sorted multisets differ (a few rows each way).
func diff(got, want []string) string {
	var missing, extra []string
	i, j := 0, 0
	for i < len(got) || j < len(want) {
		switch {
		case j == len(want) || i < len(got) && got[i] < want[j]:
			extra = append(extra, got[i])
			i++
		case i == len(got) || got[i] > want[j]:
			missing = append(missing, want[j])
			j++
		default:
			i++
			j++
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return ""
	}
	cut := func(s []string) []string { return s[:min(len(s), 5)] }
	return fmt.Sprintf("%d rows, want %d; %d missing, e.g. %v; %d unexpected, e.g. %v",
		len(got), len(want), len(missing), cut(missing), len(extra), cut(extra))
}

// TestConformance checks every query that both weir and the batch
// evaluator implement: weir's rows over a generated file, at parallelism 1
// (the file's events) and 2 (generating the same events in two splits),
// equal batchref's as multisets. The first query reads the file with
// connector/file, as `weir nexmark run --input` does; the others get the
// file's lines decoded once (reading the file again per query was a fifth
// of the test's time under the race detector).
func TestConformance(t *testing.T) {
	cfg := conformanceConfig()
	path := writeEventFile(t, cfg)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var decoded []nexmark.Event
	for line := range bytes.Lines(data) {
		var e nexmark.Event
		if err := nexmark.DecodeJSON(line, &e); err != nil {
			t.Fatal(err)
		}
		decoded = append(decoded, e)
	}
	var names []string
	for _, n := range nexmark.QueryNames() {
		if batchref.Columns(n) != nil {
			names = append(names, n)
		}
	}
	if len(names) < 6 {
		t.Fatalf("only %v are in both weir and batchref", names)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := batchref.EvaluateAll(names, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			q, err := nexmark.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			cols := q.Columns
			if name == "q12" {
				cols = cols[:2] // batchref has per-bidder totals
			}
			if !slices.Equal(cols, batchref.Columns(name)) {
				t.Errorf("columns %v, batchref's %v", q.Columns, batchref.Columns(name))
			}
			w := canonical(t, want[name])
			if len(w) == 0 {
				t.Fatalf("batchref gives no rows: the input does not exercise %s", name)
			}
			var src weir.Source[nexmark.Event] = weir.SliceSource(decoded)
			if name == names[0] {
				src = file.JSONLines[nexmark.Event]([]string{path})
			}
			fromFile := totals(t, name, runQuery(t, q, src, 1))
			if d := diff(canonical(t, fromFile), w); d != "" {
				t.Errorf("parallelism 1 over the file: %s", d)
			}
			c := cfg
			c.Splits = 2
			generated := totals(t, name, runQuery(t, q, nexmark.Source(c), 2))
			// weir writes a row the same way every time: the same rows
			// as the first run need not be canonicalized again.
			slices.Sort(fromFile)
			slices.Sort(generated)
			if slices.Equal(generated, fromFile) {
				return
			}
			g := canonical(t, generated)
			if name == "q18" {
				// which of a pair's bids tied on dateTime arrives last
				// depends on the two splits' interleaving (in Flink too)
				g, w = q18Ties(t, g, decoded), q18Ties(t, w, decoded)
			}
			if d := diff(g, w); d != "" {
				t.Errorf("parallelism 2, generated in 2 splits: %s", d)
			}
		})
	}
}

// totals turns q12's rows, bids per bidder per processing-time window, into
// the total per bidder that batchref computes (the windows depend on the
// clock; their sum per bidder does not). Other queries' rows pass.
func totals(t *testing.T, name string, rows []string) []string {
	t.Helper()
	if name != "q12" {
		return rows
	}
	sum := map[int64]int64{}
	for _, r := range rows {
		var w struct {
			Bidder, BidCount, StartTime, EndTime int64
		}
		if err := json.Unmarshal([]byte(strings.ReplaceAll(r, "bid_count", "bidcount")), &w); err != nil {
			t.Fatalf("q12 row %s: %v", r, err)
		}
		if w.BidCount < 1 || w.EndTime-w.StartTime != nexmark.Q12Window.Milliseconds() || w.StartTime%10_000 != 0 {
			t.Fatalf("q12 row %s: not a 10 s window with bids", r)
		}
		sum[w.Bidder] += w.BidCount
	}
	out := make([]string, 0, len(sum))
	for b, n := range sum {
		out = append(out, fmt.Sprintf(`{"bidder":%d,"bid_count":%d}`, b, n))
	}
	return out
}

// TestCanonicalRow: canonicalRow is encoding/json's canonical form.
func TestCanonicalRow(t *testing.T) {
	for _, r := range []string{
		`{"b":1,"a":"x"}`,
		` { "price" : 908.000 , "name":"a\\b\"c<>&\u2028\u00e9\t\u0001\/" ,"n":null,"t":true,"f":false,"neg":-1.5e3} `,
		`{"s":"caf\u00e9 Ã© \ud83d\ude00","e":""}`,
		`{"x":{"y":1},"a":[1,2]}`,
		`{"a":1,"a":2}`,
		`{}`,
		"{\"s\":\"a\xffb<\",\"c\":\"\\b\\f\\u001f\"}", // invalid UTF-8, control characters
	} {
		want, err := canonicalJSON(r)
		if err != nil {
			t.Fatalf("%s: %v", r, err)
		}
		if got, err := canonicalRow(r); err != nil || got != want {
			t.Errorf("canonicalRow(%s) = %s, %v; encoding/json: %s", r, got, err, want)
		}
	}
	if _, err := canonicalRow(`{"a":`); err == nil {
		t.Error("canonicalRow accepts bad JSON")
	}
}

// q18Ties checks that q18's rows are bids of events and returns their
// auction, bidder and datetime, sorted: what q18 computes whatever the
// order of arrival of a pair's bids tied on dateTime (the last to arrive
// is the answer, as in Flink's deduplication keeping the last row).
func q18Ties(t *testing.T, rows []string, events []nexmark.Event) []string {
	t.Helper()
	bids := map[nexmark.Bid]bool{}
	for i := range events {
		if events[i].Type == nexmark.BidEvent {
			bids[events[i].Bid] = true
		}
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		var b struct {
			Auction, Bidder, Price, DateTime int64
			Channel, URL, Extra              string
		}
		if err := json.Unmarshal([]byte(r), &b); err != nil {
			t.Fatalf("q18 row %s: %v", r, err)
		}
		if !bids[nexmark.Bid{Auction: b.Auction, Bidder: b.Bidder, Price: b.Price, Channel: b.Channel, URL: b.URL, DateTime: b.DateTime, Extra: b.Extra}] {
			t.Errorf("q18 row %s is not a bid of the input", r)
		}
		out[i] = fmt.Sprintf(`{"auction":%d,"bidder":%d,"datetime":%d}`, b.Auction, b.Bidder, b.DateTime)
	}
	slices.Sort(out)
	return out
}
