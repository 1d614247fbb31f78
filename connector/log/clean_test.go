package wlog

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// Compaction against a naive model: the latest record per key, tombstones
// kept before their delay and dropped after it, offsets unchanged.
func TestCompactionKeepsLatestPerKey(t *testing.T) {
	tp := newTopic(t, TopicConfig{Compact: true, SegmentBytes: 2 << 10, TombstoneRetention: time.Hour})
	w := openWriter(t, tp)
	rng := rand.New(rand.NewPCG(1, 2))
	latest := map[string]Record{}
	for i := 0; i < 3000; {
		var recs []Record
		for range 1 + rng.IntN(4) {
			r := Record{Timestamp: int64(i), Key: fmt.Appendf(nil, "k%d", rng.IntN(50)), Value: fmt.Appendf(nil, "v%d", i)}
			if rng.IntN(10) == 0 {
				r.Value = nil // tombstone
			}
			recs = append(recs, r)
			i++
		}
		if _, err := w.Append(recs); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			latest[string(r.Key)] = r
		}
	}
	if err := w.Roll(); err != nil {
		t.Fatal(err)
	}
	check := func(now time.Time, wantTombstones bool) {
		t.Helper()
		st, err := w.Clean(now)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]Record{}
		prev := int64(-1)
		for _, r := range readAll(t, tp, Earliest()) {
			if _, dup := got[string(r.Key)]; dup {
				t.Fatalf("key %s twice (offsets %d and %d)", r.Key, got[string(r.Key)].Offset, r.Offset)
			}
			if r.Offset <= prev {
				t.Fatalf("offsets out of order")
			}
			prev = r.Offset
			got[string(r.Key)] = r
		}
		want := maps.Clone(latest)
		if !wantTombstones {
			maps.DeleteFunc(want, func(_ string, r Record) bool { return r.Value == nil })
		}
		if len(got) != len(want) {
			t.Fatalf("%d keys after compaction, want %d (stats %+v)", len(got), len(want), st)
		}
		for k, r := range want {
			g := got[k]
			if g.Offset != r.Offset || string(g.Value) != string(r.Value) || (g.Value == nil) != (r.Value == nil) {
				t.Fatalf("key %s: got %d %q, want %d %q", k, g.Offset, g.Value, r.Offset, r.Value)
			}
		}
	}
	check(time.Now(), true)
	check(time.Now().Add(2*time.Hour), false)
	// Time search still works over the compacted, gapped log.
	last := readAll(t, tp, Earliest())
	mid := last[len(last)/2]
	if got := readAll(t, tp, AtTimestamp(mid.Timestamp)); len(got) == 0 || got[0].Offset != mid.Offset {
		t.Fatalf("time search after compaction: %v", offsets(got)[:1])
	}
	// The writer goes on appending after the compacted segments.
	next := w.NextOffset()
	appendN(t, w, 3000, 2, 2)
	if n := w.NextOffset(); n != next+2 {
		t.Fatalf("next offset %d", n)
	}
}

func TestRetention(t *testing.T) {
	t.Run("time", func(t *testing.T) {
		tp := newTopic(t, TopicConfig{SegmentBytes: 1 << 10, Retention: time.Hour})
		w := openWriter(t, tp)
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := range 300 {
			r := rec(i, 10)
			r.Timestamp = base.Add(time.Duration(i) * time.Minute).UnixMilli()
			if _, err := w.Append([]Record{r}); err != nil {
				t.Fatal(err)
			}
		}
		before, _ := listSegments(tp.partDir(0))
		now := base.Add(200 * time.Minute) // records < 140 minutes are expired
		st, err := w.Clean(now)
		if err != nil || st.DeletedSegments == 0 {
			t.Fatal(st, err)
		}
		after, _ := listSegments(tp.partDir(0))
		if len(after) != len(before)-st.DeletedSegments {
			t.Fatalf("segments %v -> %v", before, after)
		}
		got := readAll(t, tp, Earliest())
		first := got[0].Offset
		if first > 140 || first == 0 {
			t.Fatalf("first offset after retention %d", first)
		}
		// Only whole segments whose newest record is expired went: the
		// segment before the first one left held a record of >= 140 min.
		if got[len(got)-1].Offset != 299 || int64(len(got)) != 300-first {
			t.Fatalf("records %d..%d", first, got[len(got)-1].Offset)
		}
		if p, _ := w.Clean(now.Add(1000 * time.Hour)); len(readAll(t, tp, Earliest())) == 0 || p.DeletedSegments != len(after)-1 {
			t.Fatalf("the active segment must stay: %+v", p)
		}
	})
	t.Run("size", func(t *testing.T) {
		tp := newTopic(t, TopicConfig{SegmentBytes: 1 << 10, RetentionBytes: 4 << 10})
		w := openWriter(t, tp)
		appendN(t, w, 0, 500, 1)
		if _, err := w.Clean(time.Now()); err != nil {
			t.Fatal(err)
		}
		bases, _ := listSegments(tp.partDir(0))
		var total int64
		for _, b := range bases {
			st, _ := os.Stat(logPath(tp.partDir(0), b))
			total += st.Size()
		}
		first, _ := os.Stat(logPath(tp.partDir(0), bases[0]))
		if total < 4<<10 || total-first.Size() >= 4<<10 {
			t.Fatalf("total %d bytes in %d segments", total, len(bases))
		}
		got := readAll(t, tp, Earliest())
		if got[0].Offset != bases[0] || got[len(got)-1].Offset != 499 {
			t.Fatalf("read %d..%d", got[0].Offset, got[len(got)-1].Offset)
		}
		// A reader positioned before the retention point skips ahead.
		if got := readAll(t, tp, AtOffset(0)); got[0].Offset != bases[0] {
			t.Fatalf("AtOffset(0) starts at %d", got[0].Offset)
		}
	})
}
