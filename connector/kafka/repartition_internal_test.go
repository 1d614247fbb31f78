package kafka

import (
	"math"
	"testing"
)

// TestRepartitionKeyGroups: the key groups RepartitionKeyGroups gives a
// partition are exactly those the writer sends there (kg*n/max).
func TestRepartitionKeyGroups(t *testing.T) {
	for _, maxP := range []int{1, 7, 128, 1000} {
		for n := 1; n <= min(maxP, 13); n++ {
			next := 0
			for p := range n {
				start, end := RepartitionKeyGroups(p, n, maxP)
				if start != next {
					t.Fatalf("max %d, n %d, partition %d starts at %d, want %d", maxP, n, p, start, next)
				}
				for kg := start; kg < end; kg++ {
					if kg*n/maxP != p {
						t.Fatalf("max %d, n %d: key group %d goes to %d, not %d", maxP, n, kg, kg*n/maxP, p)
					}
				}
				next = end
			}
			if next != maxP {
				t.Fatalf("max %d, n %d: partitions cover %d key groups", maxP, n, next)
			}
		}
	}
}

// TestWatermarkTracker: a repartition partition's watermark is none until
// every expected upstream task was seen, then the minimum, never going
// back; it survives the offset metadata.
func TestWatermarkTracker(t *testing.T) {
	tr := newTracker(3, "")
	if tr.observe("in/0", 100) || tr.observe("in/1", 50) || tr.wm != math.MinInt64 {
		t.Fatalf("two of three tasks seen: watermark %d, want none", tr.wm)
	}
	if !tr.observe("in/2", 70) || tr.wm != 50 {
		t.Fatalf("all seen: watermark %d, want 50", tr.wm)
	}
	if tr.observe("in/1", 40) || tr.wm != 50 {
		t.Fatalf("an older marker moved the watermark to %d", tr.wm)
	}
	if !tr.observe("in/1", math.MaxInt64) || tr.wm != 70 {
		t.Fatalf("in/1 ended: watermark %d, want 70", tr.wm)
	}
	meta := tr.encode()
	back := newTracker(3, meta)
	if back.wm != 70 || back.encode() != meta {
		t.Fatalf("restored from %q: watermark %d, encoding %q", meta, back.wm, back.encode())
	}
	for _, bad := range []string{"", "other", metaPrefix + "x", metaPrefix + "a=b,c"} {
		if tr := newTracker(1, bad); tr.wm != math.MinInt64 || len(tr.seen) != 0 {
			t.Errorf("metadata %q: tracker %+v, want empty", bad, tr)
		}
	}
	ended := newTracker(2, metaPrefix+"in/0=9223372036854775807,in/1=9223372036854775807")
	if ended.wm != math.MaxInt64 {
		t.Fatalf("every task ended: watermark %d", ended.wm)
	}
}
