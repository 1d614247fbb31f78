package engine

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/weirstream/weir/internal/metrics"
	"github.com/weirstream/weir/internal/watermark"
)

// Sliding windows on state (window_state_sliding.go) emit what overOp
// emits: the same records with the same timestamps and watermarks, late
// events dropped alike, those of different keys at one watermark maybe in
// another order; restored from a checkpoint taken at any batch, they go on
// as uninterrupted. The state keeps one timer per key.
func TestSlidingStateWindowMatchesHeap(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		for _, rng := range []int64{1, 50, 200} {
			runSlidingAgainstHeap(t, fmt.Sprintf("seed %d range %d", seed, rng), seed, rng)
		}
	}
}

func runSlidingAgainstHeap(t *testing.T, name string, seed uint64, rng int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 11))
	type step struct {
		kv      [][2]int64
		ts      []int64
		wm      int64
		barrier bool
	}
	var steps []step
	var maxTS int64
	for i := 0; i < 60; i++ {
		var s step
		for j := r.IntN(12); j > 0; j-- {
			ts := maxTS + r.Int64N(40) - 25
			if r.IntN(10) == 0 {
				ts -= 100 // late
			}
			maxTS = max(maxTS, ts)
			s.kv = append(s.kv, [2]int64{r.Int64N(6), r.Int64N(100)})
			s.ts = append(s.ts, ts)
		}
		s.wm = maxTS - 20 - r.Int64N(20)
		s.barrier = r.IntN(6) == 0
		steps = append(steps, s)
	}
	input := func(i int, wm int64) *batch[keyed[int64, int64]] {
		s := steps[i]
		b := newBatch[keyed[int64, int64]](len(s.kv))
		for j, p := range s.kv {
			b.add(keyed[int64, int64]{hash: uint64(p[0]) * 0x9E3779B97F4A7C15, key: p[0], val: p[1]}, s.ts[j], wm)
		}
		b.watermark = max(s.wm, wm)
		return b
	}
	end := func() *batch[keyed[int64, int64]] {
		b := newBatch[keyed[int64, int64]](1)
		b.watermark = watermark.Max
		return b
	}
	agg := Sum(func(v int64) int64 { return v })
	heap := func() []string {
		sink := &resultLog{}
		op := &overOp[int64, int64, int64, int64]{
			winOut: winOut[int64, int64, WindowResult[int64, int64]]{out: sink, ob: newBatch[WindowResult[int64, int64]](5),
				batchSize: 5, m: &metrics.Operator{}, sentWM: watermark.Min},
			rng: rng, agg: agg, info: opInfo{maxP: 16},
		}
		op.init()
		for i := range steps {
			if err := op.push(input(i, op.wm)); err != nil {
				t.Fatal(err)
			}
		}
		if err := op.push(end()); err != nil {
			t.Fatal(err)
		}
		return sink.lines
	}
	var clock int64
	newOp := func() (*processOp[int64, int64, WindowResult[int64, int64]], *resultLog) {
		sink := &resultLog{}
		out := &stateWindowOut[int64, int64, WindowResult[int64, int64]]{out: sink}
		fn := &slidingStateWindow[int64, int64, int64, int64]{stateWindowBase: stateWindowBase[int64, int64, int64, int64]{
			w: Sliding(time.Duration(rng) * time.Millisecond), agg: agg, out: out}}
		return openTestStateOp(t, fn, out, &clock), sink
	}
	timers := 0
	onState := func(restoreAt int) []string {
		op, sink := newOp()
		var lines []string
		for i := range steps {
			if i == restoreAt {
				lines = append(lines, sink.lines...)
				op = snapshotRestore(t, op, func() *processOp[int64, int64, WindowResult[int64, int64]] {
					var o *processOp[int64, int64, WindowResult[int64, int64]]
					o, sink = newOp()
					return o
				})
			}
			if err := op.push(input(i, op.wm)); err != nil {
				t.Fatal(err)
			}
			timers = max(timers, op.event.Len())
		}
		if err := op.push(end()); err != nil {
			t.Fatal(err)
		}
		return append(lines, sink.lines...)
	}
	records := func(lines []string) []string {
		var rs []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "batch ") {
				rs = append(rs, l)
			}
		}
		slices.Sort(rs)
		return rs
	}
	want := records(heap())
	if len(want) < 50 {
		t.Fatalf("%s: only %d records", name, len(want))
	}
	got := records(onState(-1))
	if !slices.Equal(got, want) {
		t.Fatalf("%s: on state:\n%s\nheap:\n%s", name, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if timers > 6 {
		t.Fatalf("%s: %d timers pending at once for 6 keys", name, timers)
	}
	for at := range steps {
		if steps[at].barrier {
			if restored := records(onState(at)); !slices.Equal(restored, got) {
				t.Fatalf("%s: restored at step %d:\n%s\nuninterrupted:\n%s", name, at, strings.Join(restored, "\n"), strings.Join(got, "\n"))
			}
		}
	}
}
