package engine

import (
	"testing"

	"github.com/weirstream/weir/internal/hashtable"
)

// A new bucket's table is made for the keys its window will hold, also
// while the job warms up, before any window has fired: a key set that keeps
// growing (new keys every millisecond, as q5's auctions) does not double
// the table of a bucket opened once the oldest open window has seen half of
// itself, and a key set complete from the start (the same keys every
// 10 ms) never gets a table more than twice the size it needs.
func TestAlignedBucketSizedWhileWarmingUp(t *testing.T) {
	const t0, end = 400_500, 430_000 // the job starts inside windows
	type seen struct {
		from, firstCap, maxCap, len int
	}
	run := func(keysAt func(ms int64, add func(key int64))) map[*bucket[int64, int64]]*seen {
		op, _ := newTestAlignedOp(false)
		got := map[*bucket[int64, int64]]*seen{}
		r := &keyed[int64, int64]{val: 1}
		for ms := int64(t0); ms < end; ms++ {
			if wm := ms - 4000; wm > op.wm {
				for _, bk := range op.buckets {
					if bk.end-1 <= wm {
						got[bk].len = bk.tab.Len()
					}
				}
				if err := op.advance(wm); err != nil {
					t.Fatal(err)
				}
			}
			keysAt(ms, func(key int64) {
				r.key, r.hash = key, uint64(key)*0x9E3779B97F4A7C15
				op.assign(r, ms)
			})
			for _, bk := range op.buckets {
				s := got[bk]
				if s == nil {
					s = &seen{from: int(ms), firstCap: bk.tab.Cap()}
					got[bk] = s
				}
				s.maxCap = max(s.maxCap, bk.tab.Cap())
			}
		}
		return got
	}

	growing := run(func(ms int64, add func(int64)) {
		for j := range int64(3) {
			add(ms*3 + j)
		}
	})
	checked := 0
	for bk, s := range growing {
		if s.len == 0 || s.from < t0+5000 {
			continue // still open at the end, or opened before half a window was seen
		}
		checked++
		if s.maxCap != s.firstCap {
			t.Errorf("growing keys: window [%d, %d) opened at %d with %d slots grew to %d (%d keys)",
				bk.start, bk.end, s.from, s.firstCap, s.maxCap, s.len)
		}
	}
	if checked < 5 {
		t.Fatalf("only %d fired windows were opened after the warm-up", checked)
	}

	steady := run(func(ms int64, add func(int64)) {
		if ms%10 == 0 {
			for k := range int64(500) {
				add(k)
			}
		}
	})
	for bk, s := range steady {
		if s.len == 0 {
			continue
		}
		need := hashtable.New[int64, int64](s.len).Cap()
		if s.maxCap > 2*need {
			t.Errorf("steady keys: window [%d, %d) with %d keys has %d slots, more than twice the %d it needs",
				bk.start, bk.end, s.len, s.maxCap, need)
		}
	}
}
