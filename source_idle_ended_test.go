package weir_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/weirstream/weir"
)

// A split that ended next to an idle one does not send the watermark to the
// end of time: the idle split may still produce, and when it does its
// records are on time. Here "fast" ends at 1090 while "slow" pauses after
// 1090 and turns idle (the test's clock passes the idleness); slow's later
// records (1100..2990) are ahead of the watermark (1089), so none is late.
// Counting the ended split as Max made all 190 of them late.
func TestEndedSplitNextToIdleSplit(t *testing.T) {
	var clock atomic.Int64
	clock.Store(1_000_000)
	now := func() time.Time { return time.UnixMilli(clock.Load()) }
	slow := evs(1000, 3000, 10) // 200 events: 10 before the pause, 190 after
	src := newPauseSource(slow, 10, [][]ev{evs(1000, 1100, 10)}, true)
	ws := weir.BoundedOutOfOrderness(0, func(e ev) time.Time { return time.UnixMilli(e.TS) }).WithIdleness(time.Second)
	late, out, wait := runPause(t, src, ws, weir.Clock(now))
	<-src.paused  // slow read its first 10 records
	<-src.fastEnd // fast read all it has and ends
	clock.Add(2000)
	// After the release, slow's next read is empty: the source judges it
	// idle (2s > 1s on the job's clock), with fast ended, then reads on.
	close(src.release)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(late.Items()); n > 0 {
		l := late.Items()[0]
		t.Fatalf("%d events late, the first at %d behind watermark %d", n, l.Timestamp.UnixMilli(), l.Watermark.UnixMilli())
	}
	if got, want := sum(out.Items()), int64(200+10); got != want {
		t.Fatalf("counted %d, want %d", got, want)
	}
}
